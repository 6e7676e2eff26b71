//! `shoal-sidecar`: flags and environment into [`shoal_sidecar::Options`], then
//! [`shoal_sidecar::run`].

use std::num::NonZeroUsize;
use std::process::ExitCode;

use clap::Parser;
use shoal_sidecar::telemetry::{Telemetry, TelemetryOptions};

/// Serves the models resident on one accelerator over a Unix socket.
#[derive(Debug, Parser)]
#[clap(name = "shoal-sidecar", version)]
struct Cli {
    #[clap(flatten)]
    options: shoal_sidecar::Options,
    #[clap(flatten)]
    telemetry: TelemetryOptions,
    /// Threads one batch's tensor operations are split across on the CPU (Candle reads it as
    /// `RAYON_NUM_THREADS`); unset, every core. A model loaded with several `threads` runs
    /// that many batches at once, so cores ÷ threads keeps them from sharing cores.
    #[clap(long, env = "SHOAL_SIDECAR_COMPUTE_THREADS")]
    compute_threads: Option<NonZeroUsize>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(threads) = cli.compute_threads {
        // SAFETY: no other thread exists yet to read the environment concurrently; Candle's
        // and rayon's pools start later and read it then.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", threads.to_string()) };
    }
    let telemetry = match Telemetry::init(&cli.telemetry) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            eprintln!("shoal-sidecar: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("sidecar-io")
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(shoal_sidecar::run(cli.options));
    // The span exporter runs on its own thread, not on the runtime, so flushing comes after.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    telemetry.shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "sidecar failed");
            eprintln!("shoal-sidecar: {e}");
            ExitCode::FAILURE
        }
    }
}
