use std::path::Path;
use std::sync::atomic::Ordering;

use candle_core::{DType, Device, Tensor};
use shoal_sidecar_core::text::{INPUT_BYTES_PER_TOKEN, prefix_at_char_boundary};
use shoal_sidecar_core::{
    Backend, BackendError, EmbedBatch, Embeddings, Entities, ModelFamily, PairBatch, Probabilities,
    Scores,
};
use tokenizers::{
    EncodeInput, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy,
};

use crate::models::{Architecture, Encoder};
use crate::pooling::l2_normalize;
use crate::sentence_transformers::read_json;
use crate::task::Task;
use crate::weights::CountedSafetensors;
use crate::{LoadError, Pooling, Precision, SentenceTransformersConfig};

/// Most padded tokens (rows × longest row) one forward pass may hold. Attention scores grow with
/// rows × heads × seq², so a large batch of long inputs is cut into several passes rather than
/// allocating gigabytes at once.
const TOKENS_PER_FORWARD: usize = 8192;

mod heads;

use heads::Head;

/// An encoder model on a Candle device: tokenizer, encoder, then either pooling and
/// normalisation (a sentence-embedding model) or a task head (cross-encoder, sequence or token
/// classifier), as the checkpoint's `config.json` says.
pub struct CandleBackend {
    encoder: Box<dyn Encoder>,
    head: Head,
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
            .field("family", &self.head.family())
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
    /// Code-point offsets of each token into its input; only filled for `extract`.
    offsets: Vec<(usize, usize)>,
    /// 1 for special tokens (`[CLS]`, `[SEP]`); only filled for `extract`.
    special: Vec<u32>,
}

impl CandleBackend {
    /// Loads `dir` (`config.json`, `tokenizer.json`, `model.safetensors` and the optional
    /// sentence-transformers files) onto `device`, the encoder computing in `precision` and
    /// the task head, if any, in f32.
    pub fn load(dir: &Path, device: &Device, precision: Precision) -> Result<Self, LoadError> {
        let config: serde_json::Value = read_json(&dir.join("config.json"))?;
        let architecture = Architecture::detect(&config)?;
        let task = Task::detect(&config)?;
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
        let (vb, loaded) = CountedSafetensors::var_builder(&weights, precision.dtype(), device)?;
        let (encoder, shape) = architecture.build(config, vb.clone())?;
        let head = Head::load(task, vb.set_dtype(DType::F32), shape.hidden_size)?;

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
            head,
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

    /// Runs the encoder over `rows` (all no longer than `seq_len`, padded to it) and returns
    /// the hidden states `[rows, seq_len, hidden]` with the attention mask `[rows, seq_len]`.
    fn encode(&self, rows: &[&Tokenized], seq_len: usize) -> candle_core::Result<(Tensor, Tensor)> {
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
        let lengths: Vec<usize> = rows.iter().map(|row| row.ids.len()).collect();

        // Pooling and heads run in f32 whatever the encoder computed in.
        let hidden = self
            .encoder
            .forward(&ids, &type_ids, &lengths)?
            .to_dtype(DType::F32)?;
        Ok((hidden, mask))
    }

    /// Cuts every input at [`INPUT_BYTES_PER_TOKEN`] bytes per allowed token, returning the
    /// kept prefix and whether anything was cut.
    fn cap<'a>(&self, input: &'a str) -> (&'a str, bool) {
        let max_bytes = self.max_input_tokens.saturating_mul(INPUT_BYTES_PER_TOKEN);
        let kept = prefix_at_char_boundary(input, max_bytes);
        (kept, kept.len() < input.len())
    }

    fn tokenize(&self, batch: &EmbedBatch) -> Result<(Vec<Tokenized>, Vec<bool>), BackendError> {
        let (inputs, cut): (Vec<&str>, Vec<bool>) =
            batch.inputs.iter().map(|input| self.cap(input)).unzip();
        self.tokenize_inputs(inputs, cut, batch.truncate, false)
    }

    /// Tokenises `inputs` (single texts or pairs), already capped; `cut` says which were.
    /// With `char_offsets`, each row also carries its tokens' code-point offsets and special
    /// token mask.
    fn tokenize_inputs<'s, E>(
        &self,
        inputs: Vec<E>,
        cut: Vec<bool>,
        truncate: bool,
        char_offsets: bool,
    ) -> Result<(Vec<Tokenized>, Vec<bool>), BackendError>
    where
        E: Into<EncodeInput<'s>> + Send,
    {
        let encodings = if char_offsets {
            self.tokenizer.encode_batch_char_offsets(inputs, true)
        } else {
            self.tokenizer.encode_batch_fast(inputs, true)
        }
        .map_err(|e| BackendError::Tokenizer(e.to_string()))?;
        let mut rows = Vec::with_capacity(encodings.len());
        let mut truncated = Vec::with_capacity(encodings.len());
        for (index, encoding) in encodings.into_iter().enumerate() {
            // With stride 0, truncation moves the cut-off tail into `overflowing`; nothing else
            // fills it, so a non-empty list means exactly "this input was cut".
            let was_cut = cut[index] || !encoding.get_overflowing().is_empty();
            if was_cut && !truncate {
                return Err(BackendError::InputTooLong {
                    index,
                    max: self.max_input_tokens,
                });
            }
            truncated.push(was_cut);
            let (offsets, special) = if char_offsets {
                (
                    encoding.get_offsets().to_vec(),
                    encoding.get_special_tokens_mask().to_vec(),
                )
            } else {
                (Vec::new(), Vec::new())
            };
            rows.push(Tokenized {
                ids: encoding.get_ids().to_vec(),
                type_ids: encoding.get_type_ids().to_vec(),
                offsets,
                special,
            });
        }
        Ok((rows, truncated))
    }

    /// Runs `rows` through the encoder in forward passes of at most [`TOKENS_PER_FORWARD`]
    /// padded tokens, longest rows first so that each pass pads its rows to a similar length.
    /// `each` gets the indices of a pass's rows, in pass order, with their hidden states and
    /// attention mask.
    fn passes(
        &self,
        rows: &[Tokenized],
        mut each: impl FnMut(&[usize], Tensor, Tensor) -> candle_core::Result<()>,
    ) -> Result<(), BackendError> {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(rows[i].ids.len()));
        let mut start = 0;
        while start < order.len() {
            let seq_len = rows[order[start]].ids.len().max(1);
            let take = (TOKENS_PER_FORWARD / seq_len)
                .max(1)
                .min(order.len() - start);
            let chunk = &order[start..start + take];
            let chunk_rows: Vec<&Tokenized> = chunk.iter().map(|&i| &rows[i]).collect();
            self.encode(&chunk_rows, seq_len)
                .and_then(|(hidden, mask)| each(chunk, hidden, mask))
                .map_err(|e| BackendError::Inference(e.to_string()))?;
            start += take;
        }
        Ok(())
    }
}

impl Backend for CandleBackend {
    fn family(&self) -> ModelFamily {
        self.head.family()
    }

    fn dim(&self) -> usize {
        match self.head.labels().len() {
            0 => self.dim,
            labels => labels,
        }
    }

    fn labels(&self) -> &[String] {
        self.head.labels()
    }

    fn max_input_tokens(&self) -> usize {
        self.max_input_tokens
    }

    fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    fn health(&self) -> Result<(), BackendError> {
        let probe = EmbedBatch {
            inputs: vec![String::new()],
            truncate: true,
        };
        let values = match self.family() {
            ModelFamily::Embedding => self.embed(&probe)?.values,
            _ => self.head_probe(&probe)?,
        };
        if values.iter().all(|v| v.is_finite()) {
            Ok(())
        } else {
            Err(BackendError::Inference(
                "the health probe produced non-finite values".into(),
            ))
        }
    }

    fn embed(&self, batch: &EmbedBatch) -> Result<Embeddings, BackendError> {
        if self.family() != ModelFamily::Embedding {
            return Err(BackendError::unsupported(self.family(), "embed"));
        }
        if batch.inputs.is_empty() {
            return Err(BackendError::EmptyBatch);
        }
        let (rows, truncated) = self.tokenize(batch)?;
        let tokens: Vec<u32> = rows.iter().map(|r| r.ids.len() as u32).collect();

        let mut values = vec![0f32; rows.len() * self.dim];
        self.passes(&rows, |chunk, hidden, mask| {
            let pooled = self.pooling.pool(&hidden, &mask)?;
            let pooled = if self.normalize {
                l2_normalize(&pooled)?
            } else {
                pooled
            };
            let pooled = pooled.flatten_all()?.to_vec1::<f32>()?;
            for (k, &i) in chunk.iter().enumerate() {
                values[i * self.dim..(i + 1) * self.dim]
                    .copy_from_slice(&pooled[k * self.dim..(k + 1) * self.dim]);
            }
            Ok(())
        })?;

        Ok(Embeddings {
            dim: self.dim,
            values,
            tokens,
            truncated,
        })
    }

    fn score(&self, batch: &PairBatch) -> Result<Scores, BackendError> {
        self.score_pairs(batch)
    }

    fn classify(&self, batch: &EmbedBatch) -> Result<Probabilities, BackendError> {
        self.classify_inputs(batch)
    }

    fn extract(&self, batch: &EmbedBatch) -> Result<Entities, BackendError> {
        self.extract_entities(batch)
    }
}
