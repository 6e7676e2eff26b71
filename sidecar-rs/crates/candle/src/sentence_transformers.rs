//! The sentence-transformers files that sit beside a Hugging Face checkpoint and say how its
//! token states become a sentence embedding (<https://sbert.net/docs/package_reference/sentence_transformer/models.html>):
//! `modules.json` lists the pipeline, `1_Pooling/config.json` picks the pooling,
//! `sentence_bert_config.json` caps the input length.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::{LoadError, Pooling};

const TRANSFORMER: &str = "sentence_transformers.models.Transformer";
const POOLING: &str = "sentence_transformers.models.Pooling";
const NORMALIZE: &str = "sentence_transformers.models.Normalize";

/// What the sentence-transformers files of a model directory ask for. Every file is optional;
/// a bare Hugging Face checkpoint gets what sentence-transformers itself would give it: mean
/// pooling, no normalisation, the encoder's own length limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentenceTransformersConfig {
    /// How token states are pooled.
    pub pooling: Pooling,
    /// Whether pooled vectors are scaled to unit L2 norm.
    pub normalize: bool,
    /// `max_seq_length`, when `sentence_bert_config.json` sets it.
    pub max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// `1_Pooling/config.json`: one flag per pooling mode, exactly one of them set.
#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

impl SentenceTransformersConfig {
    /// Reads the sentence-transformers files of `dir`.
    pub fn read(dir: &Path) -> Result<Self, LoadError> {
        let modules: Option<Vec<Module>> = read_optional_json(&dir.join("modules.json"))?;
        let (pooling_dir, normalize) = match &modules {
            Some(modules) => {
                for module in modules {
                    // A Dense or other projection module would change the embedding; running
                    // without it would return vectors that silently disagree with the reference.
                    if ![TRANSFORMER, POOLING, NORMALIZE].contains(&module.kind.as_str()) {
                        return Err(LoadError::Unsupported(format!(
                            "sentence-transformers module `{}` in modules.json",
                            module.kind
                        )));
                    }
                }
                let pooling_dir = modules
                    .iter()
                    .find(|m| m.kind == POOLING)
                    .map(|m| dir.join(&m.path));
                let normalize = modules.iter().any(|m| m.kind == NORMALIZE);
                (pooling_dir, normalize)
            }
            None => (Some(dir.join("1_Pooling")), false),
        };

        let pooling = match pooling_dir {
            Some(pooling_dir) => {
                let path = pooling_dir.join("config.json");
                match read_optional_json::<PoolingConfig>(&path)? {
                    Some(config) => config.pooling(&path)?,
                    None => Pooling::Mean,
                }
            }
            None => Pooling::Mean,
        };

        let max_seq_length =
            read_optional_json::<SentenceBertConfig>(&dir.join("sentence_bert_config.json"))?
                .and_then(|c| c.max_seq_length);

        Ok(Self {
            pooling,
            normalize,
            max_seq_length,
        })
    }
}

impl PoolingConfig {
    fn pooling(&self, path: &Path) -> Result<Pooling, LoadError> {
        let modes = [
            (self.pooling_mode_cls_token, Some(Pooling::Cls), "cls_token"),
            (
                self.pooling_mode_mean_tokens,
                Some(Pooling::Mean),
                "mean_tokens",
            ),
            (self.pooling_mode_max_tokens, None, "max_tokens"),
            (
                self.pooling_mode_mean_sqrt_len_tokens,
                None,
                "mean_sqrt_len_tokens",
            ),
            (
                self.pooling_mode_weightedmean_tokens,
                None,
                "weightedmean_tokens",
            ),
            (self.pooling_mode_lasttoken, None, "lasttoken"),
        ];
        let set: Vec<_> = modes.iter().filter(|(on, _, _)| *on).collect();
        match set.as_slice() {
            [(_, Some(pooling), _)] => Ok(*pooling),
            [(_, None, name)] => Err(LoadError::Unsupported(format!(
                "pooling mode `{name}` in {}; only mean_tokens and cls_token are supported",
                path.display()
            ))),
            _ => Err(LoadError::Unsupported(format!(
                "{} must enable exactly one pooling mode, found {}",
                path.display(),
                set.len()
            ))),
        }
    }
}

/// Parses `path` as JSON, or returns `None` when the file does not exist.
pub(crate) fn read_optional_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, LoadError> {
    match std::fs::read(path) {
        Ok(bytes) => parse_json(path, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LoadError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Parses `path` as JSON; a missing file is an error.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: PathBuf::from(path),
        source,
    })?;
    parse_json(path, &bytes)
}

fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, LoadError> {
    serde_json::from_slice(bytes).map_err(|source| LoadError::Config {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("shoal-st-config-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        dir
    }

    fn write(dir: &Path, file: &str, body: &str) {
        std::fs::write(dir.join(file), body).unwrap();
    }

    #[test]
    fn bare_checkpoint_gets_mean_pooling_without_normalisation() {
        let dir = scratch("bare");
        let config = SentenceTransformersConfig::read(&dir).unwrap();
        assert_eq!(
            config,
            SentenceTransformersConfig {
                pooling: Pooling::Mean,
                normalize: false,
                max_seq_length: None
            }
        );
    }

    #[test]
    fn reads_cls_normalize_and_length() {
        let dir = scratch("cls");
        write(
            &dir,
            "modules.json",
            &format!(
                r#"[{{"path":"","type":"{TRANSFORMER}"}},{{"path":"1_Pooling","type":"{POOLING}"}},{{"path":"2_Normalize","type":"{NORMALIZE}"}}]"#
            ),
        );
        write(
            &dir,
            "1_Pooling/config.json",
            r#"{"pooling_mode_cls_token": true}"#,
        );
        write(
            &dir,
            "sentence_bert_config.json",
            r#"{"max_seq_length": 128}"#,
        );
        let config = SentenceTransformersConfig::read(&dir).unwrap();
        assert_eq!(config.pooling, Pooling::Cls);
        assert!(config.normalize);
        assert_eq!(config.max_seq_length, Some(128));
    }

    #[test]
    fn rejects_what_it_cannot_run() {
        let dir = scratch("max");
        write(
            &dir,
            "1_Pooling/config.json",
            r#"{"pooling_mode_max_tokens": true}"#,
        );
        let err = SentenceTransformersConfig::read(&dir).unwrap_err();
        assert!(err.to_string().contains("max_tokens"), "{err}");

        let dir = scratch("dense");
        write(
            &dir,
            "modules.json",
            r#"[{"path":"2_Dense","type":"sentence_transformers.models.Dense"}]"#,
        );
        let err = SentenceTransformersConfig::read(&dir).unwrap_err();
        assert!(err.to_string().contains("Dense"), "{err}");

        let dir = scratch("broken");
        write(&dir, "sentence_bert_config.json", "{not json");
        assert!(matches!(
            SentenceTransformersConfig::read(&dir),
            Err(LoadError::Config { .. })
        ));
    }
}
