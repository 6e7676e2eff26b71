//! External runtime for the Shoal sidecar: a model served by an OpenAI-compatible HTTP server
//! (vLLM, SGLang, llama.cpp's or llama-cpp-python's server), so such engines join the fleet
//! behind the same socket protocol as Candle models.
//!
//! An [`OpenAiBackend`] turns each `embed` batch into one `POST /v1/embeddings` and each
//! `generate` sequence into one streamed `POST /v1/completions` (or `/v1/chat/completions`
//! for messages), parsed from server-sent events into the protocol's `tokens` / `done`
//! events. The remote batches; the sidecar only forwards, so a model costs no memory here.
//! See `docs/external-runtime.md` for what is exact and what is estimated.

mod api;
mod backend;
mod config;
mod embed;
mod endpoint;
mod error;
mod generate;
mod http;
mod sse;

pub use backend::OpenAiBackend;
pub use config::{
    DEFAULT_MAX_INPUT_TOKENS, DEFAULT_TIMEOUT_MS, OpenAiConfig, OpenAiSettings, RemoteFamily,
};
pub use error::OpenAiError;
