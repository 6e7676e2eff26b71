use std::path::Path;

use candle_core::Device;
use shoal_sidecar_core::{Backend, DeviceSpec};

use crate::generator::LlamaGenerator;
use crate::models::llama::GgufWeightMode;
use crate::sentence_transformers::read_json;
use crate::{CandleBackend, LoadError, Precision};

/// The weights file of a model directory in GGUF layout (`libs/model-sources` names it so).
const GGUF_FILE: &str = "model.gguf";

/// How one model is loaded, beyond where its files are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// A GGUF model's matrices: quantized as stored (the default) or expanded to f32.
    /// Safetensors weights are always computed in f32, so this changes nothing for them.
    pub gguf_weights: GgufWeightMode,
    /// What an encoder computes in. Generators compute in f32 (or on their quantized
    /// matrices) and refuse any other precision.
    pub precision: Precision,
}

/// The device every model of one sidecar runs on. Created once at start so that a missing GPU
/// fails the process before it reports ready, and so that all models share one CUDA context.
#[derive(Debug, Clone)]
pub struct CandleRuntime {
    spec: DeviceSpec,
    device: Device,
}

impl CandleRuntime {
    /// Opens `spec`. CUDA devices need the crate's `cuda` feature and a visible GPU.
    pub fn open(spec: DeviceSpec) -> Result<Self, LoadError> {
        let device = match spec {
            DeviceSpec::Cpu => Device::Cpu,
            DeviceSpec::Cuda(ordinal) => {
                if !cfg!(feature = "cuda") {
                    return Err(LoadError::Device {
                        device: spec.to_string(),
                        reason: "this sidecar was built without the `cuda` feature".into(),
                    });
                }
                Device::new_cuda(ordinal).map_err(|e| LoadError::Device {
                    device: spec.to_string(),
                    reason: e.to_string(),
                })?
            }
        };
        Ok(Self { spec, device })
    }

    /// The protocol's `backend` name: `candle-cpu` or `candle-cuda`.
    pub fn backend_name(&self) -> &'static str {
        match self.spec {
            DeviceSpec::Cpu => "candle-cpu",
            DeviceSpec::Cuda(_) => "candle-cuda",
        }
    }

    /// The device this runtime was opened on.
    pub fn device_spec(&self) -> DeviceSpec {
        self.spec
    }

    /// Loads the encoder in directory `dir` onto this runtime's device, computing in
    /// `precision`.
    pub fn load(&self, dir: &Path, precision: Precision) -> Result<CandleBackend, LoadError> {
        CandleBackend::load(dir, &self.device, precision)
    }

    /// Loads whatever `path` holds onto this runtime's device: a GGUF file is a generative
    /// Llama-family model, and so is a directory holding `model.gguf` and no `config.json`
    /// (the layout model-sources gives a GGUF model, whose tokenizer and chat template live in
    /// its metadata); any other directory is a generator when its `config.json` says `llama`,
    /// and an encoder ([`CandleRuntime::load`]) otherwise.
    pub fn load_model(
        &self,
        path: &Path,
        options: LoadOptions,
    ) -> Result<Box<dyn Backend + Send>, LoadError> {
        let generator_precision = || match options.precision {
            Precision::F32 => Ok(()),
            other => Err(LoadError::Unsupported(format!(
                "dtype {} for a generator: generators compute in f32 (or on a GGUF's quantized \
                 matrices); dtype applies to encoders",
                other.as_str()
            ))),
        };
        let gguf = |file: &Path| {
            generator_precision()?;
            LlamaGenerator::load_gguf(file, &self.device, options.gguf_weights)
        };
        if path.is_file() {
            return Ok(Box::new(gguf(path)?));
        }
        let config_path = path.join("config.json");
        let gguf_path = path.join(GGUF_FILE);
        if !config_path.exists() && gguf_path.is_file() {
            return Ok(Box::new(gguf(&gguf_path)?));
        }
        if config_path.is_file() {
            let config: serde_json::Value = read_json(&config_path)?;
            if is_llama(&config) {
                generator_precision()?;
                return Ok(Box::new(LlamaGenerator::load_dir(
                    path,
                    config,
                    &self.device,
                )?));
            }
        }
        Ok(Box::new(self.load(path, options.precision)?))
    }
}

/// Whether a transformers `config.json` describes a Llama-family causal LM.
fn is_llama(config: &serde_json::Value) -> bool {
    config["model_type"] == "llama"
        || config["architectures"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "LlamaForCausalLM"))
}
