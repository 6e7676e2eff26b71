//! `score`, `classify` and `extract`: the encoder's hidden states through a task head, then
//! the activation the checkpoint's config implies (see [`crate::task`]).

use candle_core::Tensor;
use candle_nn::VarBuilder;
use shoal_sidecar_core::{
    BackendError, EmbedBatch, Entities, ModelFamily, PairBatch, Probabilities, Scores,
};

use crate::LoadError;
use crate::encoder_runner::{EncoderRunner, Tokenized};
use crate::entities::{TaggedToken, aggregate};
use crate::models::bert_heads::{SequenceClassifier, TokenClassifier};
use crate::task::{Activation, Task};

/// What follows the encoder.
pub(crate) enum Head {
    /// Pooling and optional normalisation: a sentence-embedding model.
    Pooled,
    /// `*ForSequenceClassification`.
    Sequence {
        classifier: SequenceClassifier,
        labels: Vec<String>,
        activation: Activation,
    },
    /// `*ForTokenClassification`.
    Tokens {
        classifier: TokenClassifier,
        labels: Vec<String>,
    },
}

impl Head {
    /// Builds the head `task` names from the checkpoint behind `vb`.
    pub(crate) fn load(task: Task, vb: VarBuilder, hidden_size: usize) -> Result<Self, LoadError> {
        Ok(match task {
            Task::Embedding => Head::Pooled,
            Task::Sequence { labels, activation } => Head::Sequence {
                classifier: SequenceClassifier::load(vb, hidden_size, labels.len())?,
                labels,
                activation,
            },
            Task::Tokens { labels } => Head::Tokens {
                classifier: TokenClassifier::load(vb, hidden_size, labels.len())?,
                labels,
            },
        })
    }

    pub(crate) fn family(&self) -> ModelFamily {
        match self {
            Head::Pooled => ModelFamily::Embedding,
            Head::Sequence { labels, .. } if labels.len() == 1 => ModelFamily::Rerank,
            Head::Sequence { .. } => ModelFamily::Classify,
            Head::Tokens { .. } => ModelFamily::Extract,
        }
    }

    pub(crate) fn labels(&self) -> &[String] {
        match self {
            Head::Pooled => &[],
            Head::Sequence { labels, .. } | Head::Tokens { labels, .. } => labels,
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Index and value of the largest element; the first on ties, as numpy's `argmax`.
fn argmax(row: &[f32]) -> (usize, f32) {
    row.iter()
        .copied()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, v)| {
            if v > best.1 { (i, v) } else { best }
        })
}

impl Head {
    fn refuse(&self, op: &str) -> BackendError {
        BackendError::unsupported(self.family(), op)
    }

    /// Per-row head outputs, in row order: `[labels]` logits for a sequence head, or
    /// `[tokens × labels]` logits (real tokens only) for a token head.
    fn logits(
        &self,
        runner: &EncoderRunner,
        rows: &[Tokenized],
    ) -> Result<Vec<Vec<f32>>, BackendError> {
        let mut out = vec![Vec::new(); rows.len()];
        runner.passes(rows, |chunk, hidden, _mask| {
            let logits: Tensor = match self {
                Head::Sequence { classifier, .. } => classifier.forward(&hidden)?,
                Head::Tokens { classifier, .. } => classifier.forward(&hidden)?,
                Head::Pooled => {
                    return Err(candle_core::Error::Msg(
                        "an embedding model has no task head".into(),
                    ));
                }
            };
            let labels = self.labels().len();
            let seq_len = hidden.dim(1)?;
            let flat = logits.flatten_all()?.to_vec1::<f32>()?;
            let per_row = flat.len() / chunk.len();
            for (k, &i) in chunk.iter().enumerate() {
                let row = &flat[k * per_row..(k + 1) * per_row];
                out[i] = match self {
                    Head::Tokens { .. } => {
                        debug_assert_eq!(per_row, seq_len * labels);
                        row[..rows[i].ids.len() * labels].to_vec()
                    }
                    _ => row.to_vec(),
                };
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Relevance of every (query, document) pair of `batch`, in pair order.
    pub(crate) fn score(
        &self,
        runner: &EncoderRunner,
        batch: &PairBatch,
    ) -> Result<Scores, BackendError> {
        // The relevance is the sigmoid of a one-label head's logit, or the probability of the
        // last label of a two-label softmax head (the "relevant" class of such rerankers).
        let relevance: fn(&mut Vec<f32>) -> f32 = match self {
            Head::Sequence { labels, .. } if labels.len() == 1 => |row| sigmoid(row[0]),
            Head::Sequence {
                labels,
                activation: Activation::Softmax,
                ..
            } if labels.len() == 2 => |row| {
                softmax(row);
                row[1]
            },
            _ => return Err(self.refuse("score")),
        };
        let (rows, truncated) = runner.pairs(batch)?;
        let values = self
            .logits(runner, &rows)?
            .iter_mut()
            .map(relevance)
            .collect();
        Ok(Scores {
            values,
            tokens: rows.iter().map(|r| r.ids.len() as u32).collect(),
            truncated,
        })
    }

    /// Label probabilities for every input of `batch`, rows in input order.
    pub(crate) fn classify(
        &self,
        runner: &EncoderRunner,
        batch: &EmbedBatch,
    ) -> Result<Probabilities, BackendError> {
        let Head::Sequence {
            labels, activation, ..
        } = self
        else {
            return Err(self.refuse("classify"));
        };
        if self.family() != ModelFamily::Classify {
            return Err(self.refuse("classify"));
        }
        let (rows, truncated) = runner.singles(batch, false)?;
        let mut values = Vec::with_capacity(rows.len() * labels.len());
        for mut row in self.logits(runner, &rows)? {
            match activation {
                Activation::Softmax => softmax(&mut row),
                Activation::Sigmoid => row.iter_mut().for_each(|v| *v = sigmoid(*v)),
            }
            values.extend(row);
        }
        Ok(Probabilities {
            labels: labels.len(),
            values,
            tokens: rows.iter().map(|r| r.ids.len() as u32).collect(),
            truncated,
        })
    }

    /// The entities in every input of `batch`, lists in input order.
    pub(crate) fn extract(
        &self,
        runner: &EncoderRunner,
        batch: &EmbedBatch,
    ) -> Result<Entities, BackendError> {
        let Head::Tokens { labels, .. } = self else {
            return Err(self.refuse("extract"));
        };
        // Entities are spans of the text: there is none to point into for token ids.
        let texts = batch
            .inputs
            .iter()
            .enumerate()
            .map(|(index, input)| {
                input.as_text().ok_or(BackendError::TextRequired {
                    index,
                    op: "extract",
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (rows, truncated) = runner.singles(batch, true)?;
        let logits = self.logits(runner, &rows)?;
        let width = labels.len();
        let entities = rows
            .iter()
            .zip(logits)
            .zip(texts)
            .map(|((row, mut logits), text)| {
                let tagged: Vec<TaggedToken> = logits
                    .chunks_exact_mut(width)
                    .enumerate()
                    .filter(|(t, _)| row.special[*t] == 0)
                    .map(|(t, scores)| {
                        softmax(scores);
                        let (label, score) = argmax(scores);
                        let (start, end) = row.offsets[t];
                        TaggedToken {
                            start,
                            end,
                            label,
                            score,
                        }
                    })
                    .collect();
                aggregate(text, &tagged, labels)
            })
            .collect();
        Ok(Entities {
            entities,
            tokens: rows.iter().map(|r| r.ids.len() as u32).collect(),
            truncated,
        })
    }

    /// Runs the head on `probe` and returns every output, for the health check.
    pub(crate) fn probe(
        &self,
        runner: &EncoderRunner,
        probe: &EmbedBatch,
    ) -> Result<Vec<f32>, BackendError> {
        let (rows, _) = runner.singles(probe, false)?;
        Ok(self.logits(runner, &rows)?.concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activations_match_their_definitions() {
        let mut row = vec![1.0f32, 2.0, 3.0];
        softmax(&mut row);
        let want = [0.090_030_57, 0.244_728_48, 0.665_240_94];
        for (got, want) in row.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{row:?}");
        }
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-7);
        assert!(sigmoid(-100.0) >= 0.0 && sigmoid(100.0) <= 1.0);
        assert_eq!(argmax(&[0.2, 0.5, 0.5, 0.1]), (1, 0.5));
    }
}
