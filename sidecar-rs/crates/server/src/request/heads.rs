//! `score`, `classify` and `extract` requests: the batches of the non-generative task heads.

use super::fields::Fields;
use super::op::{HeadInputs, Op};
use super::values::missing;
use crate::error::ProtocolError;

fn non_empty<'a>(field: &str, items: Option<Vec<&'a str>>) -> Result<Vec<&'a str>, ProtocolError> {
    let items = items.ok_or_else(|| missing(field))?;
    if items.is_empty() {
        return Err(ProtocolError::bad_request(format!(
            "`{field}` must hold at least one string"
        )));
    }
    Ok(items)
}

/// Builds the [`Op`] of a `score`, `classify` or `extract` request from its fields.
pub(super) fn decode<'a>(op: &str, fields: Fields<'a>) -> Result<Op<'a>, ProtocolError> {
    let model = fields.required_model()?;
    let inputs = match op {
        "score" => {
            let queries = non_empty("queries", fields.queries)?;
            let documents = non_empty("documents", fields.documents)?;
            if queries.len() != documents.len() {
                return Err(ProtocolError::bad_request(format!(
                    "`queries` has {} items but `documents` has {}; pair i is \
                     (queries[i], documents[i])",
                    queries.len(),
                    documents.len()
                )));
            }
            HeadInputs::Pairs { queries, documents }
        }
        "classify" => HeadInputs::Classify(non_empty("inputs", fields.inputs)?),
        _ => HeadInputs::Extract(non_empty("inputs", fields.inputs)?),
    };
    Ok(Op::Head {
        model,
        inputs,
        truncate: fields.truncate.unwrap_or(true),
        traceparents: fields.traceparents.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::request::{Limits, decode as decode_frame};
    use rmpv::Value as V;

    const LIMITS: Limits = Limits { max_batch_items: 3 };

    fn body(op: &str, extra: &[(&str, V)]) -> Vec<u8> {
        let mut entries = vec![
            (V::from("id"), V::from(7)),
            (V::from("op"), V::from(op)),
            (V::from("model"), V::from("m")),
        ];
        entries.extend(extra.iter().map(|(k, v)| (V::from(*k), v.clone())));
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &V::Map(entries)).unwrap();
        out
    }

    fn strs(items: &[&str]) -> V {
        V::Array(items.iter().map(|s| V::from(*s)).collect())
    }

    #[test]
    fn head_requests_decode() {
        let b = body(
            "score",
            &[
                ("queries", strs(&["q1", "q2"])),
                ("documents", strs(&["d1", "d2"])),
                ("truncate", V::from(false)),
                ("traceparents", strs(&["tp"])),
                ("inputs", V::from(3)), // another op's field: ignored, whatever its type
            ],
        );
        assert_eq!(
            decode_frame(&b, LIMITS).unwrap().op,
            Op::Head {
                model: "m",
                inputs: HeadInputs::Pairs {
                    queries: vec!["q1", "q2"],
                    documents: vec!["d1", "d2"],
                },
                truncate: false,
                traceparents: vec!["tp"],
            }
        );
        for (op, want) in [
            ("classify", HeadInputs::Classify(vec!["a"])),
            ("extract", HeadInputs::Extract(vec!["a"])),
        ] {
            let frame = body(op, &[("inputs", strs(&["a"]))]);
            let request = decode_frame(&frame, LIMITS).unwrap();
            assert_eq!(request.op.name(), op);
            assert_eq!(
                request.op,
                Op::Head {
                    model: "m",
                    inputs: want,
                    truncate: true,
                    traceparents: vec![],
                }
            );
        }
    }

    #[test]
    fn bad_head_requests_are_bad_requests_under_the_request_id() {
        let pairs =
            |q: &[&str], d: &[&str]| body("score", &[("queries", strs(q)), ("documents", strs(d))]);
        let cases = [
            (
                pairs(&["a", "b"], &["a"]),
                "`queries` has 2 items but `documents` has 1",
            ),
            (pairs(&[], &[]), "`queries` must hold at least one"),
            (
                body("score", &[("queries", strs(&["a"]))]),
                "`documents` is required",
            ),
            (
                body("score", &[("inputs", strs(&["a"]))]),
                "`queries` is required",
            ),
            (
                pairs(&["a", "b", "c", "d"], &["a", "b", "c", "d"]),
                "`queries` has 4 items, more than the limit of 3",
            ),
            (
                body(
                    "score",
                    &[("queries", strs(&["a"])), ("documents", V::from("a"))],
                ),
                "`documents` must be an array of strings",
            ),
            (
                body(
                    "score",
                    &[
                        ("queries", strs(&["a"])),
                        ("documents", V::Array(vec![V::from(1)])),
                    ],
                ),
                "`documents[0]` must be a string",
            ),
            (body("classify", &[]), "`inputs` is required"),
            (
                body("extract", &[("inputs", strs(&[]))]),
                "`inputs` must hold at least one",
            ),
            (
                body(
                    "extract",
                    &[("inputs", strs(&["a"])), ("truncate", V::from(1))],
                ),
                "`truncate` must be a bool",
            ),
            (
                body("classify", &[("inputs", strs(&["a", "b", "c", "d"]))]),
                "`inputs` has 4 items",
            ),
        ];
        for (b, needle) in cases {
            let rejected = decode_frame(&b, LIMITS).unwrap_err();
            assert_eq!(
                (rejected.id, rejected.error.code),
                (7, ErrorCode::BadRequest),
                "{}",
                rejected.error.message
            );
            assert!(
                rejected.error.message.contains(needle),
                "{:?} lacks {needle:?}",
                rejected.error.message
            );
        }
    }
}
