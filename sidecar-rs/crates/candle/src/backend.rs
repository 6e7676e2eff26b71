use std::path::Path;
use std::sync::atomic::Ordering;

use candle_core::{DType, Device};
use shoal_sidecar_core::{
    Backend, BackendError, EmbedBatch, Embeddings, Entities, Input, ModelFamily, PairBatch,
    Probabilities, Scores,
};

use crate::encoder_runner::EncoderRunner;
use crate::heads::Head;
use crate::models::Architecture;
use crate::pooling::l2_normalize;
use crate::sentence_transformers::read_json;
use crate::task::Task;
use crate::weights::CountedSafetensors;
use crate::{LoadError, Pooling, Precision, SentenceTransformersConfig};

/// An encoder model on a Candle device: tokenizer, encoder, then either pooling and
/// normalisation (a sentence-embedding model) or a task head (cross-encoder, sequence or token
/// classifier), as the checkpoint's `config.json` says.
pub struct CandleBackend {
    runner: EncoderRunner,
    head: Head,
    pooling: Pooling,
    normalize: bool,
    dim: usize,
    memory_bytes: u64,
}

impl std::fmt::Debug for CandleBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CandleBackend")
            .field("device", self.runner.device())
            .field("family", &self.head.family())
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("dim", &self.dim)
            .field("max_input_tokens", &self.runner.max_input_tokens())
            .field("memory_bytes", &self.memory_bytes)
            .finish_non_exhaustive()
    }
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
        let runner = EncoderRunner::new(dir, encoder, device, max_input_tokens)?;

        Ok(Self {
            runner,
            head,
            pooling: st.pooling,
            normalize: st.normalize,
            dim: shape.hidden_size,
            memory_bytes: loaded.load(Ordering::Relaxed),
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
        self.runner.max_input_tokens()
    }

    fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    fn health(&self) -> Result<(), BackendError> {
        let probe = EmbedBatch {
            inputs: vec![Input::Text(String::new())],
            truncate: true,
        };
        let values = match self.family() {
            ModelFamily::Embedding => self.embed(&probe)?.values,
            _ => self.head.probe(&self.runner, &probe)?,
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
        let (rows, truncated) = self.runner.singles(batch, false)?;
        let tokens: Vec<u32> = rows.iter().map(|r| r.ids.len() as u32).collect();

        let mut values = vec![0f32; rows.len() * self.dim];
        self.runner.passes(&rows, |chunk, hidden, mask| {
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
        self.head.score(&self.runner, batch)
    }

    fn classify(&self, batch: &EmbedBatch) -> Result<Probabilities, BackendError> {
        self.head.classify(&self.runner, batch)
    }

    fn extract(&self, batch: &EmbedBatch) -> Result<Entities, BackendError> {
        self.head.extract(&self.runner, batch)
    }
}
