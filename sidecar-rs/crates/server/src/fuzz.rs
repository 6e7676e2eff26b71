//! Property-based fuzzing of everything that reads bytes from a client: the frame reader and
//! the request decoder (with the MessagePack reader under it). Each property runs 256 cases in
//! `cargo test`; a long run raises the count, e.g.
//! `PROPTEST_CASES=200000 cargo test --release -p shoal-sidecar fuzz`.
//!
//! The properties: nothing panics on any input; a decoded request or a rejection always comes
//! back; rejections carry only the codes a client can get for what it sent; frames read back
//! exactly as written however the stream is cut; and no frame over the limit is ever returned.

use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::prelude::*;
use rmpv::Value;
use tokio::io::{AsyncRead, ReadBuf};

use crate::error::ErrorCode;
use crate::frame::{FrameError, read_frame, write_frame};
use crate::request::{Limits, decode};

const LIMITS: Limits = Limits { max_batch_items: 8 };

/// Codes the decoder may answer with; the others come from serving, never from decoding.
fn decoder_code(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::BadFrame | ErrorCode::UnknownOp | ErrorCode::BadRequest
    )
}

fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value).expect("writing to a Vec cannot fail");
    out
}

/// Any MessagePack value, nested up to four levels.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Boolean),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<f32>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        proptest::collection::vec(any::<u8>(), 0..16).prop_map(Value::Binary),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((inner.clone(), inner), 0..8).prop_map(Value::Map),
        ]
    })
}

const OPS: &[&str] = &[
    "health", "stats", "load", "unload", "embed", "score", "classify", "extract", "generate",
    "cancel", "nope",
];
const FIELDS: &[&str] = &[
    "model",
    "path",
    "backend",
    "sim",
    "openai",
    "inputs",
    "truncate",
    "traceparent",
    "traceparents",
    "query",
    "documents",
    "prompt",
    "messages",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "stop",
    "target",
];

/// A request map that is nearly right: a real op and real field names, each with a value
/// that may or may not be the type the op wants. This reaches the per-op validation that
/// random bytes almost never get past the envelope to.
fn near_request() -> impl Strategy<Value = (u64, Value)> {
    (
        any::<u64>(),
        proptest::sample::select(OPS),
        proptest::collection::vec((proptest::sample::select(FIELDS), any_value()), 0..6),
    )
        .prop_map(|(id, op, fields)| {
            let mut map = vec![
                (Value::from("id"), Value::from(id)),
                (Value::from("op"), Value::from(op)),
            ];
            map.extend(fields.into_iter().map(|(k, v)| (Value::from(k), v)));
            (id, Value::Map(map))
        })
}

/// Hands out at most `chunk` bytes per read, as a socket under load does.
struct Trickle<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

proptest! {
    #[test]
    fn arbitrary_bytes_decode_or_are_rejected(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Err(rejected) = decode(&body, LIMITS) {
            prop_assert!(decoder_code(rejected.error.code), "{:?}", rejected.error);
        }
    }

    #[test]
    fn arbitrary_values_decode_or_are_rejected(value in any_value()) {
        if let Err(rejected) = decode(&encode(&value), LIMITS) {
            prop_assert!(decoder_code(rejected.error.code), "{:?}", rejected.error);
        }
    }

    #[test]
    fn near_requests_are_answered_under_their_id((id, value) in near_request()) {
        match decode(&encode(&value), LIMITS) {
            Ok(request) => prop_assert_eq!(request.id, id),
            Err(rejected) => {
                prop_assert!(decoder_code(rejected.error.code), "{:?}", rejected.error);
                // A map with a readable id and op is always answered under that id, so the
                // client can match the error to its request.
                prop_assert_eq!(rejected.id, id, "{:?}", rejected.error);
            }
        }
    }

    #[test]
    fn cut_requests_never_panic((_, value) in near_request(), cut in any::<prop::sample::Index>()) {
        let bytes = encode(&value);
        let cut = cut.index(bytes.len());
        if let Err(rejected) = decode(&bytes[..cut], LIMITS) {
            prop_assert!(decoder_code(rejected.error.code), "{:?}", rejected.error);
        }
    }

    #[test]
    fn frames_read_back_as_written_however_the_stream_is_cut(
        bodies in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..6),
        chunk in 1usize..64,
    ) {
        let wire = block_on(async {
            let mut wire = Vec::new();
            for body in &bodies {
                write_frame(&mut wire, body).await.unwrap();
            }
            wire
        });
        let read = block_on(async {
            let mut reader = Trickle { data: &wire, chunk };
            let mut read = Vec::new();
            while let Some(body) = read_frame(&mut reader, 300).await.unwrap() {
                read.push(body);
            }
            read
        });
        prop_assert_eq!(read, bodies);
    }

    #[test]
    fn arbitrary_streams_never_yield_a_frame_over_the_limit(
        wire in proptest::collection::vec(any::<u8>(), 0..512),
        chunk in 1usize..64,
        max in 0u32..256,
    ) {
        block_on(async {
            let mut reader = Trickle { data: &wire, chunk };
            loop {
                match read_frame(&mut reader, max).await {
                    Ok(Some(body)) => assert!(body.len() <= max as usize),
                    Ok(None) => break,
                    Err(FrameError::TooLarge { len, max: m }) => {
                        assert!(len > m);
                        break;
                    }
                    Err(FrameError::Truncated) => break,
                    Err(FrameError::Io(e)) => panic!("a slice reader cannot fail: {e}"),
                }
            }
        });
    }
}
