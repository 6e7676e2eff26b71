//! What one batch job asks of a model's backend, and the answer, already encoded for the
//! wire on the model thread so that the socket loop only copies bytes.

use shoal_sidecar_core::{Backend, BackendError, EmbedBatch, Entity, PairBatch};

/// The batch operations a model thread runs one at a time.
#[derive(Debug, Clone)]
pub(crate) enum Work {
    Embed(EmbedBatch),
    Score(PairBatch),
    Classify(EmbedBatch),
    Extract(EmbedBatch),
}

/// A finished batch, tensors as little-endian f32 bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    Embeddings {
        dim: usize,
        /// `count * dim` values, row-major.
        embeddings: Vec<u8>,
        tokens: Vec<u32>,
        truncated: Vec<bool>,
    },
    Scores {
        /// One value per pair.
        scores: Vec<u8>,
        tokens: Vec<u32>,
        truncated: Vec<bool>,
    },
    Probabilities {
        /// `count * labels` values, row-major.
        probabilities: Vec<u8>,
        tokens: Vec<u32>,
        truncated: Vec<bool>,
    },
    Entities {
        entities: Vec<Vec<Entity>>,
        tokens: Vec<u32>,
        truncated: Vec<bool>,
    },
}

fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl Work {
    /// The name of the compute span recorded for the batch.
    pub(crate) fn span_name(&self) -> &'static str {
        match self {
            Work::Embed(_) => "sidecar.embed",
            Work::Score(_) => "sidecar.score",
            Work::Classify(_) => "sidecar.classify",
            Work::Extract(_) => "sidecar.extract",
        }
    }

    /// Rows in the batch.
    pub(crate) fn len(&self) -> usize {
        match self {
            Work::Embed(b) | Work::Classify(b) | Work::Extract(b) => b.inputs.len(),
            Work::Score(b) => b.queries.len(),
        }
    }

    /// Runs the batch on `backend`; called on the model thread.
    pub(crate) fn run(&self, backend: &dyn Backend) -> Result<Answer, BackendError> {
        Ok(match self {
            Work::Embed(batch) => {
                let out = backend.embed(batch)?;
                Answer::Embeddings {
                    dim: out.dim,
                    embeddings: le_bytes(&out.values),
                    tokens: out.tokens,
                    truncated: out.truncated,
                }
            }
            Work::Score(batch) => {
                let out = backend.score(batch)?;
                Answer::Scores {
                    scores: le_bytes(&out.values),
                    tokens: out.tokens,
                    truncated: out.truncated,
                }
            }
            Work::Classify(batch) => {
                let out = backend.classify(batch)?;
                Answer::Probabilities {
                    probabilities: le_bytes(&out.values),
                    tokens: out.tokens,
                    truncated: out.truncated,
                }
            }
            Work::Extract(batch) => {
                let out = backend.extract(batch)?;
                Answer::Entities {
                    entities: out.entities,
                    tokens: out.tokens,
                    truncated: out.truncated,
                }
            }
        })
    }
}

impl Answer {
    /// Tokens per row after truncation.
    pub(crate) fn tokens(&self) -> &[u32] {
        match self {
            Answer::Embeddings { tokens, .. }
            | Answer::Scores { tokens, .. }
            | Answer::Probabilities { tokens, .. }
            | Answer::Entities { tokens, .. } => tokens,
        }
    }

    /// Rows answered.
    pub(crate) fn count(&self) -> usize {
        self.tokens().len()
    }

    /// Tokens over all rows, as counted in stats and spans.
    pub(crate) fn total_tokens(&self) -> u64 {
        self.tokens().iter().map(|&t| u64::from(t)).sum()
    }
}
