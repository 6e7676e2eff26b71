//! Candle runtime for the Shoal sidecar.
//!
//! [`CandleRuntime`] owns the device (CPU by default; CUDA when built with the `cuda` feature)
//! and turns a model directory into a [`CandleBackend`], which implements
//! [`shoal_sidecar_core::Backend`]. Architectures live one per file under [`models`] and are
//! chosen from the checkpoint's `config.json`.

mod backend;
mod error;
pub mod models;
mod pooling;
mod runtime;
mod sentence_transformers;
mod weights;

pub use backend::CandleBackend;
pub use error::LoadError;
pub use pooling::Pooling;
pub use runtime::CandleRuntime;
pub use sentence_transformers::SentenceTransformersConfig;
