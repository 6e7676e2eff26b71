use std::path::PathBuf;

/// Why simulated parameters were refused or a simulated model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// `profile` names no calibration profile.
    #[error("unknown calibration profile `{name}`; known profiles: {known}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Every known profile, comma-separated.
        known: String,
    },
    /// A parameter is out of range.
    #[error("`sim.{field}` {reason}")]
    Invalid {
        /// The parameter's wire name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The model path is not a readable directory.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// `tokenizer.json` exists but could not be loaded or configured.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
}

impl SimError {
    /// Whether the error is the caller's (bad parameters) rather than the environment's.
    pub fn is_bad_parameters(&self) -> bool {
        matches!(
            self,
            SimError::UnknownProfile { .. } | SimError::Invalid { .. }
        )
    }
}
