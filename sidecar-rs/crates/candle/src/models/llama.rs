//! Llama-family decoder (Touvron et al., "LLaMA: Open and Efficient Foundation Language
//! Models", <https://arxiv.org/abs/2302.13971>), as in transformers' `modeling_llama.py`:
//! pre-norm blocks with RMSNorm, rotary position embeddings (RoPE), grouped-query attention
//! (GQA: several query heads share one key/value head) and a SiLU-gated MLP; the LM head may
//! be tied to the token embedding. SmolLM2, TinyLlama, Llama 2/3 and Mistral-style dense
//! checkpoints all have this shape.
//!
//! The same code runs from GGUF (quantized [`QMatMul`] weights, llama.cpp's tensor names) and
//! from safetensors (plain tensors wrapped in [`QMatMul::Tensor`], transformers' names).
//! Two things differ between the formats and are carried by [`Config`]: llama.cpp's converter
//! permutes the query/key rows so that RoPE rotates adjacent pairs (`rope_i`), where
//! transformers rotates the two halves of each head (`rope`); and for GGUF the attention
//! reproduces llama.cpp's default f16 KV cache by rounding keys, values, queries and
//! attention weights through f16, so that greedy decoding picks the same tokens. A GGUF may
//! instead be loaded dequantized ([`GgufWeightMode::Dequantized`]): every matrix expanded to
//! f32 once at load and attention kept in f32, which is what transformers computes when it
//! reads the same file.
//!
//! [`Llama::forward`] runs several sequences at once: every sequence contributes the tokens it
//! has not yet read (a whole prompt, or its last sampled token); the linear layers see all of
//! them stacked as one matrix, and attention runs per sequence against its own [`KvCache`].

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::VarBuilder;

pub use super::llama_config::{Config, RopeLayout};
use super::lora::{LoraAdapter, Target};
use crate::LoadError;
use crate::gguf::Gguf;

/// How a GGUF file's matrices are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GgufWeightMode {
    /// As stored (Q4_1, Q8_0, ...), multiplied by candle's quantized kernels, with attention
    /// rounded through f16 like llama.cpp's default KV cache.
    #[default]
    Quantized,
    /// Expanded to f32 at load, with attention in f32: several times the memory, and the
    /// numerics of transformers reading the GGUF.
    Dequantized,
}

/// Keys and values of every layer for the tokens a sequence has read so far.
#[derive(Debug, Default)]
pub struct KvCache {
    /// Per layer `[1, kv_heads, len, head_dim]` keys and values.
    layers: Vec<Option<(Tensor, Tensor)>>,
    len: usize,
}

impl KvCache {
    /// Tokens cached.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been read yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One sequence's share of a forward pass: the tokens it has not read yet, its cache, and the
/// LoRA adapter it runs with, if any.
pub struct Chunk<'a> {
    pub tokens: &'a [u32],
    pub cache: &'a mut KvCache,
    pub adapter: Option<&'a LoraAdapter>,
}

/// The rows of one forward pass that run with one adapter: all of them (`rows` is `None`), or
/// the listed ones.
struct AdaptedRows<'a> {
    adapter: &'a LoraAdapter,
    rows: Option<Tensor>,
}

struct Attention {
    q_proj: QMatMul,
    k_proj: QMatMul,
    v_proj: QMatMul,
    o_proj: QMatMul,
}

struct Mlp {
    gate_proj: QMatMul,
    up_proj: QMatMul,
    down_proj: QMatMul,
}

struct DecoderLayer {
    input_layernorm: Tensor,
    self_attn: Attention,
    post_attention_layernorm: Tensor,
    mlp: Mlp,
}

/// A loaded Llama model.
pub struct Llama {
    embed_tokens: QMatMul,
    layers: Vec<DecoderLayer>,
    norm: Tensor,
    lm_head: QMatMul,
    cos: Tensor,
    sin: Tensor,
    config: Config,
    device: Device,
}

/// Where the weights come from; names differ per format, shapes do not.
trait Weights {
    fn matrix(&mut self, gguf_name: &str, hf_name: &str)
    -> std::result::Result<QMatMul, LoadError>;
    fn vector(&mut self, gguf_name: &str, hf_name: &str) -> std::result::Result<Tensor, LoadError>;
    fn has(&self, gguf_name: &str, hf_name: &str) -> bool;
}

struct GgufWeights<'a> {
    gguf: &'a mut Gguf,
    device: Device,
    mode: GgufWeightMode,
    bytes: u64,
}

impl Weights for GgufWeights<'_> {
    fn matrix(&mut self, name: &str, _: &str) -> std::result::Result<QMatMul, LoadError> {
        let t = self.gguf.tensor(name, &self.device)?;
        match self.mode {
            GgufWeightMode::Quantized => {
                self.bytes += t.storage_size_in_bytes() as u64;
                Ok(QMatMul::from_qtensor(t)?)
            }
            GgufWeightMode::Dequantized => {
                let w = t.dequantize(&self.device)?;
                self.bytes += (w.elem_count() * w.dtype().size_in_bytes()) as u64;
                Ok(QMatMul::Tensor(w))
            }
        }
    }

    fn vector(&mut self, name: &str, _: &str) -> std::result::Result<Tensor, LoadError> {
        let t = self.gguf.tensor(name, &self.device)?;
        self.bytes += t.storage_size_in_bytes() as u64;
        Ok(t.dequantize(&self.device)?)
    }

    fn has(&self, name: &str, _: &str) -> bool {
        self.gguf.has_tensor(name)
    }
}

struct HfWeights<'a> {
    vb: VarBuilder<'a>,
    config: &'a Config,
}

impl HfWeights<'_> {
    fn shape_of(&self, name: &str) -> (usize, usize) {
        let c = self.config;
        let q = c.num_attention_heads * c.head_dim;
        let kv = c.num_key_value_heads * c.head_dim;
        let leaf = name.rsplit('.').nth(1).unwrap_or_default();
        match leaf {
            "q_proj" => (q, c.hidden_size),
            "k_proj" | "v_proj" => (kv, c.hidden_size),
            "o_proj" => (c.hidden_size, q),
            "gate_proj" | "up_proj" => (c.intermediate_size, c.hidden_size),
            "down_proj" => (c.hidden_size, c.intermediate_size),
            _ => (c.vocab_size, c.hidden_size),
        }
    }
}

impl Weights for HfWeights<'_> {
    fn matrix(&mut self, _: &str, name: &str) -> std::result::Result<QMatMul, LoadError> {
        let shape = self.shape_of(name);
        Ok(QMatMul::Tensor(self.vb.get(shape, name)?))
    }

    fn vector(&mut self, _: &str, name: &str) -> std::result::Result<Tensor, LoadError> {
        Ok(self.vb.get(self.config.hidden_size, name)?)
    }

    fn has(&self, _: &str, name: &str) -> bool {
        self.vb.contains_tensor(name)
    }
}

impl Llama {
    /// Loads the model from an open GGUF file; returns it and the bytes its weights take.
    pub(crate) fn from_gguf(
        gguf: &mut Gguf,
        device: &Device,
        mode: GgufWeightMode,
    ) -> std::result::Result<(Self, u64), LoadError> {
        let config = Config {
            f16_attention: mode == GgufWeightMode::Quantized,
            ..Config::from_gguf(gguf)?
        };
        let mut weights = GgufWeights {
            gguf,
            device: device.clone(),
            mode,
            bytes: 0,
        };
        let model = Self::load(config, &mut weights, device)?;
        Ok((model, weights.bytes))
    }

    /// Loads a transformers checkpoint from `config.json` and a safetensors [`VarBuilder`].
    pub(crate) fn from_hf(
        config: serde_json::Value,
        vb: VarBuilder,
        device: &Device,
    ) -> std::result::Result<Self, LoadError> {
        let (config, tied) = Config::from_hf(config)?;
        let mut weights = HfWeights {
            vb,
            config: &config,
        };
        if tied && weights.has("", "lm_head.weight") {
            tracing::debug!("tie_word_embeddings is set but lm_head.weight exists; using it");
        }
        Self::load(config.clone(), &mut weights, device)
    }

    fn load(
        config: Config,
        w: &mut dyn Weights,
        device: &Device,
    ) -> std::result::Result<Self, LoadError> {
        let embed_tokens = w.matrix("token_embd.weight", "model.embed_tokens.weight")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let g = |n: &str| format!("blk.{i}.{n}.weight");
            let h = |n: &str| format!("model.layers.{i}.{n}.weight");
            layers.push(DecoderLayer {
                input_layernorm: w.vector(&g("attn_norm"), &h("input_layernorm"))?,
                self_attn: Attention {
                    q_proj: w.matrix(&g("attn_q"), &h("self_attn.q_proj"))?,
                    k_proj: w.matrix(&g("attn_k"), &h("self_attn.k_proj"))?,
                    v_proj: w.matrix(&g("attn_v"), &h("self_attn.v_proj"))?,
                    o_proj: w.matrix(&g("attn_output"), &h("self_attn.o_proj"))?,
                },
                post_attention_layernorm: w
                    .vector(&g("ffn_norm"), &h("post_attention_layernorm"))?,
                mlp: Mlp {
                    gate_proj: w.matrix(&g("ffn_gate"), &h("mlp.gate_proj"))?,
                    up_proj: w.matrix(&g("ffn_up"), &h("mlp.up_proj"))?,
                    down_proj: w.matrix(&g("ffn_down"), &h("mlp.down_proj"))?,
                },
            });
        }
        let norm = w.vector("output_norm.weight", "model.norm.weight")?;
        // Tied embeddings: the checkpoint has no separate head, the embedding matrix is it.
        let lm_head = if w.has("output.weight", "lm_head.weight") {
            w.matrix("output.weight", "lm_head.weight")?
        } else {
            embed_tokens.clone()
        };
        let (cos, sin) = rope_tables(&config, device)?;
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            cos,
            sin,
            config,
            device: device.clone(),
        })
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The device the weights are on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Reads every chunk's tokens into its cache and returns the logits after each chunk's
    /// last token, `[chunks.len(), vocab_size]` f32.
    pub fn forward(&self, chunks: &mut [Chunk<'_>]) -> Result<Tensor> {
        let c = &self.config;
        let ids: Vec<u32> = chunks
            .iter()
            .flat_map(|ch| ch.tokens.iter().copied())
            .collect();
        if ids.is_empty() || chunks.iter().any(|ch| ch.tokens.is_empty()) {
            candle_core::bail!("every chunk must bring at least one token");
        }
        for ch in chunks.iter() {
            if ch.cache.len + ch.tokens.len() > c.max_position_embeddings {
                candle_core::bail!(
                    "sequence of {} tokens exceeds the context of {}",
                    ch.cache.len + ch.tokens.len(),
                    c.max_position_embeddings
                );
            }
        }
        let total = ids.len();
        let ids = Tensor::from_vec(ids, total, &self.device)?;
        let adapted = self.adapted_rows(chunks, total)?;
        let mut x = self.embed_tokens.embedding(&ids)?.to_dtype(DType::F32)?;
        for (index, layer) in self.layers.iter().enumerate() {
            let h = candle_nn::ops::rms_norm(&x, &layer.input_layernorm, c.rms_norm_eps as f32)?;
            let attn = self.attention(index, &layer.self_attn, &h, chunks, &adapted)?;
            x = (x + attn)?;
            let h = candle_nn::ops::rms_norm(
                &x,
                &layer.post_attention_layernorm,
                c.rms_norm_eps as f32,
            )?;
            let mlp = &layer.mlp;
            let project =
                |w: &QMatMul, target, x: &Tensor| Self::project(w, x, index, target, &adapted);
            let gated = (candle_nn::ops::silu(&project(&mlp.gate_proj, Target::Gate, &h)?)?
                * project(&mlp.up_proj, Target::Up, &h)?)?;
            x = (x + project(&mlp.down_proj, Target::Down, &gated)?)?;
        }
        for ch in chunks.iter_mut() {
            ch.cache.len += ch.tokens.len();
        }
        let mut last = Vec::with_capacity(chunks.len());
        let mut end = 0u32;
        for ch in chunks.iter() {
            end += ch.tokens.len() as u32;
            last.push(end - 1);
        }
        let last = Tensor::from_vec(last, chunks.len(), &self.device)?;
        let x = x.index_select(&last, 0)?;
        let x = candle_nn::ops::rms_norm(&x, &self.norm, c.rms_norm_eps as f32)?;
        self.lm_head.forward(&x)?.to_dtype(DType::F32)
    }

    /// Which rows of a pass of `total` tokens each adapter of `chunks` applies to, grouped by
    /// adapter; rows of chunks without one run on the base weights alone.
    fn adapted_rows<'a>(&self, chunks: &[Chunk<'a>], total: usize) -> Result<Vec<AdaptedRows<'a>>> {
        let mut groups: Vec<(&'a LoraAdapter, Vec<u32>)> = Vec::new();
        let mut offset = 0u32;
        for ch in chunks {
            let rows = offset..offset + ch.tokens.len() as u32;
            offset = rows.end;
            let Some(adapter) = ch.adapter else { continue };
            match groups.iter_mut().find(|(a, _)| std::ptr::eq(*a, adapter)) {
                Some((_, listed)) => listed.extend(rows),
                None => groups.push((adapter, rows.collect())),
            }
        }
        groups
            .into_iter()
            .map(|(adapter, rows)| {
                let rows = if rows.len() == total {
                    None
                } else {
                    let n = rows.len();
                    Some(Tensor::from_vec(rows, n, &self.device)?)
                };
                Ok(AdaptedRows { adapter, rows })
            })
            .collect()
    }

    /// `w · x` for every row, plus each adapter's update of `target` in layer `index` on its
    /// own rows.
    fn project(
        w: &QMatMul,
        x: &Tensor,
        index: usize,
        target: Target,
        adapted: &[AdaptedRows<'_>],
    ) -> Result<Tensor> {
        let mut y = w.forward(x)?;
        for group in adapted {
            let Some(pair) = group.adapter.pair(index, target) else {
                continue;
            };
            y = match &group.rows {
                None => (y + pair.delta(x)?)?,
                Some(rows) => y.index_add(rows, &pair.delta(&x.index_select(rows, 0)?)?, 0)?,
            };
        }
        Ok(y)
    }

    /// Self-attention of layer `index` for hidden states `h` (`[total, hidden]`, the chunks'
    /// tokens stacked in order): projections batched, attention per sequence.
    fn attention(
        &self,
        index: usize,
        attn: &Attention,
        h: &Tensor,
        chunks: &mut [Chunk<'_>],
        adapted: &[AdaptedRows<'_>],
    ) -> Result<Tensor> {
        let c = &self.config;
        let (heads, kv_heads, hd) = (c.num_attention_heads, c.num_key_value_heads, c.head_dim);
        let project = |w: &QMatMul, target, x: &Tensor| Self::project(w, x, index, target, adapted);
        let q = project(&attn.q_proj, Target::Q, h)?;
        let k = project(&attn.k_proj, Target::K, h)?;
        let v = project(&attn.v_proj, Target::V, h)?;
        let mut outputs = Vec::with_capacity(chunks.len());
        let mut offset = 0;
        for ch in chunks.iter_mut() {
            let n = ch.tokens.len();
            let pos = ch.cache.len;
            let split = |t: &Tensor, heads: usize| -> Result<Tensor> {
                t.narrow(0, offset, n)?
                    .reshape((1, n, heads, hd))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let cos = self.cos.narrow(0, pos, n)?;
            let sin = self.sin.narrow(0, pos, n)?;
            let rope = |t: &Tensor| match c.rope {
                RopeLayout::Interleaved => candle_nn::rotary_emb::rope_i(t, &cos, &sin),
                RopeLayout::Halves => candle_nn::rotary_emb::rope(t, &cos, &sin),
            };
            let q = rope(&split(&q, heads)?)?;
            let k = rope(&split(&k, kv_heads)?)?;
            let v = split(&v, kv_heads)?;
            let (k, v) = if c.f16_attention {
                (round_f16(&k)?, round_f16(&v)?)
            } else {
                (k, v)
            };
            if ch.cache.layers.len() <= index {
                ch.cache.layers.resize(index + 1, None);
            }
            let (k, v) = match ch.cache.layers[index].take() {
                Some((pk, pv)) => (Tensor::cat(&[&pk, &k], 2)?, Tensor::cat(&[&pv, &v], 2)?),
                None => (k, v),
            };
            ch.cache.layers[index] = Some((k.clone(), v.clone()));
            let y = self.attend(&q, &k, &v, pos)?;
            outputs.push(y.transpose(1, 2)?.reshape((n, heads * hd))?);
            offset += n;
        }
        let y = Tensor::cat(&outputs, 0)?;
        project(&attn.o_proj, Target::O, &y)
    }

    /// Scaled dot-product attention of `q` (`[1, heads, n, hd]`, positions `pos..pos+n`)
    /// over `k`/`v` (`[1, kv_heads, pos+n, hd]`), causal.
    fn attend(&self, q: &Tensor, k: &Tensor, v: &Tensor, pos: usize) -> Result<Tensor> {
        let c = &self.config;
        let group = c.num_attention_heads / c.num_key_value_heads;
        let (_, _, n, _) = q.dims4()?;
        let len = k.dim(2)?;
        let repeat = |t: &Tensor| -> Result<Tensor> {
            if group == 1 {
                return Ok(t.clone());
            }
            let (b, kvh, l, hd) = t.dims4()?;
            t.unsqueeze(2)?
                .expand((b, kvh, group, l, hd))?
                .reshape((b, kvh * group, l, hd))
        };
        let k = repeat(k)?;
        let v = repeat(v)?;
        let q = if c.f16_attention {
            round_f16(q)?
        } else {
            q.clone()
        };
        let scale = 1.0 / (c.head_dim as f64).sqrt();
        let mut scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?;
        if n > 1 {
            // Query i sits at position pos + i and sees keys 0..=pos + i.
            let mask: Vec<f32> = (0..n)
                .flat_map(|i| {
                    (0..len).map(move |j| if j <= pos + i { 0.0 } else { f32::NEG_INFINITY })
                })
                .collect();
            let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
            scores = scores.broadcast_add(&mask)?;
        }
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let weights = if c.f16_attention {
            round_f16(&weights)?
        } else {
            weights
        };
        weights.matmul(&v.contiguous()?)
    }
}

/// Rounds to the nearest f16 and back, as storing in an f16 cache does.
fn round_f16(t: &Tensor) -> Result<Tensor> {
    t.to_dtype(DType::F16)?.to_dtype(DType::F32)
}

/// `cos`/`sin` of `position × θ_i` for every position and pair `i`, `[max_pos, head_dim/2]`.
/// θ_i = base^(-2i/d) is built by repeated multiplication in f32, the way ggml's RoPE walks
/// it, so that angles agree with llama.cpp to the last bit.
fn rope_tables(c: &Config, device: &Device) -> Result<(Tensor, Tensor)> {
    let half = c.head_dim / 2;
    let step = c.rope_theta.powf(-2.0 / c.head_dim as f32);
    let mut cos = Vec::with_capacity(c.max_position_embeddings * half);
    let mut sin = Vec::with_capacity(c.max_position_embeddings * half);
    for p in 0..c.max_position_embeddings {
        let mut theta = p as f32;
        for _ in 0..half {
            cos.push(theta.cos());
            sin.push(theta.sin());
            theta *= step;
        }
    }
    let shape = (c.max_position_embeddings, half);
    Ok((
        Tensor::from_vec(cos, shape, device)?,
        Tensor::from_vec(sin, shape, device)?,
    ))
}
