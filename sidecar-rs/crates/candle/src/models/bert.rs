//! BERT: the bidirectional Transformer encoder of Devlin et al., "BERT: Pre-training of Deep
//! Bidirectional Transformers for Language Understanding" (2018), <https://arxiv.org/abs/1810.04805>,
//! whose layers are the encoder blocks of Vaswani et al., "Attention Is All You Need" (2017),
//! <https://arxiv.org/abs/1706.03762>.
//!
//! Names follow Hugging Face's `BertModel`
//! (<https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/modeling_bert.py>)
//! and its `config.json` (<https://huggingface.co/google-bert/bert-base-uncased/blob/main/config.json>),
//! so every `vb.pp(..)` below is the tensor path stored in the checkpoint. Only the encoder is
//! built: sentence embeddings pool the last hidden state themselves, so `pooler.*` and any
//! pre-training head in the file are left unread. Dropout is the identity at inference.

use candle_core::{Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, Module, VarBuilder, embedding, layer_norm, linear};
use serde::Deserialize;

use super::encoder::Encoder;
use super::packing::Packing;
use crate::LoadError;

/// The fields of `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    /// Rows of `embeddings.word_embeddings`.
    pub vocab_size: usize,
    /// Model width `H` (768 in BERT-base, 384 in MiniLM-L6).
    pub hidden_size: usize,
    /// Number of encoder blocks `L`.
    pub num_hidden_layers: usize,
    /// Attention heads `A`; `H / A` is the width of one head.
    pub num_attention_heads: usize,
    /// Width of the position-wise feed-forward layer (4H in the paper).
    pub intermediate_size: usize,
    /// Non-linearity of the feed-forward layer.
    pub hidden_act: HiddenAct,
    /// Longest sequence the learned position embeddings cover.
    pub max_position_embeddings: usize,
    /// Segment (sentence A/B) vocabulary.
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    /// Epsilon of every LayerNorm.
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    /// Only the paper's learned absolute positions are implemented.
    #[serde(default)]
    pub position_embedding_type: PositionEmbeddingType,
}

fn default_type_vocab_size() -> usize {
    2
}

fn default_layer_norm_eps() -> f64 {
    1e-12
}

/// `hidden_act` values found in BERT-family checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenAct {
    /// The exact, erf-based GELU the paper uses.
    Gelu,
    /// The tanh approximation of GELU.
    #[serde(alias = "gelu_pytorch_tanh", alias = "gelu_fast")]
    GeluNew,
    /// Rectified linear unit.
    Relu,
}

impl HiddenAct {
    fn forward(self, xs: &Tensor) -> Result<Tensor> {
        match self {
            HiddenAct::Gelu => xs.gelu_erf(),
            HiddenAct::GeluNew => xs.gelu(),
            HiddenAct::Relu => xs.relu(),
        }
    }
}

/// How token positions are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PositionEmbeddingType {
    /// Learned absolute position embeddings (the paper).
    #[default]
    Absolute,
    /// Shaw et al. relative keys.
    RelativeKey,
    /// Huang et al. relative keys and queries.
    RelativeKeyQuery,
}

/// §3.2, "Input/Output Representations": the input is the sum of token, segment and position
/// embeddings, followed by LayerNorm.
struct BertEmbeddings {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    token_type_embeddings: Embedding,
    layer_norm: LayerNorm,
}

impl BertEmbeddings {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            word_embeddings: embedding(c.vocab_size, c.hidden_size, vb.pp("word_embeddings"))?,
            position_embeddings: embedding(
                c.max_position_embeddings,
                c.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_type_embeddings: embedding(
                c.type_vocab_size,
                c.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            layer_norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    /// Packed `[tokens]` ids and segments, with each token's position in its row.
    fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        positions: &Tensor,
    ) -> Result<Tensor> {
        let tokens = self.word_embeddings.forward(input_ids)?;
        let segments = self.token_type_embeddings.forward(token_type_ids)?;
        let positions = self.position_embeddings.forward(positions)?;
        self.layer_norm
            .forward(&((tokens + segments)? + positions)?)
    }
}

/// Vaswani et al. §3.2.2, multi-head scaled dot-product attention:
/// `softmax(Q Kᵀ / √d_k + mask) V`, computed for every head at once. The three projections
/// are one matrix product (their weights stacked at load), so a small batch reads its input
/// once and makes one call instead of three.
struct BertSelfAttention {
    query_key_value: Linear,
    num_heads: usize,
    head_dim: usize,
}

impl BertSelfAttention {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let h = c.hidden_size;
        let (weights, biases): (Vec<_>, Vec<_>) = ["query", "key", "value"]
            .iter()
            .map(|name| {
                let vb = vb.pp(*name);
                Ok((vb.get((h, h), "weight")?, vb.get(h, "bias")?))
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        Ok(Self {
            query_key_value: Linear::new(Tensor::cat(&weights, 0)?, Some(Tensor::cat(&biases, 0)?)),
            num_heads: c.num_attention_heads,
            head_dim: h / c.num_attention_heads,
        })
    }

    /// `xs` is packed, `[tokens, hidden]`; attention runs on the rows padded apart again, under
    /// the additive `mask` `[batch, 1, 1, seq]`, and its output is packed back.
    fn forward(&self, xs: &Tensor, packing: &Packing, mask: &Tensor) -> Result<Tensor> {
        let (batch, seq_len) = (packing.batch(), packing.seq_len());
        let width = self.num_heads * self.head_dim;
        let qkv = packing.unpack(&self.query_key_value.forward(xs)?)?;
        let heads = |i: usize| {
            qkv.narrow(1, i * width, width)?
                .reshape((batch, seq_len, self.num_heads, self.head_dim))?
                .transpose(1, 2)?
                .contiguous()
        };
        let (q, k, v) = (heads(0)?, heads(1)?, heads(2)?);
        let scores = (q.matmul(&k.t()?)? / (self.head_dim as f64).sqrt())?;
        let weights = candle_nn::ops::softmax_last_dim(&scores.broadcast_add(mask)?)?;
        let attended = weights
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((batch * seq_len, width))?;
        packing.pack(&attended)
    }
}

/// The output projection of attention, then the residual connection and LayerNorm
/// (Vaswani et al. §3.1: `LayerNorm(x + Sublayer(x))`).
struct BertSelfOutput {
    dense: Linear,
    layer_norm: LayerNorm,
}

impl BertSelfOutput {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            dense: linear(c.hidden_size, c.hidden_size, vb.pp("dense"))?,
            layer_norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, xs: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm
            .forward(&(self.dense.forward(xs)? + residual)?)
    }
}

struct BertAttention {
    self_attention: BertSelfAttention,
    output: BertSelfOutput,
}

impl BertAttention {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            self_attention: BertSelfAttention::load(vb.pp("self"), c)?,
            output: BertSelfOutput::load(vb.pp("output"), c)?,
        })
    }

    fn forward(&self, xs: &Tensor, packing: &Packing, mask: &Tensor) -> Result<Tensor> {
        let attended = self.self_attention.forward(xs, packing, mask)?;
        self.output.forward(&attended, xs)
    }
}

/// First half of the position-wise feed-forward network (Vaswani et al. §3.3).
struct BertIntermediate {
    dense: Linear,
    act: HiddenAct,
}

impl BertIntermediate {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            dense: linear(c.hidden_size, c.intermediate_size, vb.pp("dense"))?,
            act: c.hidden_act,
        })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.act.forward(&self.dense.forward(xs)?)
    }
}

/// Second half of the feed-forward network, then residual and LayerNorm.
struct BertOutput {
    dense: Linear,
    layer_norm: LayerNorm,
}

impl BertOutput {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            dense: linear(c.intermediate_size, c.hidden_size, vb.pp("dense"))?,
            layer_norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, xs: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm
            .forward(&(self.dense.forward(xs)? + residual)?)
    }
}

/// One encoder block: self-attention sublayer, then feed-forward sublayer.
struct BertLayer {
    attention: BertAttention,
    intermediate: BertIntermediate,
    output: BertOutput,
}

impl BertLayer {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            attention: BertAttention::load(vb.pp("attention"), c)?,
            intermediate: BertIntermediate::load(vb.pp("intermediate"), c)?,
            output: BertOutput::load(vb.pp("output"), c)?,
        })
    }

    fn forward(&self, xs: &Tensor, packing: &Packing, mask: &Tensor) -> Result<Tensor> {
        let attended = self.attention.forward(xs, packing, mask)?;
        let hidden = self.intermediate.forward(&attended)?;
        self.output.forward(&hidden, &attended)
    }
}

/// The stack of `num_hidden_layers` blocks.
struct BertEncoder {
    layers: Vec<BertLayer>,
}

impl BertEncoder {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let layers = (0..c.num_hidden_layers)
            .map(|i| BertLayer::load(vb.pp(format!("layer.{i}")), c))
            .collect::<Result<_>>()?;
        Ok(Self { layers })
    }

    fn forward(&self, xs: &Tensor, packing: &Packing, mask: &Tensor) -> Result<Tensor> {
        self.layers.iter().try_fold(xs.clone(), |hidden, layer| {
            layer.forward(&hidden, packing, mask)
        })
    }
}

/// BERT without its pooler: embeddings followed by the encoder stack.
pub struct BertModel {
    embeddings: BertEmbeddings,
    encoder: BertEncoder,
}

impl BertModel {
    /// Builds the model from a checkpoint. Both a bare `BertModel` checkpoint and one saved from
    /// a task head (tensors under `bert.`) are accepted.
    pub fn load(vb: VarBuilder, config: &Config) -> std::result::Result<Self, LoadError> {
        if config.position_embedding_type != PositionEmbeddingType::Absolute {
            return Err(LoadError::Unsupported(format!(
                "BERT position_embedding_type {:?}",
                config.position_embedding_type
            )));
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(LoadError::Unsupported(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden_size, config.num_attention_heads
            )));
        }
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") {
            vb
        } else {
            vb.pp("bert")
        };
        Ok(Self {
            embeddings: BertEmbeddings::load(vb.pp("embeddings"), config)?,
            encoder: BertEncoder::load(vb.pp("encoder"), config)?,
        })
    }
}

impl Encoder for BertModel {
    fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        lengths: &[usize],
    ) -> Result<Tensor> {
        let (batch, seq_len) = input_ids.dims2()?;
        let packing = Packing::new(lengths, seq_len, input_ids.device())?;
        let ids = packing.pack(&input_ids.flatten_all()?)?;
        let segments = packing.pack(&token_type_ids.flatten_all()?)?;
        let hidden = self
            .embeddings
            .forward(&ids, &segments, packing.positions())?;
        let mask = packing.attention_mask(hidden.dtype())?;
        let hidden = self.encoder.forward(&hidden, &packing, &mask)?;
        packing.unpack(&hidden)?.reshape((batch, seq_len, ()))
    }
}
