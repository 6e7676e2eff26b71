use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use shoal_sidecar_core::{Backend, BackendError, EmbedBatch, Embeddings, Generator, ModelFamily};

use crate::config::DEFAULT_MAX_INPUT_TOKENS;
use crate::generate::RemoteGenerator;
use crate::http::Http;
use crate::{OpenAiConfig, OpenAiError, RemoteFamily, api, embed};

const MODELS: &str = "/v1/models";
/// A model list is a few hundred bytes per model.
const MAX_MODELS_BYTES: usize = 4 * 1024 * 1024;
const COMPLETIONS: &str = "/v1/completions";

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ModelCard>,
}

#[derive(Deserialize)]
struct ModelCard {
    id: String,
    /// vLLM and SGLang report the context length here.
    #[serde(default)]
    max_model_len: Option<u64>,
}

/// A model served by a remote OpenAI-compatible server. Its weights live there, so it holds
/// no memory here; batches become HTTP requests from the model's thread.
pub struct OpenAiBackend {
    config: OpenAiConfig,
    http: Arc<Http>,
    dim: usize,
    max_input_tokens: usize,
    generator: Option<RemoteGenerator>,
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("config", &self.config)
            .field("dim", &self.dim)
            .field("max_input_tokens", &self.max_input_tokens)
            .finish()
    }
}

impl OpenAiBackend {
    /// Checks that the remote serves `config.remote_model` and that it answers as its family
    /// says: an embedding model embeds one probe input (which tells its width), a generator
    /// completes one token.
    pub fn load(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        let http = Arc::new(Http {
            endpoint: config.endpoint.clone(),
            api_key: config.api_key.clone(),
            timeout: config.timeout,
        });
        let models: ModelList = api::call(&http, MODELS, None, MAX_MODELS_BYTES)?;
        let card = models
            .data
            .iter()
            .find(|m| m.id == config.remote_model)
            .ok_or_else(|| {
                let served: Vec<&str> = models.data.iter().map(|m| m.id.as_str()).collect();
                OpenAiError::UnknownModel {
                    model: config.remote_model.clone(),
                    served: served.join(", "),
                }
            })?;
        let max_input_tokens = config
            .max_input_tokens
            .or(card.max_model_len.and_then(|m| usize::try_from(m).ok()))
            .unwrap_or(DEFAULT_MAX_INPUT_TOKENS as usize);
        let (dim, generator) = match config.family {
            RemoteFamily::Embedding => {
                let (dim, _, _) = embed::embed(&http, &config.remote_model, &["probe"], None)?;
                (dim, None)
            }
            RemoteFamily::Generate => {
                let probe = json!({
                    "model": config.remote_model,
                    "prompt": "Hello",
                    "max_tokens": 1,
                    "temperature": 0,
                });
                let _: serde_json::Value = api::call(&http, COMPLETIONS, Some(&probe), 1 << 20)?;
                let generator = RemoteGenerator::new(
                    Arc::clone(&http),
                    config.remote_model.clone(),
                    max_input_tokens,
                );
                // OpenAI's API does not tell the vocabulary size, which the protocol reports
                // as a generator's `dim`.
                (0, Some(generator))
            }
        };
        Ok(Self {
            config,
            http,
            dim,
            max_input_tokens,
            generator,
        })
    }

    /// The settings it was loaded with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }
}

impl Backend for OpenAiBackend {
    fn family(&self) -> ModelFamily {
        match self.config.family {
            RemoteFamily::Embedding => ModelFamily::Embedding,
            RemoteFamily::Generate => ModelFamily::Generate,
        }
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn max_input_tokens(&self) -> usize {
        self.max_input_tokens
    }

    fn memory_bytes(&self) -> u64 {
        0
    }

    fn health(&self) -> Result<(), BackendError> {
        api::call::<ModelList>(&self.http, MODELS, None, MAX_MODELS_BYTES)
            .map(drop)
            .map_err(|e| BackendError::Inference(format!("remote {}: {e}", self.http.endpoint)))
    }

    fn embed(&self, batch: &EmbedBatch) -> Result<Embeddings, BackendError> {
        if self.generator.is_some() {
            return Err(BackendError::unsupported(self.family(), "embed"));
        }
        embed::run(
            &self.http,
            &self.config.remote_model,
            self.dim,
            self.max_input_tokens,
            batch,
        )
    }

    fn generator(&self) -> Option<&dyn Generator> {
        self.generator.as_ref().map(|g| g as &dyn Generator)
    }
}
