//! The second pass over a frame: the fields its `op` uses, type-checked.

use shoal_sidecar_candle::{GgufWeightMode, Precision};
use shoal_sidecar_openai::OpenAiSettings;
use shoal_sidecar_sim::SimOverrides;

use super::generate::GenerateFields;
use shoal_sidecar_core::Input;

use super::values::{adapter_name, count, inputs, missing, number, string, strings, wrong_type};
use crate::error::{ErrorCode, ProtocolError};
use crate::msgpack::{Item, Malformed, Reader};
use crate::options::BackendKind;

/// Limits the decoder enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_batch_items: usize,
}

/// Second pass: the fields `op` uses, type-checked. Fields other operations use are ignored,
/// as are unknown keys, so that clients can add fields without breaking older sidecars. A nil
/// value counts as absent.
#[derive(Default)]
pub(super) struct Fields<'a> {
    pub(super) traceparent: Option<&'a str>,
    pub(super) model: Option<&'a str>,
    pub(super) path: Option<&'a str>,
    /// `classify` and `extract`: texts.
    pub(super) inputs: Option<Vec<&'a str>>,
    /// `embed`: texts or token ids.
    pub(super) embed_inputs: Option<Vec<Input>>,
    /// `score`: the two sides of each pair.
    pub(super) queries: Option<Vec<&'a str>>,
    pub(super) documents: Option<Vec<&'a str>>,
    pub(super) truncate: Option<bool>,
    pub(super) traceparents: Option<Vec<&'a str>>,
    pub(super) backend: Option<BackendKind>,
    pub(super) sim: Option<SimOverrides>,
    pub(super) openai: Option<OpenAiSettings>,
    pub(super) gguf_weights: Option<GgufWeightMode>,
    pub(super) dtype: Option<Precision>,
    pub(super) threads: Option<u64>,
    /// `load_adapter` and `unload_adapter`: the adapter's name.
    pub(super) adapter: Option<&'a str>,
    /// `generate`: prompt and sampling.
    pub(super) generate: GenerateFields<'a>,
    /// `cancel`: the request to cancel.
    pub(super) target: Option<u64>,
}

impl<'a> Fields<'a> {
    pub(super) fn read(body: &'a [u8], op: &str, limits: Limits) -> Result<Self, ProtocolError> {
        let mut r = Reader::new(body);
        let mut fields = Fields::default();
        // The envelope pass proved the structure, so reader errors here cannot happen; they
        // are still mapped rather than unwrapped.
        let broken = |e: Malformed| ProtocolError::new(ErrorCode::BadFrame, e.to_string());
        let Item::Map(len) = r.next().map_err(broken)? else {
            return Err(ProtocolError::new(
                ErrorCode::BadFrame,
                "body must be a map",
            ));
        };
        for _ in 0..len {
            let Item::Str(key) = r.next().map_err(broken)? else {
                return Err(ProtocolError::new(
                    ErrorCode::BadFrame,
                    "map keys must be strings",
                ));
            };
            let value = r.next().map_err(broken)?;
            if value == Item::Nil {
                continue;
            }
            match (op, key) {
                (_, b"traceparent") => fields.traceparent = Some(string("traceparent", value)?),
                (
                    "load" | "unload" | "embed" | "score" | "classify" | "extract" | "generate"
                    | "load_adapter" | "unload_adapter",
                    b"model",
                ) => fields.model = Some(string("model", value)?),
                ("load" | "load_adapter", b"path") => fields.path = Some(string("path", value)?),
                ("load_adapter" | "unload_adapter", b"adapter") => {
                    fields.adapter = Some(adapter_name("adapter", value)?)
                }
                ("generate", key) if GenerateFields::owns(key) => {
                    fields.generate.read(&mut r, key, value)?
                }
                ("cancel", b"target") => fields.target = Some(count("target", value)?),
                ("load", b"backend") => {
                    let name = string("backend", value)?;
                    fields.backend = Some(BackendKind::from_name(name).ok_or_else(|| {
                        ProtocolError::bad_request(format!(
                            "`backend` must be `candle`, `sim` or `openai`, got `{}`",
                            name.escape_debug()
                        ))
                    })?)
                }
                ("load", b"sim") => fields.sim = Some(sim_overrides(&mut r, value)?),
                ("load", b"openai") => {
                    fields.openai = Some(crate::openai_load::settings(&mut r, value)?)
                }
                ("load", b"threads") => fields.threads = Some(count("threads", value)?),
                ("load", b"gguf_weights") => {
                    let name = string("gguf_weights", value)?;
                    fields.gguf_weights =
                        Some(GgufWeightMode::from_name(name).ok_or_else(|| {
                            ProtocolError::bad_request(format!(
                                "`gguf_weights` must be one of {}, got `{}`",
                                GgufWeightMode::NAMES.map(|n| format!("`{n}`")).join(", "),
                                name.escape_debug()
                            ))
                        })?)
                }
                ("load", b"dtype") => {
                    let name = string("dtype", value)?;
                    fields.dtype = Some(Precision::from_name(name).ok_or_else(|| {
                        ProtocolError::bad_request(format!(
                            "`dtype` must be one of {}, got `{}`",
                            Precision::NAMES.map(|n| format!("`{n}`")).join(", "),
                            name.escape_debug()
                        ))
                    })?)
                }
                ("embed" | "score" | "classify" | "extract", b"truncate") => match value {
                    Item::Bool(v) => fields.truncate = Some(v),
                    other => return Err(wrong_type("truncate", "a bool", other)),
                },
                ("embed", b"inputs") => {
                    fields.embed_inputs =
                        Some(inputs(&mut r, "inputs", value, limits.max_batch_items)?)
                }
                ("classify" | "extract", b"inputs") => {
                    fields.inputs = Some(strings(
                        &mut r,
                        "inputs",
                        value,
                        Some(limits.max_batch_items),
                    )?)
                }
                ("score", b"queries") => {
                    fields.queries = Some(strings(
                        &mut r,
                        "queries",
                        value,
                        Some(limits.max_batch_items),
                    )?)
                }
                ("score", b"documents") => {
                    fields.documents = Some(strings(
                        &mut r,
                        "documents",
                        value,
                        Some(limits.max_batch_items),
                    )?)
                }
                ("embed" | "score" | "classify" | "extract", b"traceparents") => {
                    fields.traceparents = Some(strings(&mut r, "traceparents", value, None)?)
                }
                _ => r.skip_children(value).map_err(broken)?,
            }
        }
        Ok(fields)
    }

    pub(super) fn required_model(&self) -> Result<&'a str, ProtocolError> {
        match self.model {
            Some("") => Err(ProtocolError::bad_request("`model` must not be empty")),
            Some(model) => Ok(model),
            None => Err(missing("model")),
        }
    }
}

/// The `sim` map of `load`. Unlike the request map itself, unknown keys are refused: the map
/// is closed configuration, and a misspelt cost term silently replaced by its default would
/// make a scale test measure something other than what it says.
fn sim_overrides<'a>(r: &mut Reader<'a>, value: Item<'a>) -> Result<SimOverrides, ProtocolError> {
    let Item::Map(len) = value else {
        return Err(wrong_type("sim", "a map", value));
    };
    let broken = |e: Malformed| ProtocolError::new(ErrorCode::BadFrame, e.to_string());
    let mut out = SimOverrides::default();
    for _ in 0..len {
        let key = match r.next().map_err(broken)? {
            Item::Str(key) => key,
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "`sim` keys must be strings, got {}",
                    other.type_name()
                )));
            }
        };
        let value = r.next().map_err(broken)?;
        if value == Item::Nil {
            continue;
        }
        match key {
            b"profile" => out.profile = Some(string("sim.profile", value)?.to_owned()),
            b"dim" => out.dim = Some(count("sim.dim", value)?),
            b"max_input_tokens" => {
                out.max_input_tokens = Some(count("sim.max_input_tokens", value)?)
            }
            b"memory_bytes" => out.memory_bytes = Some(count("sim.memory_bytes", value)?),
            b"load_ms" => out.load_ms = Some(count("sim.load_ms", value)?),
            b"fixed_us" => out.fixed_us = Some(number("sim.fixed_us", value)?),
            b"per_sequence_us" => out.per_sequence_us = Some(number("sim.per_sequence_us", value)?),
            b"per_padded_token_ns" => {
                out.per_padded_token_ns = Some(number("sim.per_padded_token_ns", value)?)
            }
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "unknown `sim` field `{}`; expected profile, dim, max_input_tokens, \
                     memory_bytes, load_ms, fixed_us, per_sequence_us or per_padded_token_ns",
                    String::from_utf8_lossy(other).escape_debug()
                )));
            }
        }
    }
    Ok(out)
}
