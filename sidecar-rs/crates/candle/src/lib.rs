//! Candle runtime for the Shoal sidecar.
//!
//! [`CandleRuntime`] owns the device (CPU by default; CUDA when built with the `cuda` feature)
//! and turns a model directory into a [`CandleBackend`], which implements
//! [`shoal_sidecar_core::Backend`]. Architectures live one per file under [`models`] and are
//! chosen from the checkpoint's `config.json`.

mod backend;
mod chat_template;
mod detokenize;
mod encoder_runner;
mod entities;
mod error;
mod generator;
mod gguf;
mod heads;
pub mod models;
mod pooling;
mod precision;
mod runtime;
mod sampling;
mod sentence_transformers;
mod task;
mod vocab;
mod weights;

pub use backend::CandleBackend;
pub use error::LoadError;
pub use generator::{LlamaGenerator, PREFILL_CHUNK};
pub use gguf::GGUF_MAGIC;
pub use models::llama::GgufWeightMode;
pub use models::lora::LoraAdapter;
pub use pooling::Pooling;
pub use precision::Precision;
pub use runtime::{CandleRuntime, LoadOptions};
pub use sentence_transformers::SentenceTransformersConfig;
pub use task::{Activation, Task};
