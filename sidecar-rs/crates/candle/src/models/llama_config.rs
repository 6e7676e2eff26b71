//! A Llama-family model's hyper-parameters ([`Config`]), read from GGUF metadata or from
//! transformers' `config.json`, and how its RoPE pairs dimensions. Its own module because
//! both the model (`llama`) and its LoRA adapters (`lora`) are shaped by it.

use serde::Deserialize;

use crate::LoadError;
use crate::gguf::Gguf;

/// How RoPE pairs the dimensions of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeLayout {
    /// Dimensions `(2i, 2i+1)` rotate together: llama.cpp's layout after its converter
    /// permuted the query/key weights.
    Interleaved,
    /// Dimensions `(i, i + head_dim/2)` rotate together: transformers' `rotate_half`.
    Halves,
}

/// Hyper-parameters, from GGUF `llama.*` metadata or transformers' `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rope_theta: f32,
    pub rms_norm_eps: f64,
    pub max_position_embeddings: usize,
    pub rope: RopeLayout,
    /// Round attention operands through f16 as llama.cpp's default KV cache does.
    pub f16_attention: bool,
}

/// The subset of transformers' `LlamaConfig` this model reads.
#[derive(Debug, Deserialize)]
struct HfConfig {
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    #[serde(default = "default_rope_theta")]
    rope_theta: f32,
    #[serde(default = "default_eps")]
    rms_norm_eps: f64,
    max_position_embeddings: usize,
    #[serde(default)]
    tie_word_embeddings: bool,
    #[serde(default)]
    hidden_act: Option<String>,
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    attention_bias: bool,
    #[serde(default)]
    mlp_bias: bool,
}

fn default_rope_theta() -> f32 {
    10_000.0
}

fn default_eps() -> f64 {
    1e-6
}

impl Config {
    /// Reads `llama.*` metadata of a GGUF file.
    pub(crate) fn from_gguf(gguf: &Gguf) -> std::result::Result<Self, LoadError> {
        let heads = gguf.usize("llama.attention.head_count")?;
        let hidden = gguf.usize("llama.embedding_length")?;
        if heads == 0 || hidden % heads != 0 {
            return Err(LoadError::Unsupported(format!(
                "embedding_length {hidden} is not a multiple of head_count {heads}"
            )));
        }
        let head_dim = gguf
            .opt_usize("llama.attention.key_length")?
            .unwrap_or(hidden / heads);
        if let Some(rope_dims) = gguf.opt_usize("llama.rope.dimension_count")?
            && rope_dims != head_dim
        {
            return Err(LoadError::Unsupported(format!(
                "partial rotary embeddings ({rope_dims} of {head_dim} dimensions)"
            )));
        }
        if gguf
            .opt_str("llama.rope.scaling.type")?
            .is_some_and(|t| t != "none")
        {
            return Err(LoadError::Unsupported("RoPE scaling".into()));
        }
        if gguf.opt_usize("llama.expert_count")?.unwrap_or(0) > 0 {
            return Err(LoadError::Unsupported("mixture-of-experts layers".into()));
        }
        let vocab_size = match gguf.opt_usize("llama.vocab_size")? {
            Some(v) => v,
            None => gguf.strings("tokenizer.ggml.tokens")?.len(),
        };
        let config = Self {
            vocab_size,
            hidden_size: hidden,
            intermediate_size: gguf.usize("llama.feed_forward_length")?,
            num_hidden_layers: gguf.usize("llama.block_count")?,
            num_attention_heads: heads,
            num_key_value_heads: gguf
                .opt_usize("llama.attention.head_count_kv")?
                .unwrap_or(heads),
            head_dim,
            rope_theta: gguf.opt_f64("llama.rope.freq_base")?.unwrap_or(10_000.0) as f32,
            rms_norm_eps: gguf
                .opt_f64("llama.attention.layer_norm_rms_epsilon")?
                .unwrap_or(1e-5),
            max_position_embeddings: gguf.usize("llama.context_length")?,
            rope: RopeLayout::Interleaved,
            f16_attention: true,
        };
        config.validate()
    }

    /// Reads transformers' `config.json` of a `LlamaForCausalLM` checkpoint; also returns
    /// whether the LM head is tied to the embedding.
    pub(crate) fn from_hf(
        config: serde_json::Value,
    ) -> std::result::Result<(Self, bool), LoadError> {
        let c: HfConfig = serde_json::from_value(config).map_err(|source| LoadError::Config {
            path: "config.json".into(),
            source,
        })?;
        if c.hidden_act.as_deref().is_some_and(|a| a != "silu") {
            return Err(LoadError::Unsupported(format!(
                "hidden_act `{}`; Llama models use silu",
                c.hidden_act.unwrap_or_default()
            )));
        }
        if c.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(LoadError::Unsupported("RoPE scaling".into()));
        }
        if c.attention_bias || c.mlp_bias {
            return Err(LoadError::Unsupported("biases in attention or MLP".into()));
        }
        if c.num_attention_heads == 0 {
            return Err(LoadError::Unsupported("num_attention_heads is 0".into()));
        }
        let config = Self {
            vocab_size: c.vocab_size,
            hidden_size: c.hidden_size,
            intermediate_size: c.intermediate_size,
            num_hidden_layers: c.num_hidden_layers,
            num_attention_heads: c.num_attention_heads,
            num_key_value_heads: c.num_key_value_heads.unwrap_or(c.num_attention_heads),
            head_dim: c.head_dim.unwrap_or(c.hidden_size / c.num_attention_heads),
            rope_theta: c.rope_theta,
            rms_norm_eps: c.rms_norm_eps,
            max_position_embeddings: c.max_position_embeddings,
            rope: RopeLayout::Halves,
            f16_attention: false,
        };
        Ok((config.validate()?, c.tie_word_embeddings))
    }

    fn validate(self) -> std::result::Result<Self, LoadError> {
        let ok = self.vocab_size > 0
            && self.num_hidden_layers > 0
            && self.num_key_value_heads > 0
            && self
                .num_attention_heads
                .is_multiple_of(self.num_key_value_heads)
            && self.head_dim > 0
            && self.head_dim.is_multiple_of(2)
            && self.max_position_embeddings > 0
            && self.rope_theta > 0.0;
        if ok {
            Ok(self)
        } else {
            Err(LoadError::Unsupported(format!(
                "inconsistent Llama hyper-parameters: {self:?}"
            )))
        }
    }
}
