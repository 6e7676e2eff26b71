//! The text side of a generative model: tokenizer, special tokens, chat template and the raw
//! bytes behind every token, read either from GGUF metadata (`tokenizer.ggml.*`, as llama.cpp
//! writes and reads them) or from a Hugging Face directory (`tokenizer.json`,
//! `tokenizer_config.json`, `generation_config.json`).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use tokenizers::Tokenizer;

use crate::LoadError;
use crate::chat_template::ChatTemplate;
use crate::detokenize::{TokenSpelling, token_bytes};
use crate::gguf::Gguf;
use crate::sentence_transformers::read_optional_json;

/// `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_attr` predecessors).
const TOKEN_TYPE_CONTROL: i64 = 3;
const TOKEN_TYPE_USER_DEFINED: i64 = 4;

/// The GPT-2 pre-tokenizer split (`'s|'t|…|\s+(?!\S)|\s+`), which tokenizers' `ByteLevel`
/// applies itself; llama.cpp spells the same expression out per `tokenizer.ggml.pre`.
const GPT2_PRE: &[&str] = &["gpt2", "mpt", "olmo", "jais", "default"];
/// Pre-tokenizers that isolate every digit before the GPT-2 split (SmolLM, StarCoder, …).
const DIGITS_THEN_GPT2_PRE: &[&str] = &[
    "smollm",
    "starcoder",
    "refact",
    "command-r",
    "codeshell",
    "exaone",
    "minerva",
];

/// Control tokens that end a turn although the file names another token as EOS; llama.cpp
/// treats the same texts as end-of-generation.
const END_OF_TURN_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
];

/// Everything needed to turn a request into token ids and token ids back into text.
pub(crate) struct Vocab {
    pub tokenizer: Tokenizer,
    /// The UTF-8 bytes each token stands for; empty for control tokens, which print nothing.
    pub token_bytes: Vec<Vec<u8>>,
    /// Prepended to a raw prompt when the model asks for it.
    pub bos: Option<u32>,
    /// Tokens that end generation.
    pub eos: BTreeSet<u32>,
    /// Renders chat messages; `None` when the model ships no template.
    pub chat_template: Option<ChatTemplate>,
    /// Whether `tokenizer` itself adds BOS (a Hugging Face post-processor), so that it must not
    /// be prepended again.
    pub tokenizer_adds_bos: bool,
}

impl Vocab {
    /// Reads the tokenizer that llama.cpp would build from `gguf`'s metadata.
    pub(crate) fn from_gguf(gguf: &Gguf) -> Result<Self, LoadError> {
        let model = gguf.str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(LoadError::Unsupported(format!(
                "{}: tokenizer.ggml.model `{model}`; supported: gpt2 (byte-level BPE)",
                gguf.path().display()
            )));
        }
        let pre = gguf.opt_str("tokenizer.ggml.pre")?.unwrap_or("default");
        let pre_tokenizer = if GPT2_PRE.contains(&pre) {
            json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})
        } else if DIGITS_THEN_GPT2_PRE.contains(&pre) {
            json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": "\\p{N}"}, "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            ]})
        } else {
            return Err(LoadError::Unsupported(format!(
                "{}: tokenizer.ggml.pre `{pre}` is not a supported pre-tokenizer",
                gguf.path().display()
            )));
        };
        let tokens = gguf.strings("tokenizer.ggml.tokens")?;
        let merges = gguf.strings("tokenizer.ggml.merges")?;
        let types = gguf
            .opt_ints("tokenizer.ggml.token_type")?
            .unwrap_or_default();
        let type_of = |id: usize| types.get(id).copied().unwrap_or(1);

        let vocab: serde_json::Map<String, Value> = tokens
            .iter()
            .enumerate()
            .map(|(id, t)| ((*t).to_owned(), json!(id)))
            .collect();
        let merges: Vec<Value> = merges.iter().map(|m| json!(m)).collect();
        let added: Vec<Value> = tokens
            .iter()
            .enumerate()
            .filter(|&(id, _)| matches!(type_of(id), TOKEN_TYPE_CONTROL | TOKEN_TYPE_USER_DEFINED))
            .map(|(id, t)| {
                json!({"id": id, "content": t, "single_word": false, "lstrip": false,
                       "rstrip": false, "normalized": false,
                       "special": type_of(id) == TOKEN_TYPE_CONTROL})
            })
            .collect();
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": pre_tokenizer,
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null,
                      "continuing_subword_prefix": null, "end_of_word_suffix": null,
                      "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                      "vocab": vocab, "merges": merges},
        });
        let tokenizer = Tokenizer::from_bytes(spec.to_string())
            .map_err(|e| LoadError::Tokenizer(format!("{}: {e}", gguf.path().display())))?;

        let token_bytes = tokens
            .iter()
            .enumerate()
            .map(|(id, t)| {
                if type_of(id) == TOKEN_TYPE_CONTROL {
                    Vec::new()
                } else {
                    token_bytes(t, TokenSpelling::ByteLevel)
                }
            })
            .collect();

        let id = |key: &str| -> Result<Option<u32>, LoadError> {
            Ok(gguf
                .opt_usize(key)?
                .filter(|&id| id < tokens.len())
                .map(|id| id as u32))
        };
        let bos = id("tokenizer.ggml.bos_token_id")?;
        let add_bos = gguf
            .opt_bool("tokenizer.ggml.add_bos_token")?
            .unwrap_or(false);
        let mut eos: BTreeSet<u32> = [
            id("tokenizer.ggml.eos_token_id")?,
            id("tokenizer.ggml.eot_token_id")?,
            id("tokenizer.ggml.eom_token_id")?,
        ]
        .into_iter()
        .flatten()
        .collect();
        eos.extend(
            tokens
                .iter()
                .enumerate()
                .filter(|&(id, t)| {
                    type_of(id) == TOKEN_TYPE_CONTROL && END_OF_TURN_TEXTS.contains(t)
                })
                .map(|(id, _)| id as u32),
        );
        let text_of = |id: Option<u32>| {
            id.and_then(|i| tokens.get(i as usize))
                .map(|t| (*t).to_owned())
        };
        let chat_template = gguf
            .opt_str("tokenizer.chat_template")?
            .map(|source| {
                ChatTemplate::new(
                    source,
                    text_of(bos).unwrap_or_default(),
                    text_of(id("tokenizer.ggml.eos_token_id")?).unwrap_or_default(),
                )
            })
            .transpose()?;
        Ok(Self {
            tokenizer,
            token_bytes,
            bos: bos.filter(|_| add_bos),
            eos,
            chat_template,
            tokenizer_adds_bos: false,
        })
    }

    /// Reads `tokenizer.json`, `tokenizer_config.json` and the EOS ids of a Hugging Face
    /// checkpoint directory.
    pub(crate) fn from_dir(dir: &Path, config: &Value) -> Result<Self, LoadError> {
        let path = dir.join("tokenizer.json");
        if !path.is_file() {
            return Err(LoadError::Io {
                path,
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no tokenizer.json"),
            });
        }
        let raw: Value = crate::sentence_transformers::read_json(&path)?;
        let mut tokenizer = Tokenizer::from_file(&path)
            .map_err(|e| LoadError::Tokenizer(format!("{}: {e}", path.display())))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;
        let spelling = if raw["decoder"]["type"] == "ByteLevel" {
            TokenSpelling::ByteLevel
        } else {
            TokenSpelling::SentencePiece
        };
        let size = tokenizer.get_vocab_size(true);
        let specials: BTreeSet<u32> = raw["added_tokens"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|t| t["special"] == true)
                    .filter_map(|t| t["id"].as_u64())
                    .map(|id| id as u32)
                    .collect()
            })
            .unwrap_or_default();
        let token_bytes = (0..size as u32)
            .map(|id| match tokenizer.id_to_token(id) {
                Some(_) if specials.contains(&id) => Vec::new(),
                Some(t) => token_bytes(&t, spelling),
                None => Vec::new(),
            })
            .collect();

        let tc: Option<Value> = read_optional_json(&dir.join("tokenizer_config.json"))?;
        let tc = tc.unwrap_or(Value::Null);
        let gc: Option<Value> = read_optional_json(&dir.join("generation_config.json"))?;
        let gc = gc.unwrap_or(Value::Null);
        let token_text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("content").and_then(|c| c.as_str()).map(str::to_owned),
            _ => None,
        };
        let mut eos = BTreeSet::new();
        for source in [&gc["eos_token_id"], &config["eos_token_id"]] {
            match source {
                Value::Number(n) => eos.extend(n.as_u64().map(|v| v as u32)),
                Value::Array(a) => {
                    eos.extend(a.iter().filter_map(|v| v.as_u64()).map(|v| v as u32))
                }
                _ => {}
            }
        }
        let eos_text = token_text(&tc["eos_token"]);
        if let Some(id) = eos_text.as_deref().and_then(|t| tokenizer.token_to_id(t)) {
            eos.insert(id);
        }
        let bos_text = token_text(&tc["bos_token"]);
        let bos_id = bos_text.as_deref().and_then(|t| tokenizer.token_to_id(t));
        let probe = tokenizer
            .encode("a", true)
            .map_err(|e| LoadError::Tokenizer(e.to_string()))?;
        let tokenizer_adds_bos = bos_id.is_some() && probe.get_ids().first() == bos_id.as_ref();
        let chat_template = match &tc["chat_template"] {
            Value::String(source) => Some(ChatTemplate::new(
                source,
                bos_text.unwrap_or_default(),
                eos_text.unwrap_or_default(),
            )?),
            _ => None,
        };
        Ok(Self {
            tokenizer,
            token_bytes,
            bos: None,
            eos,
            chat_template,
            tokenizer_adds_bos,
        })
    }

    /// Token ids of `text`. A raw prompt gets the model's BOS; text rendered by the chat
    /// template already holds whatever special tokens the template wrote.
    pub(crate) fn encode(&self, text: &str, templated: bool) -> Result<Vec<u32>, String> {
        let add_special = !templated && self.tokenizer_adds_bos;
        let encoding = self
            .tokenizer
            .encode_fast(text, add_special)
            .map_err(|e| e.to_string())?;
        let mut ids = Vec::with_capacity(encoding.len() + 1);
        if !templated && let Some(bos) = self.bos {
            ids.push(bos);
        }
        ids.extend_from_slice(encoding.get_ids());
        Ok(ids)
    }

    /// Number of token ids.
    pub(crate) fn len(&self) -> usize {
        self.token_bytes.len()
    }
}
