//! LoRA adapters for the Llama decoder (Hu et al., "LoRA: Low-Rank Adaptation of Large Language
//! Models", <https://arxiv.org/abs/2106.09685>), read from a PEFT adapter directory as
//! `save_pretrained` writes it: `adapter_config.json` and `adapter_model.safetensors`.
//!
//! An adapted projection computes `W x + (α / r) · B (A x)` with `A: [r, in]` and `B: [out, r]`
//! (`α / √r` with rsLoRA). The base weights are never touched, so one resident model serves
//! any number of adapters, and sequences with different adapters share a forward pass: the
//! model applies each adapter's low-rank update to its own sequences' rows only.
//!
//! Tensor names follow PEFT for a `LlamaForCausalLM`:
//! `base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight` and so on. Everything in
//! the files is checked against the base model before anything is kept: the config's options
//! (only plain LoRA is supported), every tensor's name, dtype and shape, completeness (every
//! adapted layer has both matrices of every target module) and finiteness.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use candle_core::{DType, Device, Result, Tensor};
use serde::Deserialize;

use super::llama_config::{Config, RopeLayout};
use crate::LoadError;

/// Largest rank accepted. Adapters are meant to be small next to their base; a rank this high
/// already holds more parameters than some of the models they adapt.
pub const MAX_RANK: usize = 256;

/// Largest adapter weights file read, bytes.
const MAX_WEIGHTS_BYTES: u64 = 1 << 30;

/// The config file PEFT writes.
pub const CONFIG_FILE: &str = "adapter_config.json";
/// The weights file PEFT writes.
pub const WEIGHTS_FILE: &str = "adapter_model.safetensors";

/// A projection an adapter may target, by its transformers name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Q,
    K,
    V,
    O,
    Gate,
    Up,
    Down,
}

impl Target {
    const ALL: [Target; 7] = [
        Target::Q,
        Target::K,
        Target::V,
        Target::O,
        Target::Gate,
        Target::Up,
        Target::Down,
    ];

    fn name(self) -> &'static str {
        match self {
            Target::Q => "q_proj",
            Target::K => "k_proj",
            Target::V => "v_proj",
            Target::O => "o_proj",
            Target::Gate => "gate_proj",
            Target::Up => "up_proj",
            Target::Down => "down_proj",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The submodule of a decoder layer the projection lives in.
    fn block(self) -> &'static str {
        match self {
            Target::Q | Target::K | Target::V | Target::O => "self_attn",
            Target::Gate | Target::Up | Target::Down => "mlp",
        }
    }

    /// `(in, out)` features of the projection in a model of `config`.
    fn features(self, c: &Config) -> (usize, usize) {
        let q = c.num_attention_heads * c.head_dim;
        let kv = c.num_key_value_heads * c.head_dim;
        match self {
            Target::Q => (c.hidden_size, q),
            Target::K | Target::V => (c.hidden_size, kv),
            Target::O => (q, c.hidden_size),
            Target::Gate | Target::Up => (c.hidden_size, c.intermediate_size),
            Target::Down => (c.intermediate_size, c.hidden_size),
        }
    }
}

/// One adapted projection: `x · a_t · b_t` is its update, the scale folded into `b_t`.
#[derive(Debug)]
pub(crate) struct LoraPair {
    /// `Aᵀ`, `[in, r]`.
    a_t: Tensor,
    /// `(α / r) · Bᵀ`, `[r, out]`.
    b_t: Tensor,
}

impl LoraPair {
    /// The update for rows `x` (`[rows, in]`), `[rows, out]`.
    pub(crate) fn delta(&self, x: &Tensor) -> Result<Tensor> {
        x.matmul(&self.a_t)?.matmul(&self.b_t)
    }
}

/// A loaded adapter: per decoder layer, the pairs of the projections it targets.
#[derive(Debug)]
pub struct LoraAdapter {
    layers: Vec<HashMap<Target, LoraPair>>,
    rank: usize,
    memory_bytes: u64,
}

/// The subset of PEFT's `LoraConfig` that decides what the weights mean.
#[derive(Debug, Deserialize)]
struct PeftConfig {
    peft_type: Option<String>,
    task_type: Option<String>,
    r: usize,
    lora_alpha: f64,
    target_modules: serde_json::Value,
    bias: Option<String>,
    use_rslora: Option<bool>,
    layers_to_transform: Option<serde_json::Value>,
}

/// PEFT options that change what the weights compute or which modules they reach, and that
/// this runtime does not implement: each must be absent, `null`, `false` or empty.
const UNSUPPORTED: [&str; 13] = [
    "use_dora",
    "fan_in_fan_out",
    "modules_to_save",
    "rank_pattern",
    "alpha_pattern",
    "lora_bias",
    "layer_replication",
    "target_parameters",
    "trainable_token_indices",
    "exclude_modules",
    "alora_invocation_tokens",
    "use_qalora",
    "use_bdlora",
];

fn invalid(message: impl Into<String>) -> LoadError {
    LoadError::Adapter(message.into())
}

/// Whether a config value leaves an option off: `null`, `false`, or an empty object or array.
fn off(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Null | serde_json::Value::Bool(false) => true,
        serde_json::Value::Object(m) => m.is_empty(),
        serde_json::Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

impl PeftConfig {
    fn read(dir: &Path) -> std::result::Result<Self, LoadError> {
        let path = dir.join(CONFIG_FILE);
        let bytes = std::fs::read(&path).map_err(|source| LoadError::Io {
            path: path.clone(),
            source,
        })?;
        let raw: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|source| LoadError::Config {
                path: path.clone(),
                source,
            })?;
        Self::parse(raw).map_err(|e| match e {
            ParseError::Json(source) => LoadError::Config { path, source },
            ParseError::Unsupported(e) => e,
        })
    }

    fn parse(raw: serde_json::Value) -> std::result::Result<Self, ParseError> {
        let serde_json::Value::Object(map) = &raw else {
            return Err(ParseError::Unsupported(invalid(format!(
                "{CONFIG_FILE} must hold a JSON object"
            ))));
        };
        if let Some(key) = UNSUPPORTED
            .iter()
            .find(|key| map.get(**key).is_some_and(|v| !off(v)))
        {
            return Err(ParseError::Unsupported(invalid(format!(
                "`{key}` is not supported; only plain LoRA on the projections is"
            ))));
        }
        serde_json::from_value(raw).map_err(ParseError::Json)
    }

    /// The targets, the adapted layers and the scale, once every option is known to be plain
    /// LoRA on a model of `layers` layers.
    fn check(
        &self,
        layers: usize,
    ) -> std::result::Result<(BTreeSet<Target>, BTreeSet<usize>, f64), LoadError> {
        if self.peft_type.as_deref().is_some_and(|t| t != "LORA") {
            return Err(invalid(format!(
                "peft_type `{}`; only LORA is supported",
                self.peft_type.as_deref().unwrap_or_default()
            )));
        }
        if self.task_type.as_deref().is_some_and(|t| t != "CAUSAL_LM") {
            return Err(invalid(format!(
                "task_type `{}`; adapters of generators are CAUSAL_LM",
                self.task_type.as_deref().unwrap_or_default()
            )));
        }
        if self.r == 0 || self.r > MAX_RANK {
            return Err(invalid(format!(
                "r is {}; it must be 1..={MAX_RANK}",
                self.r
            )));
        }
        if !(self.lora_alpha.is_finite() && self.lora_alpha > 0.0) {
            return Err(invalid("lora_alpha must be a positive number"));
        }
        if self.bias.as_deref().is_some_and(|b| b != "none") {
            return Err(invalid(
                "bias must be `none`: trained biases are not supported",
            ));
        }
        let serde_json::Value::Array(names) = &self.target_modules else {
            return Err(invalid(
                "target_modules must be a list of module names (a regular expression is not \
                 supported)",
            ));
        };
        let mut targets = BTreeSet::new();
        for name in names {
            let target = name.as_str().and_then(Target::from_name).ok_or_else(|| {
                invalid(format!(
                    "target module {name}; supported: {}",
                    Target::ALL.map(Target::name).join(", ")
                ))
            })?;
            targets.insert(target);
        }
        if targets.is_empty() {
            return Err(invalid("target_modules is empty"));
        }
        let adapted: BTreeSet<usize> = match &self.layers_to_transform {
            None | Some(serde_json::Value::Null) => (0..layers).collect(),
            Some(serde_json::Value::Number(n)) => {
                n.as_u64().map(|i| i as usize).into_iter().collect()
            }
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_u64().map(|i| i as usize).unwrap_or(usize::MAX))
                .collect(),
            Some(_) => BTreeSet::from([usize::MAX]),
        };
        if adapted.is_empty() || adapted.iter().any(|&i| i >= layers) {
            return Err(invalid(format!(
                "layers_to_transform must name layers 0..{layers}"
            )));
        }
        let scale = if self.use_rslora == Some(true) {
            self.lora_alpha / (self.r as f64).sqrt()
        } else {
            self.lora_alpha / self.r as f64
        };
        Ok((targets, adapted, scale))
    }
}

/// Why `adapter_config.json` was refused.
enum ParseError {
    Json(serde_json::Error),
    Unsupported(LoadError),
}

/// `(layer, target, is_b)` of a PEFT tensor name, or `None` for any other name.
fn parse_name(name: &str) -> Option<(usize, Target, bool)> {
    let rest = name.strip_prefix("base_model.model.model.layers.")?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (block, rest) = rest.split_once('.')?;
    let (module, rest) = rest.split_once('.')?;
    let target = Target::from_name(module).filter(|t| t.block() == block)?;
    let is_b = match rest {
        "lora_A.weight" => false,
        "lora_B.weight" => true,
        _ => return None,
    };
    Some((layer, target, is_b))
}

impl LoraAdapter {
    /// Reads and checks the PEFT adapter in `dir` against the base model's `config`, and puts
    /// its matrices on `device` in f32.
    pub fn load(
        dir: &Path,
        config: &Config,
        device: &Device,
    ) -> std::result::Result<Self, LoadError> {
        let peft = PeftConfig::read(dir)?;
        let (targets, adapted, scale) = peft.check(config.num_hidden_layers)?;
        let r = peft.r;

        let path = dir.join(WEIGHTS_FILE);
        let size = std::fs::metadata(&path)
            .map_err(|source| LoadError::Io {
                path: path.clone(),
                source,
            })?
            .len();
        if size > MAX_WEIGHTS_BYTES {
            return Err(invalid(format!(
                "{WEIGHTS_FILE} is {size} bytes, over the {MAX_WEIGHTS_BYTES}-byte limit"
            )));
        }
        // Read on the CPU and checked there: nothing reaches the device until all of it passes.
        let tensors = candle_core::safetensors::load(&path, &Device::Cpu)?;
        let mut dtypes = BTreeSet::new();
        let mut found: HashMap<(usize, Target), [Option<Tensor>; 2]> = HashMap::new();
        for (name, tensor) in tensors {
            let (layer, target, is_b) =
                parse_name(&name).ok_or_else(|| invalid(format!("unexpected tensor `{name}`")))?;
            if !targets.contains(&target) || !adapted.contains(&layer) {
                return Err(invalid(format!(
                    "tensor `{name}` adapts a module or layer the config does not target"
                )));
            }
            if !matches!(tensor.dtype(), DType::F32 | DType::F16 | DType::BF16) {
                return Err(invalid(format!(
                    "tensor `{name}` is {:?}; adapters are F32, F16 or BF16",
                    tensor.dtype()
                )));
            }
            dtypes.insert(tensor.dtype().as_str());
            let (features_in, features_out) = target.features(config);
            let expected = if is_b {
                (features_out, r)
            } else {
                (r, features_in)
            };
            if tensor.dims() != [expected.0, expected.1] {
                return Err(invalid(format!(
                    "tensor `{name}` has shape {:?}, the base model needs [{}, {}]",
                    tensor.dims(),
                    expected.0,
                    expected.1
                )));
            }
            let tensor = tensor.to_dtype(DType::F32)?;
            if !tensor
                .flatten_all()?
                .to_vec1::<f32>()?
                .iter()
                .all(|v| v.is_finite())
            {
                return Err(invalid(format!(
                    "tensor `{name}` holds NaN or infinite values"
                )));
            }
            found.entry((layer, target)).or_default()[usize::from(is_b)] = Some(tensor);
        }
        if dtypes.len() > 1 {
            return Err(invalid(format!("tensors mix dtypes {dtypes:?}")));
        }

        let mut layers: Vec<HashMap<Target, LoraPair>> = (0..config.num_hidden_layers)
            .map(|_| HashMap::new())
            .collect();
        let mut memory_bytes = 0u64;
        for &layer in &adapted {
            for &target in &targets {
                let [Some(a), Some(b)] = found.remove(&(layer, target)).unwrap_or_default() else {
                    return Err(invalid(format!(
                        "layer {layer} {} lacks lora_A or lora_B",
                        target.name()
                    )));
                };
                let b = permute_for_rope(b, target, config)?;
                let pair = LoraPair {
                    a_t: a.t()?.contiguous()?.to_device(device)?,
                    b_t: (b.t()? * scale)?.contiguous()?.to_device(device)?,
                };
                memory_bytes += ((pair.a_t.elem_count() + pair.b_t.elem_count()) * 4) as u64;
                layers[layer].insert(target, pair);
            }
        }
        Ok(Self {
            layers,
            rank: r,
            memory_bytes,
        })
    }

    /// The pair adapting `target` of decoder layer `layer`, if the adapter has one.
    pub(crate) fn pair(&self, layer: usize, target: Target) -> Option<&LoraPair> {
        self.layers.get(layer)?.get(&target)
    }

    /// The adapter's rank `r`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Bytes its matrices take on the device.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }
}

/// A GGUF model's query and key rows were permuted by llama.cpp's converter so that RoPE
/// rotates adjacent pairs ([`RopeLayout::Interleaved`]); `B`'s rows are outputs of those same
/// projections and are permuted the same way, as llama.cpp's own LoRA converter does.
fn permute_for_rope(b: Tensor, target: Target, c: &Config) -> Result<Tensor> {
    let heads = match (c.rope, target) {
        (RopeLayout::Interleaved, Target::Q) => c.num_attention_heads,
        (RopeLayout::Interleaved, Target::K) => c.num_key_value_heads,
        _ => return Ok(b),
    };
    let (out, r) = b.dims2()?;
    b.reshape((heads, 2, c.head_dim / 2, r))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape((out, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_only_in_peft_layout() {
        assert_eq!(
            parse_name("base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight"),
            Some((3, Target::Q, false))
        );
        assert_eq!(
            parse_name("base_model.model.model.layers.0.mlp.down_proj.lora_B.weight"),
            Some((0, Target::Down, true))
        );
        for bad in [
            "base_model.model.model.layers.0.mlp.q_proj.lora_A.weight",
            "base_model.model.model.layers.x.self_attn.q_proj.lora_A.weight",
            "base_model.model.model.layers.0.self_attn.q_proj.lora_A.bias",
            "base_model.model.lm_head.lora_A.weight",
            "model.layers.0.self_attn.q_proj.weight",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    fn config(json: serde_json::Value) -> std::result::Result<PeftConfig, String> {
        PeftConfig::parse(json).map_err(|e| match e {
            ParseError::Json(e) => e.to_string(),
            ParseError::Unsupported(e) => e.to_string(),
        })
    }

    #[test]
    fn plain_lora_options_pass_and_the_rest_are_refused() {
        let ok = config(serde_json::json!({
            "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 8, "lora_alpha": 16,
            "target_modules": ["q_proj", "v_proj"], "bias": "none", "modules_to_save": null,
            "layers_to_transform": [0, 2], "rank_pattern": {}, "alpha_pattern": {},
            "use_dora": false, "lora_bias": false, "inference_mode": true
        }))
        .unwrap();
        let (targets, layers, scale) = ok.check(4).unwrap();
        assert_eq!(targets, BTreeSet::from([Target::Q, Target::V]));
        assert_eq!(layers, BTreeSet::from([0, 2]));
        assert_eq!(scale, 2.0);
        let rs = config(serde_json::json!({
            "r": 4, "lora_alpha": 8, "target_modules": ["o_proj"], "use_rslora": true
        }))
        .unwrap();
        assert_eq!(rs.check(2).unwrap().2, 4.0);

        let base = serde_json::json!({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj"]});
        let cases = [
            ("peft_type", serde_json::json!("IA3"), "only LORA"),
            ("task_type", serde_json::json!("SEQ_CLS"), "CAUSAL_LM"),
            ("r", serde_json::json!(0), "r is 0"),
            ("r", serde_json::json!(MAX_RANK + 1), "r is"),
            ("r", serde_json::json!("eight"), "invalid type"),
            ("lora_alpha", serde_json::json!(-1), "lora_alpha"),
            ("bias", serde_json::json!("all"), "bias"),
            ("use_dora", serde_json::json!(true), "`use_dora`"),
            (
                "fan_in_fan_out",
                serde_json::json!(true),
                "`fan_in_fan_out`",
            ),
            (
                "modules_to_save",
                serde_json::json!(["lm_head"]),
                "`modules_to_save`",
            ),
            (
                "rank_pattern",
                serde_json::json!({"q_proj": 4}),
                "`rank_pattern`",
            ),
            ("lora_bias", serde_json::json!(true), "`lora_bias`"),
            (
                "alora_invocation_tokens",
                serde_json::json!([1, 2]),
                "`alora_invocation_tokens`",
            ),
            (
                "target_modules",
                serde_json::json!(".*proj"),
                "list of module names",
            ),
            (
                "target_modules",
                serde_json::json!(["lm_head"]),
                "target module",
            ),
            ("target_modules", serde_json::json!([]), "empty"),
            (
                "layers_to_transform",
                serde_json::json!([9]),
                "layers_to_transform",
            ),
            (
                "layers_to_transform",
                serde_json::json!("all"),
                "layers_to_transform",
            ),
        ];
        for (key, value, message) in cases {
            let mut json = base.clone();
            json[key] = value;
            let err = config(json)
                .and_then(|c| c.check(4).map_err(|e| e.to_string()))
                .unwrap_err();
            assert!(err.contains(message), "{key}: {err}");
        }
    }
}
