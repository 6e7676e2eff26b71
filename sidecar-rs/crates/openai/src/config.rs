//! The `openai` map of a `load` request, validated into an [`OpenAiConfig`].

use std::time::Duration;

use crate::OpenAiError;
use crate::endpoint::Endpoint;

/// `timeout_ms` when the load names none: generous, because a remote under load may queue a
/// request for a while before its first byte.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// `max_input_tokens` when the load names none and the remote reports no `max_model_len`.
pub const DEFAULT_MAX_INPUT_TOKENS: u64 = 2048;
const MAX_TIMEOUT_MS: u64 = 3_600_000;
const MAX_INPUT_TOKENS: u64 = 1 << 20;

/// Which endpoints a remote model is driven through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteFamily {
    /// `POST /v1/embeddings`.
    Embedding,
    /// `POST /v1/completions` and `/v1/chat/completions`, streamed.
    Generate,
}

/// The `openai` map as read from the wire, every key optional until [`Self::resolve`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenAiSettings {
    /// Base URL of the server, `http://host[:port][/prefix]`; `/v1/...` is appended.
    pub url: Option<String>,
    /// The model name the server knows, sent as `model` in every request.
    pub remote_model: Option<String>,
    /// `embedding` or `generate`.
    pub family: Option<String>,
    /// Sent as `Authorization: Bearer <api_key>`.
    pub api_key: Option<String>,
    /// Longest wait for the remote: to connect, for each read, and for a whole embeddings
    /// answer.
    pub timeout_ms: Option<u64>,
    /// Longest input the model takes, in tokens; see [`OpenAiConfig::max_input_tokens`].
    pub max_input_tokens: Option<u64>,
}

impl OpenAiSettings {
    /// Checks every setting and fills defaults.
    pub fn resolve(self) -> Result<OpenAiConfig, OpenAiError> {
        let url = self
            .url
            .ok_or_else(|| OpenAiError::config("url", "is required"))?;
        let endpoint = Endpoint::parse(&url)?;
        let remote_model = match self.remote_model {
            None => return Err(OpenAiError::config("remote_model", "is required")),
            Some(m) if m.is_empty() => {
                return Err(OpenAiError::config("remote_model", "must not be empty"));
            }
            Some(m) if m.len() > 1024 => {
                return Err(OpenAiError::config(
                    "remote_model",
                    "must be at most 1024 bytes",
                ));
            }
            Some(m) => m,
        };
        let family = match self.family.as_deref() {
            Some("embedding") => RemoteFamily::Embedding,
            Some("generate") => RemoteFamily::Generate,
            Some(other) => {
                return Err(OpenAiError::config(
                    "family",
                    format!(
                        "must be `embedding` or `generate`, got `{}`",
                        other.escape_debug()
                    ),
                ));
            }
            None => return Err(OpenAiError::config("family", "is required")),
        };
        if let Some(key) = &self.api_key
            && (key.is_empty() || key.bytes().any(|b| b.is_ascii_control() || !b.is_ascii()))
        {
            // It goes into a header line verbatim, so a CR or LF would inject headers.
            return Err(OpenAiError::config(
                "api_key",
                "must be non-empty printable ASCII",
            ));
        }
        let timeout_ms = self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Err(OpenAiError::config(
                "timeout_ms",
                format!("must be in 1..={MAX_TIMEOUT_MS}"),
            ));
        }
        if let Some(max) = self.max_input_tokens
            && !(2..=MAX_INPUT_TOKENS).contains(&max)
        {
            return Err(OpenAiError::config(
                "max_input_tokens",
                format!("must be in 2..={MAX_INPUT_TOKENS}"),
            ));
        }
        Ok(OpenAiConfig {
            endpoint,
            remote_model,
            family,
            api_key: self.api_key,
            timeout: Duration::from_millis(timeout_ms),
            max_input_tokens: self.max_input_tokens.map(|m| m as usize),
        })
    }
}

/// A validated remote model. `Debug` never prints the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    pub(crate) endpoint: Endpoint,
    /// Sent as `model` in every request.
    pub remote_model: String,
    /// Which endpoints drive the model.
    pub family: RemoteFamily,
    pub(crate) api_key: Option<String>,
    /// Longest wait for the remote.
    pub timeout: Duration,
    /// The load's `max_input_tokens`; `None` asks the remote's `/v1/models` for its
    /// `max_model_len` (vLLM and SGLang report one), else [`DEFAULT_MAX_INPUT_TOKENS`].
    pub max_input_tokens: Option<usize>,
}

impl OpenAiConfig {
    /// The server's base URL as given, for logs.
    pub fn url(&self) -> String {
        self.endpoint.to_string()
    }
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("url", &self.endpoint.to_string())
            .field("remote_model", &self.remote_model)
            .field("family", &self.family)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_input_tokens", &self.max_input_tokens)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> OpenAiSettings {
        OpenAiSettings {
            url: Some("http://127.0.0.1:8000".into()),
            remote_model: Some("m".into()),
            family: Some("embedding".into()),
            ..OpenAiSettings::default()
        }
    }

    #[test]
    fn fills_defaults() {
        let config = settings().resolve().unwrap();
        assert_eq!(config.family, RemoteFamily::Embedding);
        assert_eq!(config.timeout, Duration::from_millis(DEFAULT_TIMEOUT_MS));
        assert_eq!(config.max_input_tokens, None);
        assert_eq!(config.url(), "http://127.0.0.1:8000");
    }

    #[test]
    fn refuses_bad_settings_by_name() {
        let cases: Vec<(OpenAiSettings, &str)> = vec![
            (
                OpenAiSettings {
                    url: None,
                    ..settings()
                },
                "`openai.url` is required",
            ),
            (
                OpenAiSettings {
                    remote_model: Some(String::new()),
                    ..settings()
                },
                "`openai.remote_model` must not be empty",
            ),
            (
                OpenAiSettings {
                    family: Some("rerank".into()),
                    ..settings()
                },
                "`openai.family` must be `embedding` or `generate`",
            ),
            (
                OpenAiSettings {
                    family: None,
                    ..settings()
                },
                "`openai.family` is required",
            ),
            (
                OpenAiSettings {
                    api_key: Some("a\r\nX-Evil: 1".into()),
                    ..settings()
                },
                "`openai.api_key` must be non-empty printable ASCII",
            ),
            (
                OpenAiSettings {
                    timeout_ms: Some(0),
                    ..settings()
                },
                "`openai.timeout_ms` must be in 1..=",
            ),
            (
                OpenAiSettings {
                    max_input_tokens: Some(1),
                    ..settings()
                },
                "`openai.max_input_tokens` must be in 2..=",
            ),
        ];
        for (settings, needle) in cases {
            let error = settings.resolve().unwrap_err();
            assert!(error.is_bad_settings());
            let message = error.to_string();
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
    }

    #[test]
    fn debug_redacts_the_api_key() {
        let config = OpenAiSettings {
            api_key: Some("sk-secret".into()),
            ..settings()
        }
        .resolve()
        .unwrap();
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
