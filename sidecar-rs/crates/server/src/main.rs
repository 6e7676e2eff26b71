//! `shoal-sidecar`: flags and environment into [`shoal_sidecar::Options`], then
//! [`shoal_sidecar::run`].

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
