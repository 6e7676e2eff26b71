//! Requests as the protocol defines them, read from a frame body without copying.

use crate::error::{ErrorCode, ProtocolError};
use crate::msgpack::{Item, Malformed, Reader};
use crate::options::BackendKind;
use shoal_sidecar_candle::Precision;
use shoal_sidecar_openai::{OpenAiConfig, OpenAiSettings};
use shoal_sidecar_sim::{SimOverrides, SimParams};

mod generate;
mod heads;

pub(crate) use heads::HeadInputs;

/// A decoded request, borrowing its strings from the frame body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request<'a> {
    pub id: u64,
    /// W3C trace context of the caller, when sent.
    pub traceparent: Option<&'a str>,
    pub op: Op<'a>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op<'a> {
    Health,
    Stats,
    Load {
        model: &'a str,
        /// Required for Candle; for the simulated backend it only supplies the tokenizer.
        path: Option<&'a str>,
        /// `None` leaves the choice to `--backend`.
        backend: Option<BackendKind>,
        /// The `sim` map, resolved against its calibration profile and range-checked.
        sim: Option<SimParams>,
        /// The `openai` map, validated.
        openai: Option<OpenAiConfig>,
        /// Candle: expand a GGUF's quantized matrices to f32 at load.
        dequantize: Option<bool>,
        /// Candle: what an encoder computes in.
        dtype: Option<Precision>,
    },
    Unload {
        model: &'a str,
    },
    /// A LoRA adapter for a resident generator, loaded under `adapter` from directory `path`.
    LoadAdapter {
        model: &'a str,
        adapter: &'a str,
        path: &'a str,
    },
    UnloadAdapter {
        model: &'a str,
        adapter: &'a str,
    },
    Embed {
        model: &'a str,
        inputs: Vec<&'a str>,
        truncate: bool,
        traceparents: Vec<&'a str>,
    },
    /// `score`, `classify` or `extract`, which `inputs` tells apart.
    Head {
        model: &'a str,
        inputs: HeadInputs<'a>,
        truncate: bool,
        traceparents: Vec<&'a str>,
    },
    /// One sequence; its answers stream.
    Generate {
        model: &'a str,
        request: shoal_sidecar_core::GenerateRequest,
    },
    /// Cancels the `generate` request `target` of the same connection.
    Cancel {
        target: u64,
    },
}

impl Op<'_> {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Health => "health",
            Op::Stats => "stats",
            Op::Load { .. } => "load",
            Op::Unload { .. } => "unload",
            Op::LoadAdapter { .. } => "load_adapter",
            Op::UnloadAdapter { .. } => "unload_adapter",
            Op::Embed { .. } => "embed",
            Op::Head { inputs, .. } => inputs.op_name(),
            Op::Generate { .. } => "generate",
            Op::Cancel { .. } => "cancel",
        }
    }
}

/// A request that cannot be served, with the id to answer it under (0 when none was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub id: u64,
    pub error: ProtocolError,
}

/// Limits the decoder enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_batch_items: usize,
}

fn bad_frame(id: u64, message: impl Into<String>) -> Rejected {
    Rejected {
        id,
        error: ProtocolError::new(ErrorCode::BadFrame, message),
    }
}

/// Decodes one frame body.
///
/// The envelope is read first (`id`, `op`, and that the body is one well-formed map with
/// string keys, else `bad_frame`); only then are the operation's own fields read, so that a
/// mistyped field is a `bad_request` answered under the request's id.
pub(crate) fn decode<'a>(body: &'a [u8], limits: Limits) -> Result<Request<'a>, Rejected> {
    let (id, op) = envelope(body)?;
    let op = op.ok_or_else(|| bad_frame(id, "request has no `op`"))?;
    let reject = |error: ProtocolError| Rejected { id, error };
    if !matches!(
        op,
        "health"
            | "stats"
            | "load"
            | "unload"
            | "load_adapter"
            | "unload_adapter"
            | "embed"
            | "score"
            | "classify"
            | "extract"
            | "generate"
            | "cancel"
    ) {
        return Err(reject(ProtocolError::new(
            ErrorCode::UnknownOp,
            format!(
                "unknown op `{}`; expected health, load, unload, load_adapter, unload_adapter, \
                 embed, score, classify, extract, generate, cancel or stats",
                op.escape_debug()
            ),
        )));
    }
    let fields = Fields::read(body, op, limits).map_err(reject)?;
    let traceparent = fields.traceparent;
    let op = match op {
        "health" => Op::Health,
        "stats" => Op::Stats,
        "load" => Op::Load {
            model: fields.required_model().map_err(reject)?,
            path: match fields.path {
                Some("") => {
                    return Err(reject(ProtocolError::bad_request(
                        "`path` must not be empty",
                    )));
                }
                path => path,
            },
            backend: fields.backend,
            sim: match &fields.sim {
                Some(overrides) => Some(
                    overrides
                        .resolve()
                        .map_err(|e| reject(ProtocolError::from(e)))?,
                ),
                None => None,
            },
            openai: match fields.openai {
                Some(settings) => Some(crate::openai_load::resolve(settings).map_err(reject)?),
                None => None,
            },
            dequantize: fields.dequantize,
            dtype: fields.dtype,
        },
        "unload" => Op::Unload {
            model: fields.required_model().map_err(reject)?,
        },
        "load_adapter" => Op::LoadAdapter {
            model: fields.required_model().map_err(reject)?,
            adapter: fields.adapter.ok_or_else(|| reject(missing("adapter")))?,
            path: match fields.path {
                None => return Err(reject(missing("path"))),
                Some("") => {
                    return Err(reject(ProtocolError::bad_request(
                        "`path` must not be empty",
                    )));
                }
                Some(path) => path,
            },
        },
        "unload_adapter" => Op::UnloadAdapter {
            model: fields.required_model().map_err(reject)?,
            adapter: fields.adapter.ok_or_else(|| reject(missing("adapter")))?,
        },
        "score" | "classify" | "extract" => heads::decode(op, fields).map_err(reject)?,
        "generate" => generate::decode_generate(fields).map_err(reject)?,
        "cancel" => generate::decode_cancel(&fields).map_err(reject)?,
        _ => {
            let model = fields.required_model().map_err(reject)?;
            let inputs = fields.inputs.ok_or_else(|| reject(missing("inputs")))?;
            if inputs.is_empty() {
                return Err(reject(ProtocolError::bad_request(
                    "`inputs` must hold at least one string",
                )));
            }
            Op::Embed {
                model,
                inputs,
                truncate: fields.truncate.unwrap_or(true),
                traceparents: fields.traceparents.unwrap_or_default(),
            }
        }
    };
    Ok(Request {
        id,
        traceparent,
        op,
    })
}

fn too_many_inputs(field: &str, count: u64, max: usize) -> ProtocolError {
    ProtocolError::bad_request(format!(
        "`{field}` has {count} items, more than the limit of {max}"
    ))
}

/// Longest adapter name, bytes.
pub(crate) const MAX_ADAPTER_NAME_BYTES: usize = 128;

/// An adapter name: 1..=[`MAX_ADAPTER_NAME_BYTES`] bytes of printable ASCII.
fn adapter_name<'a>(field: &str, value: Item<'a>) -> Result<&'a str, ProtocolError> {
    let name = string(field, value)?;
    if name.is_empty()
        || name.len() > MAX_ADAPTER_NAME_BYTES
        || !name.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ProtocolError::bad_request(format!(
            "`{field}` must be 1..={MAX_ADAPTER_NAME_BYTES} printable ASCII characters"
        )));
    }
    Ok(name)
}

fn missing(field: &str) -> ProtocolError {
    ProtocolError::bad_request(format!("`{field}` is required"))
}

/// First pass: the map header, every key, `id` and `op`. Skipping every other value also
/// proves the whole body is well-formed MessagePack.
fn envelope(body: &[u8]) -> Result<(u64, Option<&str>), Rejected> {
    let mut r = Reader::new(body);
    let mut id = None;
    let mut op = None;
    let malformed = |id: Option<u64>, e: Malformed| bad_frame(id.unwrap_or(0), e.to_string());
    let len = match r.next().map_err(|e| malformed(None, e))? {
        Item::Map(len) => len,
        other => {
            return Err(bad_frame(
                0,
                format!("body must be a map, got {}", other.type_name()),
            ));
        }
    };
    for _ in 0..len {
        let key = match r.next().map_err(|e| malformed(id, e))? {
            Item::Str(key) => key,
            other => {
                return Err(bad_frame(
                    id.unwrap_or(0),
                    format!("map keys must be strings, got {}", other.type_name()),
                ));
            }
        };
        let value = r.next().map_err(|e| malformed(id, e))?;
        match (key, value) {
            (b"id", Item::Uint(v)) => id = Some(v),
            (b"id", other) => {
                return Err(bad_frame(
                    0,
                    format!(
                        "`id` must be an unsigned integer, got {}",
                        other.type_name()
                    ),
                ));
            }
            (b"op", Item::Str(v)) => match std::str::from_utf8(v) {
                Ok(v) => op = Some(v),
                Err(_) => return Err(bad_frame(id.unwrap_or(0), "`op` is not valid UTF-8")),
            },
            (b"op", other) => {
                return Err(bad_frame(
                    id.unwrap_or(0),
                    format!("`op` must be a string, got {}", other.type_name()),
                ));
            }
            (_, value) => r.skip_children(value).map_err(|e| malformed(id, e))?,
        }
    }
    if !r.is_at_end() {
        return Err(bad_frame(
            id.unwrap_or(0),
            "trailing bytes after the request map",
        ));
    }
    let id = id.ok_or_else(|| bad_frame(0, "request has no `id`"))?;
    Ok((id, op))
}

/// Second pass: the fields `op` uses, type-checked. Fields other operations use are ignored,
/// as are unknown keys, so that clients can add fields without breaking older sidecars. A nil
/// value counts as absent.
#[derive(Default)]
struct Fields<'a> {
    traceparent: Option<&'a str>,
    model: Option<&'a str>,
    path: Option<&'a str>,
    inputs: Option<Vec<&'a str>>,
    /// `score`: the two sides of each pair.
    queries: Option<Vec<&'a str>>,
    documents: Option<Vec<&'a str>>,
    truncate: Option<bool>,
    traceparents: Option<Vec<&'a str>>,
    backend: Option<BackendKind>,
    sim: Option<SimOverrides>,
    openai: Option<OpenAiSettings>,
    dequantize: Option<bool>,
    dtype: Option<Precision>,
    /// `load_adapter` and `unload_adapter`: the adapter's name.
    adapter: Option<&'a str>,
    /// `generate`: prompt and sampling.
    generate: generate::GenerateFields<'a>,
    /// `cancel`: the request to cancel.
    target: Option<u64>,
}

impl<'a> Fields<'a> {
    fn read(body: &'a [u8], op: &str, limits: Limits) -> Result<Self, ProtocolError> {
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
                ("generate", key) if generate::GenerateFields::owns(key) => {
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
                ("load", b"dequantize") => match value {
                    Item::Bool(v) => fields.dequantize = Some(v),
                    other => return Err(wrong_type("dequantize", "a bool", other)),
                },
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
                ("embed" | "classify" | "extract", b"inputs") => {
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

    fn required_model(&self) -> Result<&'a str, ProtocolError> {
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
            b"fixed_us" => out.fixed_us = Some(number("sim.fixed_us", value)?),
            b"per_sequence_us" => out.per_sequence_us = Some(number("sim.per_sequence_us", value)?),
            b"per_padded_token_ns" => {
                out.per_padded_token_ns = Some(number("sim.per_padded_token_ns", value)?)
            }
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "unknown `sim` field `{}`; expected profile, dim, max_input_tokens, \
                     memory_bytes, fixed_us, per_sequence_us or per_padded_token_ns",
                    String::from_utf8_lossy(other).escape_debug()
                )));
            }
        }
    }
    Ok(out)
}

fn negative(field: &str) -> ProtocolError {
    ProtocolError::bad_request(format!("`{field}` must not be negative"))
}

pub(crate) fn count(field: &str, value: Item<'_>) -> Result<u64, ProtocolError> {
    match value {
        Item::Uint(v) => Ok(v),
        Item::Int(_) => Err(negative(field)),
        other => Err(wrong_type(field, "a non-negative integer", other)),
    }
}

fn number(field: &str, value: Item<'_>) -> Result<f64, ProtocolError> {
    match value {
        Item::Uint(v) => Ok(v as f64),
        Item::Float(v) if v < 0.0 => Err(negative(field)),
        Item::Float(v) => Ok(v),
        Item::Int(_) => Err(negative(field)),
        other => Err(wrong_type(field, "a non-negative number", other)),
    }
}

pub(crate) fn wrong_type(field: &str, expected: &str, got: Item<'_>) -> ProtocolError {
    ProtocolError::bad_request(format!(
        "`{field}` must be {expected}, got {}",
        got.type_name()
    ))
}

pub(crate) fn string<'a>(field: &str, value: Item<'a>) -> Result<&'a str, ProtocolError> {
    match value {
        Item::Str(bytes) => std::str::from_utf8(bytes)
            .map_err(|_| ProtocolError::bad_request(format!("`{field}` is not valid UTF-8"))),
        other => Err(wrong_type(field, "a string", other)),
    }
}

fn strings<'a>(
    r: &mut Reader<'a>,
    field: &str,
    value: Item<'a>,
    max: Option<usize>,
) -> Result<Vec<&'a str>, ProtocolError> {
    let Item::Array(len) = value else {
        return Err(wrong_type(field, "an array of strings", value));
    };
    // Refused from the header alone, before a single element is read.
    if let Some(max) = max
        && len as usize > max
    {
        return Err(too_many_inputs(field, u64::from(len), max));
    }
    // Capacity is bounded by the body: every element takes at least one byte.
    let mut out = Vec::new();
    for index in 0..len {
        let item = r
            .next()
            .map_err(|e| ProtocolError::new(ErrorCode::BadFrame, e.to_string()))?;
        match item {
            Item::Str(_) => out.push(string(field, item).map_err(|_| {
                ProtocolError::bad_request(format!("`{field}[{index}]` is not valid UTF-8"))
            })?),
            other => {
                return Err(ProtocolError::bad_request(format!(
                    "`{field}[{index}]` must be a string, got {}",
                    other.type_name()
                )));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value as V;

    const LIMITS: Limits = Limits { max_batch_items: 3 };

    fn map(entries: &[(&str, V)]) -> Vec<u8> {
        let value = V::Map(
            entries
                .iter()
                .map(|(k, v)| (V::from(*k), v.clone()))
                .collect(),
        );
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &value).unwrap();
        out
    }

    fn strs(items: &[&str]) -> V {
        V::Array(items.iter().map(|s| V::from(*s)).collect())
    }

    fn rejected(body: &[u8]) -> (u64, ErrorCode, String) {
        let r = decode(body, LIMITS).expect_err("should be rejected");
        (r.id, r.error.code, r.error.message)
    }

    #[test]
    fn decodes_every_op() {
        let body = map(&[("id", V::from(7)), ("op", V::from("health"))]);
        assert_eq!(
            decode(&body, LIMITS).unwrap(),
            Request {
                id: 7,
                traceparent: None,
                op: Op::Health
            }
        );
        let body = map(&[
            ("op", V::from("load")),
            ("model", V::from("m")),
            ("path", V::from("/d")),
            ("id", V::from(u64::MAX)),
            ("traceparent", V::from("tp")),
            ("future_field", V::Map(vec![(V::from(1), V::Nil)])),
        ]);
        assert_eq!(
            decode(&body, LIMITS).unwrap(),
            Request {
                id: u64::MAX,
                traceparent: Some("tp"),
                op: Op::Load {
                    model: "m",
                    path: Some("/d"),
                    backend: None,
                    sim: None,
                    openai: None,
                    dequantize: None,
                    dtype: None,
                }
            }
        );
        let body = map(&[
            ("id", V::from(1)),
            ("op", V::from("embed")),
            ("model", V::from("m")),
            ("inputs", strs(&["a", ""])),
            ("truncate", V::Nil),
            ("traceparents", strs(&["x"])),
        ]);
        assert_eq!(
            decode(&body, LIMITS).unwrap().op,
            Op::Embed {
                model: "m",
                inputs: vec!["a", ""],
                truncate: true,
                traceparents: vec!["x"]
            }
        );
        let body = map(&[
            ("id", V::from(2)),
            ("op", V::from("unload")),
            ("model", V::from("m")),
        ]);
        assert_eq!(decode(&body, LIMITS).unwrap().op, Op::Unload { model: "m" });
    }

    #[test]
    fn envelope_problems_are_bad_frames() {
        let cases: Vec<(Vec<u8>, u64, &str)> = vec![
            (vec![], 0, "end of body"),
            (vec![0xc1], 0, "reserved"),
            (map(&[]), 0, "no `id`"),
            (
                {
                    let mut out = Vec::new();
                    rmpv::encode::write_value(&mut out, &strs(&["id"])).unwrap();
                    out
                },
                0,
                "must be a map",
            ),
            (map(&[("id", V::from(-1))]), 0, "unsigned"),
            (map(&[("id", V::from("1"))]), 0, "unsigned"),
            (map(&[("id", V::from(5))]), 5, "no `op`"),
            (
                map(&[("id", V::from(5)), ("op", V::from(3))]),
                5,
                "`op` must be a string",
            ),
            (
                {
                    let mut body = map(&[("id", V::from(5)), ("op", V::from("health"))]);
                    body.push(0xc0);
                    body
                },
                5,
                "trailing",
            ),
            (
                {
                    let mut body = map(&[("id", V::from(9)), ("op", V::from("stats"))]);
                    body[0] += 1; // claims one more pair than it holds
                    body
                },
                9,
                "end of body",
            ),
            (
                {
                    let mut out = Vec::new();
                    rmpv::encode::write_value(&mut out, &V::Map(vec![(V::from(1), V::from(2))]))
                        .unwrap();
                    out
                },
                0,
                "keys must be strings",
            ),
        ];
        for (body, id, needle) in cases {
            let (got_id, code, message) = rejected(&body);
            assert_eq!(code, ErrorCode::BadFrame, "{body:?}: {message}");
            assert_eq!(got_id, id, "{body:?}: {message}");
            assert!(
                message.contains(needle),
                "{body:?}: {message:?} lacks {needle:?}"
            );
        }
    }

    #[test]
    fn field_problems_are_bad_requests_under_the_request_id() {
        let base = |extra: &[(&str, V)]| {
            let mut entries = vec![("id", V::from(4)), ("op", V::from("embed"))];
            entries.extend(extra.iter().cloned());
            map(&entries)
        };
        let cases = [
            (base(&[("inputs", strs(&["a"]))]), "`model` is required"),
            (base(&[("model", V::from("m"))]), "`inputs` is required"),
            (
                base(&[("model", V::from(1)), ("inputs", strs(&["a"]))]),
                "`model` must be a string",
            ),
            (
                base(&[("model", V::from("")), ("inputs", strs(&["a"]))]),
                "must not be empty",
            ),
            (
                base(&[("model", V::from("m")), ("inputs", V::from("a"))]),
                "array of strings",
            ),
            (
                base(&[("model", V::from("m")), ("inputs", strs(&[]))]),
                "at least one",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", strs(&["a", "b", "c", "d"])),
                ]),
                "4 items, more than the limit of 3",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", V::Array(vec![V::from("a"), V::from(2)])),
                ]),
                "`inputs[1]` must be a string",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", strs(&["a"])),
                    ("truncate", V::from("no")),
                ]),
                "`truncate` must be a bool",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", strs(&["a"])),
                    ("traceparents", V::from(1)),
                ]),
                "`traceparents` must be an array",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", strs(&["a"])),
                    ("traceparent", V::Boolean(true)),
                ]),
                "`traceparent` must be a string",
            ),
        ];
        for (body, needle) in cases {
            let (id, code, message) = rejected(&body);
            assert_eq!((id, code), (4, ErrorCode::BadRequest), "{message}");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        // Invalid UTF-8 inside an input.
        let mut body = base(&[("model", V::from("m")), ("inputs", strs(&["ab"]))]);
        let at = body.len() - 2;
        body[at] = 0xff;
        let (_, code, message) = rejected(&body);
        assert_eq!(code, ErrorCode::BadRequest);
        assert!(message.contains("UTF-8"), "{message}");
    }

    fn load(extra: &[(&str, V)]) -> Vec<u8> {
        let mut entries = vec![
            ("id", V::from(6)),
            ("op", V::from("load")),
            ("model", V::from("m")),
        ];
        entries.extend(extra.iter().cloned());
        map(&entries)
    }

    fn sim(entries: &[(&str, V)]) -> V {
        V::Map(
            entries
                .iter()
                .map(|(k, v)| (V::from(*k), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn load_takes_a_backend_and_sim_parameters() {
        let body = load(&[
            ("backend", V::from("sim")),
            (
                "sim",
                sim(&[
                    ("profile", V::from("minilm-l6-cpu")),
                    ("dim", V::from(8)),
                    ("memory_bytes", V::from(1u64 << 40)),
                    ("fixed_us", V::F64(2.5)),
                    ("per_sequence_us", V::from(3)),
                    ("per_padded_token_ns", V::Nil),
                    ("max_input_tokens", V::from(16)),
                ]),
            ),
        ]);
        let Op::Load {
            path, backend, sim, ..
        } = decode(&body, LIMITS).unwrap().op
        else {
            panic!("not a load");
        };
        assert_eq!((path, backend), (None, Some(BackendKind::Sim)));
        let sim = sim.unwrap();
        let base = shoal_sidecar_sim::Profile::MiniLmL6Cpu.params();
        assert_eq!((sim.dim, sim.max_input_tokens), (8, 16));
        assert_eq!(sim.memory_bytes, 1 << 40);
        assert_eq!((sim.cost.fixed_us, sim.cost.per_sequence_us), (2.5, 3.0));
        assert_eq!(sim.cost.per_padded_token_ns, base.cost.per_padded_token_ns);
        let body = load(&[("backend", V::from("candle")), ("path", V::from("/d"))]);
        assert!(matches!(
            decode(&body, LIMITS).unwrap().op,
            Op::Load {
                backend: Some(BackendKind::Candle),
                sim: None,
                ..
            }
        ));
    }

    #[test]
    fn bad_sim_parameters_are_bad_requests() {
        let cases = [
            (
                load(&[("backend", V::from("tpu"))]),
                "`backend` must be `candle`, `sim` or `openai`",
            ),
            (
                load(&[("backend", V::from(1))]),
                "`backend` must be a string",
            ),
            (load(&[("path", V::from(""))]), "`path` must not be empty"),
            (
                load(&[("dequantize", V::from("yes"))]),
                "`dequantize` must be a bool",
            ),
            (
                load(&[("dtype", V::from("fp16"))]),
                "`dtype` must be one of `f32`, `f16`, `bf16`, got `fp16`",
            ),
            (load(&[("dtype", V::from(16))]), "`dtype` must be a string"),
            (load(&[("sim", V::from(3))]), "`sim` must be a map"),
            (
                load(&[("sim", sim(&[("dim", V::from(-4))]))]),
                "`sim.dim` must not be negative",
            ),
            (
                load(&[("sim", sim(&[("dim", V::F64(4.0))]))]),
                "`sim.dim` must be a non-negative integer",
            ),
            (
                load(&[("sim", sim(&[("dim", V::from(0))]))]),
                "`sim.dim` must be in 1..=16384",
            ),
            (
                load(&[("sim", sim(&[("fixed_us", V::F64(-0.5))]))]),
                "`sim.fixed_us` must not be negative",
            ),
            (
                load(&[("sim", sim(&[("per_sequence_us", V::from(-1))]))]),
                "`sim.per_sequence_us` must not be negative",
            ),
            (
                load(&[("sim", sim(&[("per_padded_token_ns", V::from("fast"))]))]),
                "`sim.per_padded_token_ns` must be a non-negative number",
            ),
            (
                load(&[("sim", sim(&[("per_padded_token_ns", V::F64(f64::NAN))]))]),
                "`sim.per_padded_token_ns` must be a finite number",
            ),
            (
                load(&[("sim", sim(&[("profile", V::from("tpu-v9"))]))]),
                "unknown calibration profile `tpu-v9`",
            ),
            (
                load(&[("sim", sim(&[("profile", V::from(1))]))]),
                "`sim.profile` must be a string",
            ),
            (
                load(&[("sim", sim(&[("fixed_ms", V::from(1))]))]),
                "unknown `sim` field `fixed_ms`",
            ),
            (
                load(&[("sim", V::Map(vec![(V::from(1), V::from(1))]))]),
                "`sim` keys must be strings",
            ),
        ];
        for (body, needle) in cases {
            let (id, code, message) = rejected(&body);
            assert_eq!((id, code), (6, ErrorCode::BadRequest), "{message}");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
    }

    #[test]
    fn unknown_ops_are_named() {
        let body = map(&[("id", V::from(3)), ("op", V::from("translate"))]);
        let (id, code, message) = rejected(&body);
        assert_eq!((id, code), (3, ErrorCode::UnknownOp));
        assert!(message.contains("`translate`"), "{message}");
    }

    #[test]
    fn an_oversized_inputs_header_is_refused_before_its_elements() {
        // A 5-byte array header claiming 2^32-1 inputs and nothing behind it: the envelope
        // pass fails on it as malformed, so it never reaches the field pass.
        let mut body = map(&[
            ("id", V::from(8)),
            ("op", V::from("embed")),
            ("model", V::from("m")),
        ]);
        body[0] += 1;
        body.extend_from_slice(&[0xa6]);
        body.extend_from_slice(b"inputs");
        body.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
        let (id, code, _) = rejected(&body);
        assert_eq!((id, code), (8, ErrorCode::BadFrame));
    }
}
