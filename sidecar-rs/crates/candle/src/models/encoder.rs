//! What every encoder architecture provides, whatever its paper: the trait the backend runs
//! and the limits it reports. A leaf, so architectures and the factory that picks one
//! (`models`) both depend on it and not on each other both ways.

use candle_core::{Result, Tensor};

/// A Transformer encoder: token ids in, one hidden state per token out. `Send`, so a backend
/// built on a loading thread can move to the thread that serves it.
pub trait Encoder: Send {
    /// `input_ids` and `token_type_ids` are `[batch, seq]` u32, each row right-padded after its
    /// `lengths[row]` real tokens. Returns `[batch, seq, hidden]`, zeros at padding.
    fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        lengths: &[usize],
    ) -> Result<Tensor>;
}

/// Limits an encoder imposes on its callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncoderShape {
    /// Width of each hidden state.
    pub hidden_size: usize,
    /// Longest sequence the position embeddings cover.
    pub max_position_embeddings: usize,
}
