use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use shoal_sidecar_core::DeviceSpec;

/// Everything [`crate::run`] needs; `main` fills it from flags and the environment, tests
/// build it with [`Options::new`].
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Path of the Unix socket to listen on. A stale socket file there is removed; a live one
    /// makes the sidecar refuse to start.
    #[clap(long, env = "SHOAL_SIDECAR_SOCKET")]
    pub socket: PathBuf,

    /// A model to load before accepting connections, as `name=dir`. Repeatable; in the
    /// environment, separate entries with commas.
    #[clap(
        long = "model",
        env = "SHOAL_SIDECAR_MODELS",
        value_delimiter = ',',
        value_name = "NAME=DIR"
    )]
    pub models: Vec<ModelArg>,

    /// Largest frame body accepted, in bytes. A longer length prefix is answered with
    /// `frame_too_large` and the connection is closed.
    #[clap(long, env = "SHOAL_SIDECAR_MAX_FRAME_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_frame_bytes: u32,

    /// Most inputs one `embed` request may carry.
    #[clap(long, env = "SHOAL_SIDECAR_MAX_BATCH_ITEMS", default_value_t = 1024)]
    pub max_batch_items: usize,

    /// Most requests one connection may have in flight; further frames wait unread, which
    /// pushes back on the client through the socket instead of growing the heap.
    #[clap(long, env = "SHOAL_SIDECAR_MAX_IN_FLIGHT", default_value_t = 1024)]
    pub max_in_flight: usize,

    /// Batches that may wait for one model's thread before senders are held back.
    #[clap(long, env = "SHOAL_SIDECAR_MODEL_QUEUE", default_value_t = 256)]
    pub model_queue: usize,

    /// Exit when stdin reaches end of file, so that a parent killed with SIGKILL never
    /// leaves an orphan sidecar holding the accelerator.
    #[clap(long, env = "SHOAL_SIDECAR_EXIT_ON_STDIN_EOF")]
    pub exit_on_stdin_eof: bool,

    /// Backend every `load` (and `--model`) uses unless it names one: `candle` computes, `sim`
    /// only sleeps as long as the calibrated cost model says (`minilm-l6-cpu` profile), so a
    /// whole sidecar can be simulated for scale tests. `health` then reports backend `sim`.
    #[clap(long, env = "SHOAL_SIDECAR_BACKEND", value_enum, default_value_t = BackendKind::Candle)]
    pub backend: BackendKind,

    /// How simulated models share the accelerator: `per-model` gives each its own timeline
    /// (models compute side by side), `shared` makes them take turns on one device, so packing
    /// more models on a sidecar adds no compute (docs/simulated-backend.md).
    #[clap(long, env = "SHOAL_SIDECAR_SIM_DEVICE", value_enum, default_value_t = SimDevice::PerModel)]
    pub sim_device: SimDevice,

    /// Accelerator to run on: `cpu`, `cuda` or `cuda:N` (CUDA needs the `cuda` build feature).
    #[clap(long, env = "SHOAL_SIDECAR_DEVICE", default_value = "cpu")]
    pub device: DeviceSpec,

    /// On SIGTERM/SIGINT, how long in-flight requests may take to finish before the sidecar
    /// exits anyway, in milliseconds.
    #[clap(
        long,
        env = "SHOAL_SIDECAR_SHUTDOWN_GRACE_MS",
        default_value_t = 30_000
    )]
    pub shutdown_grace_ms: u64,
}

impl Options {
    /// Defaults for everything but the socket path, as `main` would fill them.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Self {
            socket: socket.into(),
            models: Vec::new(),
            max_frame_bytes: 64 * 1024 * 1024,
            max_batch_items: 1024,
            max_in_flight: 1024,
            model_queue: 256,
            exit_on_stdin_eof: false,
            backend: BackendKind::Candle,
            sim_device: SimDevice::PerModel,
            device: DeviceSpec::Cpu,
            shutdown_grace_ms: 30_000,
        }
    }

    pub(crate) fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }
}

/// Which runtime a model is loaded on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BackendKind {
    /// Real compute with Candle on the sidecar's device.
    #[default]
    Candle,
    /// The simulated backend: a calibrated cost model, no compute.
    Sim,
    /// A remote OpenAI-compatible server. Only a `load` with its `openai` map can name it, so
    /// `--backend` does not offer it.
    #[value(skip)]
    Openai,
}

impl BackendKind {
    /// The wire spelling of `load`'s `backend` field.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Candle => "candle",
            BackendKind::Sim => "sim",
            BackendKind::Openai => "openai",
        }
    }

    /// The backend called `name` on the wire.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "candle" => Some(BackendKind::Candle),
            "sim" => Some(BackendKind::Sim),
            "openai" => Some(BackendKind::Openai),
            _ => None,
        }
    }
}

/// How the simulated models of one sidecar share its accelerator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SimDevice {
    /// Every model on a timeline of its own.
    #[default]
    PerModel,
    /// Every model's batches in turn on one device.
    Shared,
}

/// One `--model name=dir` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelArg {
    /// The name requests use.
    pub name: String,
    /// The model directory.
    pub dir: PathBuf,
}

impl FromStr for ModelArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('=') {
            Some((name, dir)) if !name.is_empty() && !dir.is_empty() => Ok(Self {
                name: name.to_owned(),
                dir: PathBuf::from(dir),
            }),
            _ => Err(format!("expected NAME=DIR, got `{s}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_args_need_a_name_and_a_dir() {
        assert_eq!(
            "minilm=/models/a=b".parse::<ModelArg>().unwrap(),
            ModelArg {
                name: "minilm".into(),
                dir: "/models/a=b".into()
            }
        );
        for bad in ["minilm", "=dir", "name=", ""] {
            assert!(bad.parse::<ModelArg>().is_err(), "{bad:?}");
        }
    }
}
