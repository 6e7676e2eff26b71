/// Why a backend could not answer a batch. The server maps each variant to a protocol error
/// code in exactly one place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The batch had no inputs.
    #[error("the batch has no inputs")]
    EmptyBatch,
    /// `truncate` was off and an input is longer than the model accepts.
    #[error("input {index} is longer than the model's limit of {max} tokens")]
    InputTooLong {
        /// Position of the offending input in the batch.
        index: usize,
        /// The model's `max_input_tokens`, special tokens included.
        max: usize,
    },
    /// A token-id input holds an id the model's vocabulary does not have.
    #[error(
        "input {index}: token id {id} at {position} is outside the model's vocabulary of {vocab} ids"
    )]
    UnknownTokenId {
        /// Position of the offending input in the batch.
        index: usize,
        /// Position of the id in the input.
        position: usize,
        /// The id.
        id: u32,
        /// The vocabulary's size.
        vocab: usize,
    },
    /// The operation needs text and an input is token ids (entities point into the text).
    #[error("input {index} is token ids; `{op}` takes text")]
    TextRequired {
        /// Position of the offending input in the batch.
        index: usize,
        /// The operation.
        op: &'static str,
    },
    /// The tokenizer rejected an input.
    #[error("tokenization failed: {0}")]
    Tokenizer(String),
    /// The forward pass failed; a bug or a broken device.
    #[error("inference failed: {0}")]
    Inference(String),
    /// A pair batch whose two sides differ in length.
    #[error("{queries} queries but {documents} documents; pairs need one of each")]
    MismatchedPairs {
        /// Length of the first side.
        queries: usize,
        /// Length of the second side.
        documents: usize,
    },
    /// The model does not answer this operation (an embedding model asked to `score`).
    #[error("{0}")]
    Unsupported(String),
    /// A request names an adapter the model has not loaded.
    #[error("adapter `{0}` is not loaded")]
    AdapterNotFound(String),
    /// An adapter of this name is already loaded.
    #[error("adapter `{0}` is already loaded")]
    AdapterExists(String),
    /// The adapter's files do not fit the model, or ask for what is not supported.
    #[error("{0}")]
    InvalidAdapter(String),
}

impl BackendError {
    /// `op` asked of a model of `family` that does not answer it.
    pub fn unsupported(family: crate::ModelFamily, op: &str) -> Self {
        BackendError::Unsupported(format!("models of family `{family}` do not answer `{op}`"))
    }
}
