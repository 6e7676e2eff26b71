/// What kind of answers a resident model gives; reported to clients as `family`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelFamily {
    /// Sentence embeddings: one pooled vector per input.
    Embedding,
    /// Cross-encoder relevance: one score per (query, document) pair.
    Rerank,
    /// Sequence classification: label probabilities per input.
    Classify,
    /// Token classification: labelled spans (entities) per input.
    Extract,
    /// Text generation through [`crate::Backend::generator`].
    Generate,
}

impl ModelFamily {
    /// The wire name used by the sidecar protocol.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelFamily::Embedding => "embedding",
            ModelFamily::Generate => "generate",
            ModelFamily::Rerank => "rerank",
            ModelFamily::Classify => "classify",
            ModelFamily::Extract => "extract",
        }
    }
}

impl std::fmt::Display for ModelFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
