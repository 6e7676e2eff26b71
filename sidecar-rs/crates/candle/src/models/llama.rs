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

use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;

use super::host_attention::{self, Decode, Heads, HostKv};
use super::kernel_layout::{self, Matrix, Stacked};
pub use super::llama_config::{Config, RopeLayout};
use super::lora::{LoraAdapter, Target};
use crate::LoadError;
use crate::gguf::Gguf;

/// How a GGUF file's matrices are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GgufWeightMode {
    /// Quantized, held for the device's fastest kernels (`models/kernel_layout.rs`): on the
    /// CPU, Q4_1, Q5_0 and Q5_1 (which Candle multiplies one scalar at a time, so that a batch
    /// costs as much per sequence as one alone) are held exactly as Q8_0 plus each block's
    /// minimum, and Q8_0 in the shape of the tiled 8-bit kernels where the CPU has them;
    /// anything else as stored. Attention is rounded through f16 like llama.cpp's default KV
    /// cache.
    #[default]
    Kernels,
    /// Exactly as stored, whatever the kernels, with attention rounded through f16: the
    /// numerics llama.cpp computes from the same file.
    Stored,
    /// Expanded to f32 at load, with attention in f32: several times the memory, and the
    /// numerics of transformers reading the GGUF.
    Dequantized,
}

impl GgufWeightMode {
    /// The names the load request's `gguf_weights` takes, in variant order.
    pub const NAMES: [&'static str; 3] = ["kernels", "stored", "f32"];

    /// The mode called `name` in [`Self::NAMES`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "kernels" => Some(Self::Kernels),
            "stored" => Some(Self::Stored),
            "f32" => Some(Self::Dequantized),
            _ => None,
        }
    }
}

/// Keys and values of every layer for the tokens a sequence has read so far.
#[derive(Debug, Default)]
pub struct KvCache {
    /// Off the CPU: per layer `[1, kv_heads, len, head_dim]` keys and values.
    layers: Vec<Option<(Tensor, Tensor)>>,
    /// On the CPU: per layer, rows that grow in place.
    host: Vec<HostKv>,
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
    /// `q_proj`, `k_proj` and `v_proj`, which multiply the same input.
    qkv: Stacked,
    o_proj: Matrix,
}

struct Mlp {
    /// `gate_proj` and `up_proj`, which multiply the same input.
    gate_up: Stacked,
    down_proj: Matrix,
}

struct DecoderLayer {
    input_layernorm: Tensor,
    self_attn: Attention,
    post_attention_layernorm: Tensor,
    mlp: Mlp,
}

/// A loaded Llama model.
pub struct Llama {
    embed_tokens: Matrix,
    layers: Vec<DecoderLayer>,
    norm: Tensor,
    lm_head: Matrix,
    cos: Tensor,
    sin: Tensor,
    /// On the CPU, the same tables as host rows, for [`host_attention`].
    host_cos: Vec<f32>,
    host_sin: Vec<f32>,
    config: Config,
    device: Device,
}

/// Where the weights come from; names differ per format, shapes do not.
trait Weights {
    fn matrix(&mut self, gguf_name: &str, hf_name: &str) -> std::result::Result<Matrix, LoadError>;
    /// Matrices of the same input dimension (`(gguf_name, hf_name)` each), stacked.
    fn stacked(&mut self, names: &[(String, String)]) -> std::result::Result<Stacked, LoadError>;
    fn vector(&mut self, gguf_name: &str, hf_name: &str) -> std::result::Result<Tensor, LoadError>;
    fn has(&self, gguf_name: &str, hf_name: &str) -> bool;
}

struct GgufWeights<'a> {
    gguf: &'a mut Gguf,
    device: Device,
    mode: GgufWeightMode,
    bytes: u64,
}

impl GgufWeights<'_> {
    /// `t` held as [`GgufWeightMode`] says.
    fn held(&mut self, t: QTensor) -> std::result::Result<Matrix, LoadError> {
        let (_, k) = t.shape().dims2()?;
        let matrix = match self.mode {
            GgufWeightMode::Kernels => Matrix::for_kernels(t, &self.device)?,
            GgufWeightMode::Stored => Matrix::new(QMatMul::from_qtensor(t)?, k),
            GgufWeightMode::Dequantized => {
                Matrix::new(QMatMul::Tensor(t.dequantize(&self.device)?), k)
            }
        };
        self.bytes += matrix.bytes();
        Ok(matrix)
    }
}

impl Weights for GgufWeights<'_> {
    fn matrix(&mut self, name: &str, _: &str) -> std::result::Result<Matrix, LoadError> {
        let t = self.gguf.tensor(name, &self.device)?;
        self.held(t)
    }

    fn stacked(&mut self, names: &[(String, String)]) -> std::result::Result<Stacked, LoadError> {
        let tensors = names
            .iter()
            .map(|(name, _)| self.gguf.tensor(name, &self.device))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        match kernel_layout::stack_quantized(&tensors, &self.device)? {
            Some((joined, rows)) => Ok(Stacked::new(vec![(self.held(joined)?, rows)])),
            // Stored in different types: each is multiplied on its own.
            None => {
                let mut parts = Vec::with_capacity(tensors.len());
                for t in tensors {
                    let rows = t.shape().dims2()?.0;
                    parts.push((self.held(t)?, vec![rows]));
                }
                Ok(Stacked::new(parts))
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
    fn matrix(&mut self, _: &str, name: &str) -> std::result::Result<Matrix, LoadError> {
        let shape = self.shape_of(name);
        Ok(Matrix::new(
            QMatMul::Tensor(self.vb.get(shape, name)?),
            shape.1,
        ))
    }

    fn stacked(&mut self, names: &[(String, String)]) -> std::result::Result<Stacked, LoadError> {
        let mut tensors = Vec::with_capacity(names.len());
        for (_, name) in names {
            tensors.push(self.vb.get(self.shape_of(name), name)?);
        }
        let rows = tensors
            .iter()
            .map(|t| t.dim(0))
            .collect::<Result<Vec<_>>>()?;
        let k = self.config.hidden_size;
        let joined = Matrix::new(QMatMul::Tensor(Tensor::cat(&tensors, 0)?), k);
        Ok(Stacked::new(vec![(joined, rows)]))
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
            f16_attention: mode != GgufWeightMode::Dequantized,
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
            let both = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
                pairs.iter().map(|(gg, hh)| (g(gg), h(hh))).collect()
            };
            layers.push(DecoderLayer {
                input_layernorm: w.vector(&g("attn_norm"), &h("input_layernorm"))?,
                self_attn: Attention {
                    qkv: w.stacked(&both(&[
                        ("attn_q", "self_attn.q_proj"),
                        ("attn_k", "self_attn.k_proj"),
                        ("attn_v", "self_attn.v_proj"),
                    ]))?,
                    o_proj: w.matrix(&g("attn_output"), &h("self_attn.o_proj"))?,
                },
                post_attention_layernorm: w
                    .vector(&g("ffn_norm"), &h("post_attention_layernorm"))?,
                mlp: Mlp {
                    gate_up: w.stacked(&both(&[
                        ("ffn_gate", "mlp.gate_proj"),
                        ("ffn_up", "mlp.up_proj"),
                    ]))?,
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
        let (host_cos, host_sin) = if device.is_cpu() {
            (
                cos.flatten_all()?.to_vec1::<f32>()?,
                sin.flatten_all()?.to_vec1::<f32>()?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            cos,
            sin,
            host_cos,
            host_sin,
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
            let adapt = |y, target, x: &Tensor| Self::adapt(y, x, index, target, &adapted);
            let [gate, up] = mlp.gate_up.forward::<2>(&h)?;
            let gated = (candle_nn::ops::silu(&adapt(gate, Target::Gate, &h)?)?
                * adapt(up, Target::Up, &h)?)?;
            let down = mlp.down_proj.forward(&gated)?;
            x = (x + adapt(down, Target::Down, &gated)?)?;
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

    /// `y`, the base weights' product of `target` in layer `index` with `x`, plus each
    /// adapter's update of it on its own rows.
    fn adapt(
        mut y: Tensor,
        x: &Tensor,
        index: usize,
        target: Target,
        adapted: &[AdaptedRows<'_>],
    ) -> Result<Tensor> {
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
        let adapt = |y, target, x: &Tensor| Self::adapt(y, x, index, target, adapted);
        let [q, k, v] = attn.qkv.forward::<3>(h)?;
        let q = adapt(q, Target::Q, h)?;
        let k = adapt(k, Target::K, h)?;
        let v = adapt(v, Target::V, h)?;
        let output = |y: &Tensor| adapt(attn.o_proj.forward(y)?, Target::O, y);
        if self.device.is_cpu() {
            return output(&self.host_attention(index, &q, &k, &v, chunks)?);
        }
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
        output(&y)
    }

    /// [`Self::attention`] on the CPU, for projected `q`, `k`, `v` (`[total, …]`): every row
    /// rotated and its keys and values appended to its sequence's cache in place; then the
    /// decoding sequences (one token each) attend all at once in [`host_attention`], and a
    /// sequence reading several prompt tokens through [`Self::attend`], whose matmuls suit
    /// a block of queries. Returns `[total, heads · head_dim]`.
    fn host_attention(
        &self,
        index: usize,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        chunks: &mut [Chunk<'_>],
    ) -> Result<Tensor> {
        let c = &self.config;
        let layout = Heads {
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
            f16: c.f16_attention,
        };
        let (hd, half) = (c.head_dim, c.head_dim / 2);
        let (q_width, kv_width) = (layout.heads * hd, layout.kv_heads * hd);
        let interleaved = c.rope == RopeLayout::Interleaved;
        let mut q = q.flatten_all()?.to_vec1::<f32>()?;
        let mut k = k.flatten_all()?.to_vec1::<f32>()?;
        let mut v = v.flatten_all()?.to_vec1::<f32>()?;
        let mut offset = 0;
        for ch in chunks.iter_mut() {
            let n = ch.tokens.len();
            for i in 0..n {
                let table = (ch.cache.len + i) * half..(ch.cache.len + i + 1) * half;
                let (cos, sin) = (&self.host_cos[table.clone()], &self.host_sin[table]);
                let row = offset + i;
                let q_row = &mut q[row * q_width..(row + 1) * q_width];
                host_attention::rotate(q_row, hd, interleaved, cos, sin);
                let k_row = &mut k[row * kv_width..(row + 1) * kv_width];
                host_attention::rotate(k_row, hd, interleaved, cos, sin);
            }
            let rows = offset * kv_width..(offset + n) * kv_width;
            if layout.f16 {
                host_attention::round_f16(&mut k[rows.clone()]);
                host_attention::round_f16(&mut v[rows.clone()]);
            }
            if ch.cache.host.len() <= index {
                ch.cache.host.resize_with(index + 1, HostKv::default);
            }
            let cache = &mut ch.cache.host[index];
            cache.keys.extend_from_slice(&k[rows.clone()]);
            cache.values.extend_from_slice(&v[rows]);
            offset += n;
        }
        let total = offset;
        let mut out = vec![0f32; total * q_width];
        let mut decoding = Vec::with_capacity(chunks.len());
        let mut rest = out.as_mut_slice();
        let mut offset = 0;
        for ch in chunks.iter() {
            let n = ch.tokens.len();
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(n * q_width);
            rest = tail;
            let query = &q[offset * q_width..(offset + n) * q_width];
            let kv = &ch.cache.host[index];
            if n == 1 {
                decoding.push(Decode {
                    query,
                    kv,
                    out: mine,
                });
            } else {
                let pos = ch.cache.len;
                let len = pos + n;
                let heads = |xs: &[f32], count: usize, rows: usize| -> Result<Tensor> {
                    Tensor::from_slice(xs, (1, rows, count, hd), &self.device)?
                        .transpose(1, 2)?
                        .contiguous()
                };
                let y = self.attend(
                    &heads(query, layout.heads, n)?,
                    &heads(&kv.keys, layout.kv_heads, len)?,
                    &heads(&kv.values, layout.kv_heads, len)?,
                    pos,
                )?;
                let y = y.transpose(1, 2)?.flatten_all()?.to_vec1::<f32>()?;
                mine.copy_from_slice(&y);
            }
            offset += n;
        }
        host_attention::attend_decoding(layout, decoding);
        Tensor::from_vec(out, (total, q_width), &self.device)
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
