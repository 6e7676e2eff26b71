//! One file per architecture. Each reads like its paper and names its weights exactly as the
//! upstream checkpoint does; [`Architecture::detect`] picks one from `config.json`.

pub mod bert;
pub mod bert_heads;
mod encoder;
mod host_attention;
mod kernel_layout;
pub mod llama;
mod llama_config;
pub mod lora;
mod packing;

use candle_nn::VarBuilder;

pub use encoder::{Encoder, EncoderShape};

use crate::LoadError;

/// The architectures this runtime can build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// [`bert::BertModel`].
    Bert,
}

impl Architecture {
    /// Chooses from `model_type`, falling back to `architectures` for configs that predate it.
    pub fn detect(config: &serde_json::Value) -> std::result::Result<Self, LoadError> {
        let model_type = config.get("model_type").and_then(|v| v.as_str());
        let architectures: Vec<&str> = config
            .get("architectures")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        match model_type {
            Some("bert") => Ok(Architecture::Bert),
            None if architectures.iter().any(|a| a.starts_with("Bert")) => Ok(Architecture::Bert),
            _ => Err(LoadError::Unsupported(format!(
                "model_type {} (architectures {architectures:?}); supported: bert",
                model_type.map_or_else(|| "missing".to_owned(), |t| format!("`{t}`"))
            ))),
        }
    }

    /// Builds the encoder from `config` and the weights behind `vb`.
    pub fn build(
        self,
        config: serde_json::Value,
        vb: VarBuilder,
    ) -> std::result::Result<(Box<dyn Encoder>, EncoderShape), LoadError> {
        match self {
            Architecture::Bert => {
                let config: bert::Config =
                    serde_json::from_value(config).map_err(|source| LoadError::Config {
                        path: "config.json".into(),
                        source,
                    })?;
                let shape = EncoderShape {
                    hidden_size: config.hidden_size,
                    max_position_embeddings: config.max_position_embeddings,
                };
                Ok((Box::new(bert::BertModel::load(vb, &config)?), shape))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detects_bert_and_rejects_the_rest() {
        assert_eq!(
            Architecture::detect(&json!({"model_type": "bert"})).unwrap(),
            Architecture::Bert
        );
        assert_eq!(
            Architecture::detect(&json!({"architectures": ["BertForMaskedLM"]})).unwrap(),
            Architecture::Bert
        );
        let err = Architecture::detect(&json!({"model_type": "llama"})).unwrap_err();
        assert!(err.to_string().contains("`llama`"), "{err}");
        assert!(Architecture::detect(&json!({})).is_err());
    }
}
