//! `generate` and `cancel` requests. Every sampling parameter is range-checked here, so a
//! model thread only ever sees a request it can run (apart from the prompt's length, which
//! only its tokenizer can measure).

use std::hash::{BuildHasher, Hasher};

use shoal_sidecar_core::{ChatMessage, GenerateRequest, Prompt, Sampling};

use super::op::Op;
use super::values::{adapter_name, count, missing, string, strings, wrong_type};
use crate::error::{ErrorCode, ProtocolError};
use crate::msgpack::{Item, Malformed, Reader};

/// `max_tokens` when the request names none.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 256;
/// Most stop strings per request, and the longest one in bytes.
pub(crate) const MAX_STOPS: usize = 8;
pub(crate) const MAX_STOP_BYTES: usize = 256;
/// Most chat turns per request.
pub(crate) const MAX_MESSAGES: usize = 1024;

/// The fields only `generate` reads, as sent.
#[derive(Debug, Default)]
pub(super) struct GenerateFields<'a> {
    prompt: Option<&'a str>,
    messages: Option<Vec<ChatMessage>>,
    max_tokens: Option<u64>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<u64>,
    min_p: Option<f64>,
    repetition_penalty: Option<f64>,
    seed: Option<u64>,
    stop: Option<Vec<&'a str>>,
    adapter: Option<&'a str>,
}

impl<'a> GenerateFields<'a> {
    /// Whether `key` is one of ours.
    pub(super) fn owns(key: &[u8]) -> bool {
        matches!(
            key,
            b"prompt"
                | b"messages"
                | b"max_tokens"
                | b"temperature"
                | b"top_p"
                | b"top_k"
                | b"min_p"
                | b"repetition_penalty"
                | b"seed"
                | b"stop"
                | b"adapter"
        )
    }

    /// Reads the value of `key` (one of [`GenerateFields::owns`]).
    pub(super) fn read(
        &mut self,
        r: &mut Reader<'a>,
        key: &[u8],
        value: Item<'a>,
    ) -> Result<(), ProtocolError> {
        match key {
            b"prompt" => self.prompt = Some(string("prompt", value)?),
            b"messages" => self.messages = Some(messages(r, value)?),
            b"max_tokens" => self.max_tokens = Some(count("max_tokens", value)?),
            b"temperature" => self.temperature = Some(float("temperature", value)?),
            b"top_p" => self.top_p = Some(float("top_p", value)?),
            b"top_k" => self.top_k = Some(count("top_k", value)?),
            b"min_p" => self.min_p = Some(float("min_p", value)?),
            b"repetition_penalty" => {
                self.repetition_penalty = Some(float("repetition_penalty", value)?)
            }
            b"seed" => self.seed = Some(count("seed", value)?),
            b"stop" => self.stop = Some(strings(r, "stop", value, Some(MAX_STOPS))?),
            b"adapter" => self.adapter = Some(adapter_name("adapter", value)?),
            _ => r.skip_children(value).map_err(broken)?,
        }
        Ok(())
    }
}

fn broken(e: Malformed) -> ProtocolError {
    ProtocolError::new(ErrorCode::BadFrame, e.to_string())
}

fn float(field: &str, value: Item<'_>) -> Result<f64, ProtocolError> {
    match value {
        Item::Float(v) => Ok(v),
        Item::Uint(v) => Ok(v as f64),
        Item::Int(v) => Ok(v as f64),
        other => Err(wrong_type(field, "a number", other)),
    }
}

/// `messages`: an array of `{role, content}` maps of strings.
fn messages<'a>(r: &mut Reader<'a>, value: Item<'a>) -> Result<Vec<ChatMessage>, ProtocolError> {
    let Item::Array(len) = value else {
        return Err(wrong_type("messages", "an array of maps", value));
    };
    if len as usize > MAX_MESSAGES {
        return Err(ProtocolError::bad_request(format!(
            "`messages` has {len} items, more than the limit of {MAX_MESSAGES}"
        )));
    }
    let mut out = Vec::new();
    for index in 0..len {
        let Item::Map(pairs) = r.next().map_err(broken)? else {
            return Err(ProtocolError::bad_request(format!(
                "`messages[{index}]` must be a map with `role` and `content`"
            )));
        };
        let (mut role, mut content) = (None, None);
        for _ in 0..pairs {
            let key = r.next().map_err(broken)?;
            let value = r.next().map_err(broken)?;
            match key {
                Item::Str(b"role") => {
                    role = Some(string(&format!("messages[{index}].role"), value)?)
                }
                Item::Str(b"content") => {
                    content = Some(string(&format!("messages[{index}].content"), value)?)
                }
                _ => r.skip_children(value).map_err(broken)?,
            }
        }
        match (role, content) {
            (Some(role), Some(content)) => out.push(ChatMessage {
                role: role.to_owned(),
                content: content.to_owned(),
            }),
            _ => {
                return Err(ProtocolError::bad_request(format!(
                    "`messages[{index}]` needs string `role` and `content`"
                )));
            }
        }
    }
    Ok(out)
}

/// A seed for a request that names none: different for every request, from the OS-seeded
/// hasher std gives each `RandomState`.
fn random_seed() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// Builds the [`Op`] of a `generate` request.
pub(super) fn decode_generate<'a>(
    model: &'a str,
    g: GenerateFields<'a>,
) -> Result<Op<'a>, ProtocolError> {
    let prompt = match (g.prompt, g.messages) {
        (Some(prompt), None) => Prompt::Text(prompt.to_owned()),
        (None, Some(messages)) if messages.is_empty() => {
            return Err(ProtocolError::bad_request(
                "`messages` must hold at least one turn",
            ));
        }
        (None, Some(messages)) => Prompt::Messages(messages),
        (Some(_), Some(_)) => {
            return Err(ProtocolError::bad_request(
                "send exactly one of `prompt` and `messages`, not both",
            ));
        }
        (None, None) => return Err(missing("prompt` or `messages")),
    };
    let max_tokens = g.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if max_tokens == 0 {
        return Err(ProtocolError::bad_request(
            "`max_tokens` must be at least 1",
        ));
    }
    let temperature = g.temperature.unwrap_or(1.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ProtocolError::bad_request(format!(
            "`temperature` must be in 0..=2, got {temperature}"
        )));
    }
    let top_p = g.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ProtocolError::bad_request(format!(
            "`top_p` must be in (0, 1], got {top_p}"
        )));
    }
    let min_p = g.min_p.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&min_p) {
        return Err(ProtocolError::bad_request(format!(
            "`min_p` must be in 0..=1, got {min_p}"
        )));
    }
    let repetition_penalty = g.repetition_penalty.unwrap_or(1.0);
    if !(repetition_penalty > 0.0 && repetition_penalty <= 2.0) {
        return Err(ProtocolError::bad_request(format!(
            "`repetition_penalty` must be in (0, 2], got {repetition_penalty}"
        )));
    }
    let stop: Vec<String> = g
        .stop
        .unwrap_or_default()
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for (index, s) in stop.iter().enumerate() {
        if s.is_empty() || s.len() > MAX_STOP_BYTES {
            return Err(ProtocolError::bad_request(format!(
                "`stop[{index}]` must be 1..={MAX_STOP_BYTES} bytes, got {}",
                s.len()
            )));
        }
    }
    Ok(Op::Generate {
        model,
        request: GenerateRequest {
            prompt,
            max_tokens: usize::try_from(max_tokens).unwrap_or(usize::MAX),
            sampling: Sampling {
                temperature: temperature as f32,
                top_p: top_p as f32,
                top_k: usize::try_from(g.top_k.unwrap_or(0)).unwrap_or(usize::MAX),
                min_p: min_p as f32,
                repetition_penalty: repetition_penalty as f32,
                seed: g.seed.unwrap_or_else(random_seed),
            },
            stop,
            adapter: g.adapter.map(str::to_owned),
        },
    })
}

/// Builds the [`Op`] of a `cancel` request.
pub(super) fn decode_cancel<'a>(target: Option<u64>) -> Result<Op<'a>, ProtocolError> {
    Ok(Op::Cancel {
        target: target.ok_or_else(|| missing("target"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Limits, decode};
    use super::*;
    use rmpv::Value as V;

    const LIMITS: Limits = Limits { max_batch_items: 3 };

    fn body(op: &str, fields: &[(&str, V)]) -> Vec<u8> {
        let mut entries = vec![(V::from("id"), V::from(9)), (V::from("op"), V::from(op))];
        entries.extend(fields.iter().map(|(k, v)| (V::from(*k), v.clone())));
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &V::Map(entries)).unwrap();
        out
    }

    fn turn(role: &str, content: &str) -> V {
        V::Map(vec![
            (V::from("role"), V::from(role)),
            (V::from("content"), V::from(content)),
        ])
    }

    #[test]
    fn decodes_a_full_generate_request() {
        let b = body(
            "generate",
            &[
                ("model", V::from("m")),
                ("messages", V::Array(vec![turn("user", "hé")])),
                ("max_tokens", V::from(5)),
                ("temperature", V::F64(0.5)),
                ("top_p", V::F32(0.9)),
                ("top_k", V::from(40)),
                ("min_p", V::F64(0.05)),
                ("repetition_penalty", V::F64(1.3)),
                ("seed", V::from(42)),
                ("stop", V::Array(vec![V::from("\n")])),
            ],
        );
        let Op::Generate { model, request } = decode(&b, LIMITS).unwrap().op else {
            panic!("not a generate");
        };
        assert_eq!(model, "m");
        assert_eq!(
            request.prompt,
            Prompt::Messages(vec![ChatMessage {
                role: "user".into(),
                content: "hé".into()
            }])
        );
        assert_eq!(request.max_tokens, 5);
        assert_eq!(request.sampling.temperature, 0.5);
        assert!((request.sampling.top_p - 0.9).abs() < 1e-6);
        assert_eq!((request.sampling.top_k, request.sampling.seed), (40, 42));
        assert!((request.sampling.min_p - 0.05).abs() < 1e-6);
        assert!((request.sampling.repetition_penalty - 1.3).abs() < 1e-6);
        assert_eq!(request.stop, vec!["\n".to_owned()]);
    }

    #[test]
    fn defaults_follow_the_protocol() {
        let b = body(
            "generate",
            &[("model", V::from("m")), ("prompt", V::from("x"))],
        );
        let Op::Generate { request, .. } = decode(&b, LIMITS).unwrap().op else {
            panic!("not a generate");
        };
        assert_eq!(request.max_tokens, DEFAULT_MAX_TOKENS as usize);
        assert_eq!(
            (
                request.sampling.temperature,
                request.sampling.top_p,
                request.sampling.top_k
            ),
            (1.0, 1.0, 0)
        );
        assert_eq!(
            (request.sampling.min_p, request.sampling.repetition_penalty),
            (0.0, 1.0)
        );
        assert!(request.stop.is_empty());
    }

    #[test]
    fn bad_generate_fields_are_bad_requests() {
        let m = ("model", V::from("m"));
        let p = ("prompt", V::from("x"));
        let cases: Vec<(Vec<(&str, V)>, &str)> = vec![
            (vec![m.clone()], "`prompt` or `messages`"),
            (
                vec![
                    m.clone(),
                    p.clone(),
                    ("messages", V::Array(vec![turn("u", "c")])),
                ],
                "exactly one",
            ),
            (
                vec![m.clone(), ("messages", V::Array(vec![]))],
                "at least one turn",
            ),
            (
                vec![m.clone(), ("messages", V::Array(vec![V::from(1)]))],
                "`messages[0]` must be a map",
            ),
            (
                vec![
                    m.clone(),
                    (
                        "messages",
                        V::Array(vec![V::Map(vec![(V::from("role"), V::from("u"))])]),
                    ),
                ],
                "needs string `role` and `content`",
            ),
            (
                vec![
                    m.clone(),
                    (
                        "messages",
                        V::Array(vec![V::Map(vec![
                            (V::from("role"), V::from(3)),
                            (V::from("content"), V::from("c")),
                        ])]),
                    ),
                ],
                "`messages[0].role` must be a string",
            ),
            (
                vec![m.clone(), ("prompt", V::from(1))],
                "`prompt` must be a string",
            ),
            (
                vec![m.clone(), p.clone(), ("max_tokens", V::from(0))],
                "at least 1",
            ),
            (
                vec![m.clone(), p.clone(), ("max_tokens", V::from(-3))],
                "must not be negative",
            ),
            (
                vec![m.clone(), p.clone(), ("temperature", V::F64(2.5))],
                "`temperature` must be in 0..=2",
            ),
            (
                vec![m.clone(), p.clone(), ("temperature", V::F64(f64::NAN))],
                "`temperature` must be in 0..=2",
            ),
            (
                vec![m.clone(), p.clone(), ("temperature", V::from("hot"))],
                "`temperature` must be a number",
            ),
            (
                vec![m.clone(), p.clone(), ("top_p", V::F64(0.0))],
                "`top_p` must be in (0, 1]",
            ),
            (
                vec![m.clone(), p.clone(), ("top_p", V::F64(1.5))],
                "`top_p` must be in (0, 1]",
            ),
            (
                vec![m.clone(), p.clone(), ("top_k", V::F64(1.5))],
                "`top_k` must be a non-negative integer",
            ),
            (
                vec![m.clone(), p.clone(), ("min_p", V::F64(1.5))],
                "`min_p` must be in 0..=1",
            ),
            (
                vec![m.clone(), p.clone(), ("repetition_penalty", V::F64(0.0))],
                "`repetition_penalty` must be in (0, 2]",
            ),
            (
                vec![
                    m.clone(),
                    p.clone(),
                    ("repetition_penalty", V::F64(f64::NAN)),
                ],
                "`repetition_penalty` must be in (0, 2]",
            ),
            (
                vec![m.clone(), p.clone(), ("seed", V::from(-1))],
                "`seed` must not be negative",
            ),
            (
                vec![m.clone(), p.clone(), ("stop", V::from("x"))],
                "`stop` must be an array",
            ),
            (
                vec![
                    m.clone(),
                    p.clone(),
                    ("stop", V::Array(vec![V::from(""); 1])),
                ],
                "`stop[0]` must be 1..=256 bytes",
            ),
            (
                vec![
                    m.clone(),
                    p.clone(),
                    ("stop", V::Array(vec![V::from("a".repeat(257))])),
                ],
                "must be 1..=256 bytes",
            ),
            (
                vec![
                    m.clone(),
                    p.clone(),
                    ("stop", V::Array(vec![V::from("a"); 9])),
                ],
                "more than the limit of 8",
            ),
            (vec![p.clone()], "`model` is required"),
        ];
        for (fields, needle) in cases {
            let r = decode(&body("generate", &fields), LIMITS).expect_err(needle);
            assert_eq!(
                (r.id, r.error.code),
                (9, ErrorCode::BadRequest),
                "{}",
                r.error.message
            );
            assert!(
                r.error.message.contains(needle),
                "{:?} lacks {needle:?}",
                r.error.message
            );
        }
    }

    #[test]
    fn cancel_needs_an_unsigned_target() {
        let b = body("cancel", &[("target", V::from(7))]);
        assert_eq!(decode(&b, LIMITS).unwrap().op, Op::Cancel { target: 7 });
        for (fields, needle) in [
            (vec![], "`target` is required"),
            (
                vec![("target", V::from("7"))],
                "`target` must be a non-negative integer",
            ),
            (
                vec![("target", V::from(-7))],
                "`target` must not be negative",
            ),
        ] {
            let r = decode(&body("cancel", &fields), LIMITS).expect_err(needle);
            assert_eq!(r.error.code, ErrorCode::BadRequest);
            assert!(r.error.message.contains(needle), "{}", r.error.message);
        }
    }
}
