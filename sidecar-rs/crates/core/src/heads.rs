//! Batches and results of the non-generative task heads: cross-encoder relevance (`score`),
//! sequence classification (`classify`) and token classification (`extract`).
//!
//! `classify` and `extract` take the same inputs as `embed`, so they reuse [`crate::EmbedBatch`];
//! only `score` needs its own batch, of (query, document) pairs.

/// Inputs for one call to [`crate::Backend::score`]: pair `i` is `(queries[i], documents[i])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairBatch {
    /// First segment of each pair.
    pub queries: Vec<String>,
    /// Second segment of each pair; as many as `queries`.
    pub documents: Vec<String>,
    /// As for [`crate::EmbedBatch::truncate`]; a pair is cut from its longer side first.
    pub truncate: bool,
}

/// One relevance score per pair, from [`crate::Backend::score`].
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// One value per pair, in pair order.
    pub values: Vec<f32>,
    /// Tokens per pair after truncation, special tokens included.
    pub tokens: Vec<u32>,
    /// Whether each pair was cut to the model's limit.
    pub truncated: Vec<bool>,
}

/// Label probabilities per input, from [`crate::Backend::classify`].
#[derive(Debug, Clone, PartialEq)]
pub struct Probabilities {
    /// Number of labels, the width of each row.
    pub labels: usize,
    /// `count() * labels` values, row-major.
    pub values: Vec<f32>,
    /// Tokens per input after truncation, special tokens included.
    pub tokens: Vec<u32>,
    /// Whether each input was cut to the model's limit.
    pub truncated: Vec<bool>,
}

/// One span of an input that a token-classification model tagged.
#[derive(Debug, Clone, PartialEq)]
pub struct Entity {
    /// The entity type, without its `B-`/`I-` prefix.
    pub label: String,
    /// `input[start..end]`, counted in Unicode code points.
    pub text: String,
    /// Offset of the first code point.
    pub start: usize,
    /// Offset one past the last code point.
    pub end: usize,
    /// Mean over the entity's tokens of each token's winning probability.
    pub score: f32,
}

/// The entities found in each input, from [`crate::Backend::extract`].
#[derive(Debug, Clone, PartialEq)]
pub struct Entities {
    /// One list per input, in input order; each list in text order.
    pub entities: Vec<Vec<Entity>>,
    /// Tokens per input after truncation, special tokens included.
    pub tokens: Vec<u32>,
    /// Whether each input was cut to the model's limit.
    pub truncated: Vec<bool>,
}

/// Sum of token counts, as recorded in stats and spans.
fn total(tokens: &[u32]) -> u64 {
    tokens.iter().map(|&t| u64::from(t)).sum()
}

impl Scores {
    /// Number of pairs.
    pub fn count(&self) -> usize {
        self.tokens.len()
    }

    /// Total tokens over all pairs.
    pub fn total_tokens(&self) -> u64 {
        total(&self.tokens)
    }
}

impl Probabilities {
    /// Number of rows.
    pub fn count(&self) -> usize {
        self.tokens.len()
    }

    /// Total tokens over all rows.
    pub fn total_tokens(&self) -> u64 {
        total(&self.tokens)
    }

    /// Row `index`, or `None` past the end.
    pub fn row(&self, index: usize) -> Option<&[f32]> {
        let start = index.checked_mul(self.labels)?;
        self.values.get(start..start.checked_add(self.labels)?)
    }
}

impl Entities {
    /// Number of inputs.
    pub fn count(&self) -> usize {
        self.tokens.len()
    }

    /// Total tokens over all inputs.
    pub fn total_tokens(&self) -> u64 {
        total(&self.tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probability_rows_are_row_major() {
        let p = Probabilities {
            labels: 3,
            values: vec![0.1, 0.2, 0.7, 0.3, 0.3, 0.4],
            tokens: vec![4, 6],
            truncated: vec![false, false],
        };
        assert_eq!(p.count(), 2);
        assert_eq!(p.total_tokens(), 10);
        assert_eq!(p.row(1), Some(&[0.3, 0.3, 0.4][..]));
        assert_eq!(p.row(2), None);
    }
}
