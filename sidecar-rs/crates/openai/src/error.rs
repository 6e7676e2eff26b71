/// Why the remote runtime could not be configured, reached or understood.
///
/// The server maps these to protocol codes in one place: [`OpenAiError::Config`] is the
/// caller's mistake (`bad_request`); anything else is `load_failed` while loading and an error
/// frame for the one request it hit afterwards.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenAiError {
    /// A load setting is missing, malformed or out of range.
    #[error("`openai.{field}` {reason}")]
    Config {
        /// The setting's wire name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// No TCP connection could be opened (refused, unreachable, name not resolved).
    #[error("cannot connect to {endpoint}: {reason}")]
    Connect {
        /// `host:port` of the remote.
        endpoint: String,
        /// What the OS said.
        reason: String,
    },
    /// The remote went silent for longer than `timeout_ms`.
    #[error("{endpoint} did not answer within {timeout_ms} ms")]
    Timeout {
        /// `host:port` of the remote.
        endpoint: String,
        /// The configured limit.
        timeout_ms: u64,
    },
    /// The connection failed after it was opened.
    #[error("talking to {endpoint}: {reason}")]
    Io {
        /// `host:port` of the remote.
        endpoint: String,
        /// What the OS said.
        reason: String,
    },
    /// The remote answered with a status other than 2xx.
    #[error("{path} answered HTTP {status}: {message}")]
    Status {
        /// The request path.
        path: String,
        /// The HTTP status code.
        status: u16,
        /// The remote's error message (OpenAI's `error.message` when present), shortened.
        message: String,
    },
    /// The remote does not list `remote_model` in `/v1/models`.
    #[error("the remote does not serve `{model}`; it serves: {served}")]
    UnknownModel {
        /// The name asked for.
        model: String,
        /// What `/v1/models` lists, comma-separated.
        served: String,
    },
    /// The remote's answer is not the HTTP, JSON or server-sent events it should be.
    #[error("{path}: malformed answer: {reason}")]
    Malformed {
        /// The request path.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl OpenAiError {
    pub(crate) fn config(field: &'static str, reason: impl Into<String>) -> Self {
        OpenAiError::Config {
            field,
            reason: reason.into(),
        }
    }

    pub(crate) fn malformed(path: &str, reason: impl Into<String>) -> Self {
        OpenAiError::Malformed {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }

    /// Whether the error is the caller's (bad settings) rather than the remote's.
    pub fn is_bad_settings(&self) -> bool {
        matches!(self, OpenAiError::Config { .. })
    }
}
