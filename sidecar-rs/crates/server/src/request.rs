//! Requests as the protocol defines them, read from a frame body without copying.

use crate::error::{ErrorCode, ProtocolError};
use crate::msgpack::{Item, Malformed, Reader};

mod fields;
mod generate;
mod heads;
mod op;
pub(crate) mod values;

use fields::Fields;
pub(crate) use fields::Limits;
pub(crate) use op::{HeadInputs, Op, Request};
use values::missing;

/// [`crate::runner::MAX_MODEL_THREADS`], as the wire's integer type.
const MAX_MODEL_THREADS_U64: u64 = crate::runner::MAX_MODEL_THREADS as u64;

/// A request that cannot be served, with the id to answer it under (0 when none was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejected {
    pub id: u64,
    pub error: ProtocolError,
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
            gguf_weights: fields.gguf_weights,
            dtype: fields.dtype,
            threads: match fields.threads {
                None => None,
                Some(n @ 1..=MAX_MODEL_THREADS_U64) => Some(n as usize),
                Some(n) => {
                    return Err(reject(ProtocolError::bad_request(format!(
                        "`threads` must be 1 to {MAX_MODEL_THREADS_U64}, got {n}"
                    ))));
                }
            },
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
        "generate" => {
            generate::decode_generate(fields.required_model().map_err(reject)?, fields.generate)
                .map_err(reject)?
        }
        "cancel" => generate::decode_cancel(fields.target).map_err(reject)?,
        _ => {
            let model = fields.required_model().map_err(reject)?;
            let inputs = fields
                .embed_inputs
                .ok_or_else(|| reject(missing("inputs")))?;
            if inputs.is_empty() {
                return Err(reject(ProtocolError::bad_request(
                    "`inputs` must hold at least one input",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::BackendKind;
    use rmpv::Value as V;
    use shoal_sidecar_core::Input;

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
                    gguf_weights: None,
                    dtype: None,
                    threads: None,
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
                inputs: vec!["a".into(), "".into()],
                truncate: true,
                traceparents: vec!["x"]
            }
        );
        // Token ids, beside texts in the same batch.
        let body = map(&[
            ("id", V::from(1)),
            ("op", V::from("embed")),
            ("model", V::from("m")),
            (
                "inputs",
                V::Array(vec![
                    V::from("a"),
                    V::Array(vec![V::from(7592), V::from(u64::from(u32::MAX))]),
                ]),
            ),
        ]);
        assert_eq!(
            decode(&body, LIMITS).unwrap().op,
            Op::Embed {
                model: "m",
                inputs: vec!["a".into(), Input::Ids(vec![7592, u32::MAX])],
                truncate: true,
                traceparents: vec![]
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
                "`inputs[1]` must be a string or an array of token ids",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", V::Array(vec![V::Array(vec![])])),
                ]),
                "`inputs[0]` has no token ids",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    (
                        "inputs",
                        V::Array(vec![V::Array(vec![V::from(1), V::from(-1)])]),
                    ),
                ]),
                "`inputs[0][1]` must be a token id (an integer from 0 to 4294967295), got -1",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    (
                        "inputs",
                        V::Array(vec![V::Array(vec![V::from(1u64 << 32)])]),
                    ),
                ]),
                "got 4294967296",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", V::Array(vec![V::Array(vec![V::from(1.5)])])),
                ]),
                "got float",
            ),
            (
                base(&[
                    ("model", V::from("m")),
                    ("inputs", V::Array(vec![V::Array(vec![V::Array(vec![])])])),
                ]),
                "got array",
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
                    ("load_ms", V::from(250)),
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
        assert_eq!(sim.load_ms, 250);
        let body = load(&[
            ("backend", V::from("candle")),
            ("path", V::from("/d")),
            ("threads", V::from(2)),
        ]);
        assert!(matches!(
            decode(&body, LIMITS).unwrap().op,
            Op::Load {
                backend: Some(BackendKind::Candle),
                sim: None,
                threads: Some(2),
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
                load(&[("gguf_weights", V::from("q4"))]),
                "`gguf_weights` must be one of `kernels`, `stored`, `f32`, got `q4`",
            ),
            (
                load(&[("dtype", V::from("fp16"))]),
                "`dtype` must be one of `f32`, `f16`, `bf16`, got `fp16`",
            ),
            (load(&[("dtype", V::from(16))]), "`dtype` must be a string"),
            (
                load(&[("threads", V::from(0))]),
                "`threads` must be 1 to 64, got 0",
            ),
            (
                load(&[("threads", V::from(65))]),
                "`threads` must be 1 to 64, got 65",
            ),
            (
                load(&[("threads", V::from(-1))]),
                "`threads` must not be negative",
            ),
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
                load(&[("sim", sim(&[("load_ms", V::from(600_001))]))]),
                "`sim.load_ms` must be in 0..=600000",
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
