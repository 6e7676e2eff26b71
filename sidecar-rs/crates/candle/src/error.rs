use std::path::PathBuf;

/// Why a model directory could not become a [`crate::CandleBackend`].
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A required file is missing or unreadable.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A JSON config file does not parse into what it should hold.
    #[error("{} is not a valid config: {source}", path.display())]
    Config {
        /// The file that failed.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The checkpoint asks for something this runtime does not run.
    #[error("unsupported model: {0}")]
    Unsupported(String),
    /// `tokenizer.json` could not be loaded or configured.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The requested device is not available in this build or on this machine.
    #[error("device {device}: {reason}")]
    Device {
        /// The device as requested, e.g. `cuda:0`.
        device: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A LoRA adapter does not fit its base model or asks for options not supported.
    #[error("adapter: {0}")]
    Adapter(String),
    /// Weights are missing, of the wrong shape, or not valid safetensors.
    #[error("weights: {0}")]
    Weights(#[from] candle_core::Error),
}
