use crate::{
    BackendError, EmbedBatch, Embeddings, Entities, Generator, ModelFamily, PairBatch,
    Probabilities, Scores,
};

/// One loaded model on one device.
///
/// Implementations are driven from a single dedicated thread, so methods take `&self` and may
/// block for as long as the computation takes; they are deliberately not `async`. The trait does
/// not require `Sync`: only the thread that runs a backend ever touches it. The sidecar loads
/// `Backend + Send` values, built on a loading thread and then moved to that thread.
pub trait Backend {
    /// Which [`ModelFamily`] the model belongs to.
    fn family(&self) -> ModelFamily;

    /// Width of one output row.
    fn dim(&self) -> usize;

    /// Longest input, in tokens including special tokens, the model accepts.
    fn max_input_tokens(&self) -> usize;

    /// Bytes of weights held on the device.
    fn memory_bytes(&self) -> u64;

    /// Runs a minimal forward pass to prove the model and device still work.
    fn health(&self) -> Result<(), BackendError>;

    /// Embeds every input of `batch`, returning rows in input order.
    fn embed(&self, batch: &EmbedBatch) -> Result<Embeddings, BackendError>;

    /// The label names of a `classify` or `extract` model, in id order; empty otherwise.
    fn labels(&self) -> &[String] {
        &[]
    }

    /// Scores every (query, document) pair of `batch` with a cross-encoder, in pair order.
    fn score(&self, batch: &PairBatch) -> Result<Scores, BackendError> {
        let _ = batch;
        Err(BackendError::unsupported(self.family(), "score"))
    }

    /// Label probabilities for every input of `batch`, rows in input order.
    fn classify(&self, batch: &EmbedBatch) -> Result<Probabilities, BackendError> {
        let _ = batch;
        Err(BackendError::unsupported(self.family(), "classify"))
    }

    /// The entities in every input of `batch`, lists in input order.
    fn extract(&self, batch: &EmbedBatch) -> Result<Entities, BackendError> {
        let _ = batch;
        Err(BackendError::unsupported(self.family(), "extract"))
    }

    /// The model's [`Generator`], for [`ModelFamily::Generate`] models; `None` (the default)
    /// for every model that does not generate text.
    fn generator(&self) -> Option<&dyn Generator> {
        None
    }
}
