//! The runtime-independent half of the Shoal sidecar: the [`Backend`] trait every runtime
//! implements (Candle and the simulated backend today; an external OpenAI-compatible server
//! later), the batch and result types that cross it, and the error a backend may answer with.
//!
//! The shape follows text-embeddings-inference's `backends/core`: the trait is tiny and
//! synchronous because a backend always runs on its own OS thread, never on the async executor.

mod backend;
mod batch;
mod device;
mod error;
mod family;
mod generate;
mod heads;
mod stop;
pub mod text;

pub use backend::Backend;
pub use batch::{EmbedBatch, Embeddings, Input, check_token_ids};
pub use device::{DeviceSpec, ParseDeviceError};
pub use error::BackendError;
pub use family::ModelFamily;
pub use generate::{
    AdapterInfo, ChatMessage, FinishReason, GenerateRequest, Generator, Prompt, Sampling,
    SequenceEvent, SequenceId,
};
pub use heads::{Entities, Entity, PairBatch, Probabilities, Scores};
pub use stop::{Released, StopFilter};
