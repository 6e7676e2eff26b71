use std::path::Path;
use std::time::{Duration, Instant};

use shoal_sidecar_core::text::{INPUT_BYTES_PER_TOKEN, prefix_at_char_boundary};
use shoal_sidecar_core::{
    Backend, BackendError, EmbedBatch, Embeddings, Input, ModelFamily, check_token_ids,
};
use tokenizers::PostProcessor;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::device::shared_device;
use crate::tokens::estimate_tokens;
use crate::{CostModel, SimError, SimParams, pseudo_embedding, pseudo_embedding_of_ids};

/// A simulated model: real token counts (or estimates), pseudo-embeddings, and a sleep as long
/// as the [`CostModel`] predicts in place of the forward pass.
pub struct SimBackend {
    params: SimParams,
    /// The model's own tokenizer, configured as Candle configures it, when its directory has
    /// one; otherwise token counts are [`estimate_tokens`].
    tokenizer: Option<Tokenizer>,
}

impl std::fmt::Debug for SimBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBackend")
            .field("params", &self.params)
            .field("tokenizer", &self.tokenizer.is_some())
            .finish()
    }
}

impl SimBackend {
    /// A simulated model with `params`. With `dir`, which must be a directory, its
    /// `tokenizer.json` (when present) counts tokens, so padding and truncation are the real
    /// model's; nothing else in it is read.
    pub fn load(dir: Option<&Path>, params: SimParams) -> Result<Self, SimError> {
        let tokenizer = match dir {
            None => None,
            Some(dir) => {
                let meta = std::fs::metadata(dir).map_err(|source| SimError::Io {
                    path: dir.to_owned(),
                    source,
                })?;
                if !meta.is_dir() {
                    return Err(SimError::Io {
                        path: dir.to_owned(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotADirectory,
                            "a model path must be a directory",
                        ),
                    });
                }
                let path = dir.join("tokenizer.json");
                if path.is_file() {
                    Some(configured_tokenizer(&path, params.max_input_tokens)?)
                } else {
                    None
                }
            }
        };
        // A real load copies weights to the device for a while; the model's thread is as busy.
        if params.load_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(params.load_ms));
        }
        Ok(Self { params, tokenizer })
    }

    /// The parameters this model was loaded with.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// Whether token counts come from a real tokenizer rather than the estimate.
    pub fn has_tokenizer(&self) -> bool {
        self.tokenizer.is_some()
    }

    /// The cost model batches are charged by.
    pub fn cost(&self) -> &CostModel {
        &self.params.cost
    }

    /// Tokens per input after truncation and whether each was cut, exactly as the Candle
    /// backend counts them when a tokenizer is loaded. Token ids count as themselves plus the
    /// special tokens the tokenizer adds around an input (none without a tokenizer).
    fn count(&self, batch: &EmbedBatch) -> Result<(Vec<u32>, Vec<bool>), BackendError> {
        let max = self.params.max_input_tokens;
        let max_bytes = max.saturating_mul(INPUT_BYTES_PER_TOKEN);
        let mut texts = Vec::new();
        let mut byte_cut = Vec::new();
        for input in &batch.inputs {
            if let Input::Text(text) = input {
                let kept = prefix_at_char_boundary(text, max_bytes);
                byte_cut.push(kept.len() < text.len());
                texts.push(kept);
            }
        }
        // (tokens before truncation to `max`, cut already) per text, in order.
        let mut text_counts = match &self.tokenizer {
            Some(tokenizer) => tokenizer
                .encode_batch_fast(texts, true)
                .map_err(|e| BackendError::Tokenizer(e.to_string()))?
                .iter()
                .zip(byte_cut)
                .map(|(encoding, cut)| {
                    (
                        encoding.len(),
                        cut || !encoding.get_overflowing().is_empty(),
                    )
                })
                .collect::<Vec<_>>(),
            None => texts
                .iter()
                .zip(byte_cut)
                .map(|(text, cut)| (estimate_tokens(text), cut))
                .collect(),
        }
        .into_iter();
        let mut tokens = Vec::with_capacity(batch.inputs.len());
        let mut truncated = Vec::with_capacity(batch.inputs.len());
        for (index, input) in batch.inputs.iter().enumerate() {
            let (count, cut) = match input {
                Input::Text(_) => text_counts.next().unwrap_or((0, false)),
                Input::Ids(ids) => (ids.len() + self.check_ids(index, ids)?, false),
            };
            let cut = cut || count > max;
            if cut && !batch.truncate {
                return Err(BackendError::InputTooLong { index, max });
            }
            tokens.push(u32::try_from(count.min(max)).unwrap_or(u32::MAX));
            truncated.push(cut);
        }
        Ok((tokens, truncated))
    }

    /// Checks input `index`'s ids against the tokenizer's vocabulary and returns how many
    /// special tokens it adds around one input; 0 without a tokenizer.
    fn check_ids(&self, index: usize, ids: &[u32]) -> Result<usize, BackendError> {
        let Some(tokenizer) = &self.tokenizer else {
            return Ok(0);
        };
        check_token_ids(index, ids, tokenizer.get_vocab_size(true))?;
        Ok(tokenizer
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(false)))
    }
}

/// Loads `tokenizer.json` the way the Candle backend does: no fixed padding, truncation to the
/// model's limit, so counts are each input's true length.
fn configured_tokenizer(path: &Path, max_input_tokens: usize) -> Result<Tokenizer, SimError> {
    let mut tokenizer = Tokenizer::from_file(path)
        .map_err(|e| SimError::Tokenizer(format!("{}: {e}", path.display())))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_input_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| SimError::Tokenizer(e.to_string()))?;
    Ok(tokenizer)
}

/// Sleeps until `started + cost`: tokenising already spent part of the budget, as it would in
/// a real batch, so the whole call takes the predicted time and never less.
fn wait_until(started: Instant, cost: Duration) {
    let remaining = cost.saturating_sub(started.elapsed());
    if !remaining.is_zero() {
        std::thread::sleep(remaining);
    }
}

impl Backend for SimBackend {
    fn family(&self) -> ModelFamily {
        ModelFamily::Embedding
    }

    fn dim(&self) -> usize {
        self.params.dim
    }

    fn max_input_tokens(&self) -> usize {
        self.params.max_input_tokens
    }

    fn memory_bytes(&self) -> u64 {
        self.params.memory_bytes
    }

    fn health(&self) -> Result<(), BackendError> {
        Ok(())
    }

    fn embed(&self, batch: &EmbedBatch) -> Result<Embeddings, BackendError> {
        let started = Instant::now();
        if batch.inputs.is_empty() {
            return Err(BackendError::EmptyBatch);
        }
        let (tokens, truncated) = self.count(batch)?;
        let longest = tokens.iter().copied().max().unwrap_or(0) as usize;
        let dim = self.params.dim;
        let mut values = Vec::with_capacity(batch.inputs.len() * dim);
        for input in &batch.inputs {
            values.extend(match input {
                Input::Text(text) => pseudo_embedding(text, dim),
                Input::Ids(ids) => pseudo_embedding_of_ids(ids, dim),
            });
        }
        let cost = self.params.cost.batch_cost(tokens.len(), longest);
        match shared_device() {
            Some(device) => {
                device.run(started, cost);
            }
            None => wait_until(started, cost),
        }
        Ok(Embeddings {
            dim,
            values,
            tokens,
            truncated,
        })
    }
}
