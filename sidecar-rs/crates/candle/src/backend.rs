use std::path::Path;
use std::sync::atomic::Ordering;

use candle_core::{DType, Device, Tensor};
use shoal_sidecar_core::text::{INPUT_BYTES_PER_TOKEN, prefix_at_char_boundary};
use shoal_sidecar_core::{Backend, BackendError, EmbedBatch, Embeddings, ModelFamily};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::models::{Architecture, Encoder};
use crate::pooling::l2_normalize;
use crate::sentence_transformers::read_json;
use crate::weights::CountedSafetensors;
use crate::{LoadError, Pooling, SentenceTransformersConfig};

/// Most padded tokens (rows × longest row) one forward pass may hold. Attention scores grow with
/// rows × heads × seq², so a large batch of long inputs is cut into several passes rather than
/// allocating gigabytes at once.
const TOKENS_PER_FORWARD: usize = 8192;

/// A sentence-embedding model on a Candle device: tokenizer, encoder, pooling, normalisation.
pub struct CandleBackend {
    encoder: Box<dyn Encoder>,
    tokenizer: Tokenizer,
    device: Device,
    pooling: Pooling,
    normalize: bool,
    dim: usize,
    max_input_tokens: usize,
    memory_bytes: u64,
    pad_id: u32,
}

impl std::fmt::Debug for CandleBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CandleBackend")
            .field("device", &self.device)
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("dim", &self.dim)
            .field("max_input_tokens", &self.max_input_tokens)
            .field("memory_bytes", &self.memory_bytes)
            .finish_non_exhaustive()
    }
}

/// A row of the batch after tokenisation.
struct Tokenized {
    ids: Vec<u32>,
    type_ids: Vec<u32>,
}

impl CandleBackend {
    /// Loads `dir` (`config.json`, `tokenizer.json`, `model.safetensors` and the optional
    /// sentence-transformers files) onto `device`, with f32 weights.
    pub fn load(dir: &Path, device: &Device) -> Result<Self, LoadError> {
        let config: serde_json::Value = read_json(&dir.join("config.json"))?;
        let architecture = Architecture::detect(&config)?;
        let st = SentenceTransformersConfig::read(dir)?;

        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(LoadError::Io {
                path: weights,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "weights load from safetensors only",
                ),
            });
        }
        let (vb, loaded) = CountedSafetensors::var_builder(&weights, DType::F32, device)?;
        let (encoder, shape) = architecture.build(config, vb)?;

        let max_input_tokens = st
            .max_seq_length
            .unwrap_or(shape.max_position_embeddings)
            .min(shape.max_position_embeddings);
        let tokenizer_path = dir.join("tokenizer.json");
        if !tokenizer_path.is_file() {
            return Err(LoadError::Io {
                path: tokenizer_path,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no tokenizer.json"),
            });
        }
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| LoadError::Tokenizer(format!("{}: {e}", tokenizer_path.display())))?;
        let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
        // tokenizer.json often carries the exporter's own truncation and fixed padding (128 for
        // MiniLM); the model's real limit comes from sentence-transformers, and padding is done
        // here per forward pass so that every row keeps its true length.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_input_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;

        Ok(Self {
            encoder,
            tokenizer,
            device: device.clone(),
            pooling: st.pooling,
            normalize: st.normalize,
            dim: shape.hidden_size,
            max_input_tokens,
            memory_bytes: loaded.load(Ordering::Relaxed),
            pad_id,
        })
    }

    /// The pooling this model was configured with.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether outputs are L2-normalised.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// Runs one forward pass over `rows` (all no longer than `seq_len`) and returns their pooled
    /// vectors, flattened row-major.
    fn forward(&self, rows: &[&Tokenized], seq_len: usize) -> candle_core::Result<Vec<f32>> {
        let n = rows.len();
        let mut ids = Vec::with_capacity(n * seq_len);
        let mut type_ids = Vec::with_capacity(n * seq_len);
        let mut mask = Vec::with_capacity(n * seq_len);
        for row in rows {
            let pad = seq_len - row.ids.len();
            ids.extend_from_slice(&row.ids);
            ids.extend(std::iter::repeat_n(self.pad_id, pad));
            type_ids.extend_from_slice(&row.type_ids);
            type_ids.extend(std::iter::repeat_n(0, pad));
            mask.extend(std::iter::repeat_n(1f32, row.ids.len()));
            mask.extend(std::iter::repeat_n(0f32, pad));
        }
        let ids = Tensor::from_vec(ids, (n, seq_len), &self.device)?;
        let type_ids = Tensor::from_vec(type_ids, (n, seq_len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, seq_len), &self.device)?;

        let hidden = self.encoder.forward(&ids, &type_ids, &mask)?;
        let pooled = self.pooling.pool(&hidden, &mask)?;
        let pooled = if self.normalize {
            l2_normalize(&pooled)?
        } else {
            pooled
        };
        pooled.flatten_all()?.to_vec1::<f32>()
    }

    fn tokenize(&self, batch: &EmbedBatch) -> Result<(Vec<Tokenized>, Vec<bool>), BackendError> {
        let max_bytes = self.max_input_tokens.saturating_mul(INPUT_BYTES_PER_TOKEN);
        let mut cut = Vec::with_capacity(batch.inputs.len());
        let inputs: Vec<&str> = batch
            .inputs
            .iter()
            .map(|input| {
                let kept = prefix_at_char_boundary(input, max_bytes);
                cut.push(kept.len() < input.len());
                kept
            })
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch_fast(inputs, true)
            .map_err(|e| BackendError::Tokenizer(e.to_string()))?;
        let mut rows = Vec::with_capacity(encodings.len());
        let mut truncated = Vec::with_capacity(encodings.len());
        for (index, encoding) in encodings.into_iter().enumerate() {
            // With stride 0, truncation moves the cut-off tail into `overflowing`; nothing else
            // fills it, so a non-empty list means exactly "this input was cut".
            let was_cut = cut[index] || !encoding.get_overflowing().is_empty();
            if was_cut && !batch.truncate {
                return Err(BackendError::InputTooLong {
                    index,
                    max: self.max_input_tokens,
                });
            }
            truncated.push(was_cut);
            rows.push(Tokenized {
                ids: encoding.get_ids().to_vec(),
                type_ids: encoding.get_type_ids().to_vec(),
            });
        }
        Ok((rows, truncated))
    }
}

impl Backend for CandleBackend {
    fn family(&self) -> ModelFamily {
        ModelFamily::Embedding
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_input_tokens(&self) -> usize {
        self.max_input_tokens
    }

    fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    fn health(&self) -> Result<(), BackendError> {
        let probe = self.embed(&EmbedBatch {
            inputs: vec![String::new()],
            truncate: true,
        })?;
        if probe.values.iter().all(|v| v.is_finite()) {
            Ok(())
        } else {
            Err(BackendError::Inference(
                "the health probe produced non-finite values".into(),
            ))
        }
    }

    fn embed(&self, batch: &EmbedBatch) -> Result<Embeddings, BackendError> {
        if batch.inputs.is_empty() {
            return Err(BackendError::EmptyBatch);
        }
        let (rows, truncated) = self.tokenize(batch)?;
        let tokens: Vec<u32> = rows.iter().map(|r| r.ids.len() as u32).collect();

        // Longest first, so that each forward pass pads its rows to a similar length.
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(rows[i].ids.len()));

        let mut values = vec![0f32; rows.len() * self.dim];
        let mut start = 0;
        while start < order.len() {
            let seq_len = rows[order[start]].ids.len().max(1);
            let take = (TOKENS_PER_FORWARD / seq_len)
                .max(1)
                .min(order.len() - start);
            let chunk = &order[start..start + take];
            let chunk_rows: Vec<&Tokenized> = chunk.iter().map(|&i| &rows[i]).collect();
            let pooled = self
                .forward(&chunk_rows, seq_len)
                .map_err(|e| BackendError::Inference(e.to_string()))?;
            for (k, &i) in chunk.iter().enumerate() {
                values[i * self.dim..(i + 1) * self.dim]
                    .copy_from_slice(&pooled[k * self.dim..(k + 1) * self.dim]);
            }
            start += take;
        }

        Ok(Embeddings {
            dim: self.dim,
            values,
            tokens,
            truncated,
        })
    }
}
