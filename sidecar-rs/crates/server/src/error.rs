//! The sidecar's errors and the one place where they become protocol error codes.

use shoal_sidecar_candle::LoadError;
use shoal_sidecar_core::BackendError;
use shoal_sidecar_openai::OpenAiError;
use shoal_sidecar_sim::SimError;

/// The protocol's `error.code` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The body is not a MessagePack map, or `id`/`op` are missing or mistyped.
    BadFrame,
    /// The length prefix is above `--max-frame-bytes`; the connection is closed.
    FrameTooLarge,
    /// `op` names no operation.
    UnknownOp,
    /// A field is missing, mistyped or out of range.
    BadRequest,
    /// `model` is not resident.
    ModelNotFound,
    /// `load` of a name that is resident or being loaded.
    ModelExists,
    /// The model directory (or an adapter's) could not be loaded.
    LoadFailed,
    /// A request names an adapter the model has not loaded.
    AdapterNotFound,
    /// `load_adapter` of a name the model already has.
    AdapterExists,
    /// `truncate: false` and an input is too long.
    InputTooLong,
    /// A bug; the message says what failed.
    Internal,
}

impl ErrorCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::UnknownOp => "unknown_op",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::ModelNotFound => "model_not_found",
            ErrorCode::ModelExists => "model_exists",
            ErrorCode::LoadFailed => "load_failed",
            ErrorCode::AdapterNotFound => "adapter_not_found",
            ErrorCode::AdapterExists => "adapter_exists",
            ErrorCode::InputTooLong => "input_too_long",
            ErrorCode::Internal => "internal",
        }
    }
}

/// An error answer: a code for the client's program and a message for its human.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ProtocolError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What exactly failed.
    pub message: String,
}

impl ProtocolError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    pub(crate) fn model_not_found(model: &str) -> Self {
        Self::new(
            ErrorCode::ModelNotFound,
            format!("model `{model}` is not resident"),
        )
    }
}

impl From<BackendError> for ProtocolError {
    fn from(e: BackendError) -> Self {
        let code = match e {
            BackendError::InputTooLong { .. } => ErrorCode::InputTooLong,
            BackendError::EmptyBatch
            | BackendError::Unsupported(_)
            | BackendError::MismatchedPairs { .. }
            | BackendError::UnknownTokenId { .. }
            | BackendError::TextRequired { .. } => ErrorCode::BadRequest,
            BackendError::Tokenizer(_) | BackendError::Inference(_) => ErrorCode::Internal,
            BackendError::AdapterNotFound(_) => ErrorCode::AdapterNotFound,
            BackendError::AdapterExists(_) => ErrorCode::AdapterExists,
            BackendError::InvalidAdapter(_) => ErrorCode::LoadFailed,
        };
        Self::new(code, e.to_string())
    }
}

impl From<LoadError> for ProtocolError {
    fn from(e: LoadError) -> Self {
        Self::new(ErrorCode::LoadFailed, e.to_string())
    }
}

impl From<OpenAiError> for ProtocolError {
    fn from(e: OpenAiError) -> Self {
        // Past decoding, an unreachable or misbehaving remote can only fail a load: requests
        // to a loaded model report it through `BackendError`.
        let code = if e.is_bad_settings() {
            ErrorCode::BadRequest
        } else {
            ErrorCode::LoadFailed
        };
        Self::new(code, e.to_string())
    }
}

impl From<SimError> for ProtocolError {
    fn from(e: SimError) -> Self {
        let code = if e.is_bad_parameters() {
            ErrorCode::BadRequest
        } else {
            ErrorCode::LoadFailed
        };
        Self::new(code, e.to_string())
    }
}

/// Why the sidecar could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Another process is accepting connections on the socket path.
    #[error("{} is a live socket: another sidecar is listening there", .0.display())]
    SocketInUse(std::path::PathBuf),
    /// Something that is not a socket occupies the socket path.
    #[error("{} exists and is not a socket; refusing to remove it", .0.display())]
    NotASocket(std::path::PathBuf),
    /// Binding or accepting failed.
    #[error("socket {}: {source}", path.display())]
    Socket {
        /// The socket path.
        path: std::path::PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The device could not be opened.
    #[error(transparent)]
    Device(LoadError),
    /// A `--model` could not be preloaded.
    #[error("preloading model `{name}`: {error}")]
    Preload {
        /// The model's name.
        name: String,
        /// Why it failed.
        error: ProtocolError,
    },
    /// Writing the ready line failed.
    #[error("writing the ready line: {0}")]
    Stdout(#[source] std::io::Error),
}
