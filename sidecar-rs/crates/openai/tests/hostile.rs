//! Remotes that misbehave: each answer below is replayed byte for byte by a small TCP server,
//! since no real server can be made to send them. Every one must become a typed error for the
//! request it hit, and the model must keep working for the next.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shoal_sidecar_core::{
    Backend, BackendError, EmbedBatch, FinishReason, GenerateRequest, Generator, Prompt, Sampling,
    SequenceEvent, SequenceId,
};
use shoal_sidecar_openai::{OpenAiBackend, OpenAiError, OpenAiSettings};

const PATIENCE: Duration = Duration::from_secs(120);

enum Reply {
    Bytes(Vec<u8>),
    /// Accepts and never answers.
    Silence,
}

fn json(body: &str) -> Reply {
    Reply::Bytes(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn status(line: &str, body: &str) -> Reply {
    Reply::Bytes(
        format!(
            "HTTP/1.1 {line}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn events(body: &str) -> Reply {
    Reply::Bytes(
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n{body}").into_bytes(),
    )
}

const MODELS: &str = r#"{"object":"list","data":[{"id":"junk","object":"model"}]}"#;

/// Serves `/v1/models` and answers the n-th request to any other path with `script(path, n)`.
fn serve(script: impl Fn(&str, usize) -> Reply + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = Arc::new(script);
    let counts = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let script = Arc::clone(&script);
            let counts = Arc::clone(&counts);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).unwrap();
                    let header = header.trim_end().to_ascii_lowercase();
                    if header.is_empty() {
                        break;
                    }
                    if let Some(v) = header.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                let reply = if path == "/v1/models" {
                    json(MODELS)
                } else {
                    let n = {
                        let mut counts = counts.lock().unwrap();
                        let n = counts.entry(path.clone()).or_default();
                        *n += 1;
                        *n
                    };
                    script(&path, n)
                };
                match reply {
                    Reply::Bytes(bytes) => {
                        let _ = stream.write_all(&bytes);
                    }
                    Reply::Silence => {
                        let mut sink = [0u8; 64];
                        while stream.read(&mut sink).is_ok_and(|n| n > 0) {}
                    }
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn load(url: &str, family: &str, timeout_ms: u64) -> Result<OpenAiBackend, OpenAiError> {
    OpenAiBackend::load(
        OpenAiSettings {
            url: Some(url.to_owned()),
            remote_model: Some("junk".into()),
            family: Some(family.into()),
            timeout_ms: Some(timeout_ms),
            ..OpenAiSettings::default()
        }
        .resolve()
        .unwrap(),
    )
}

const GOOD_ROW: &str =
    r#"{"data":[{"index":0,"embedding":[0.5,0.25,1.0]}],"usage":{"prompt_tokens":3}}"#;

fn batch() -> EmbedBatch {
    EmbedBatch {
        inputs: vec!["one".into()],
        truncate: true,
    }
}

#[test]
fn garbage_embedding_answers_fail_only_their_batch() {
    let garbage: Vec<(Reply, &str)> = vec![
        (json("this is not json"), "malformed answer"),
        (json(r#"{"data":[]}"#), "0 embeddings for 1 inputs"),
        (
            json(r#"{"data":[{"index":0,"embedding":[0.5,0.25]}]}"#),
            "expected 3",
        ),
        // What llama.cpp answers for a model without pooling: one vector per token.
        (
            json(r#"{"data":[{"index":0,"embedding":[[0.5,0.25,1.0]]}]}"#),
            "malformed answer",
        ),
        (
            json(r#"{"data":[{"index":0,"embedding":[1e999,0,0]}]}"#),
            "malformed answer",
        ),
        (
            status(
                "500 Internal Server Error",
                r#"{"error":{"message":"CUDA out of memory"}}"#,
            ),
            "HTTP 500: CUDA out of memory",
        ),
        (
            Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"data\":".to_vec()),
            "closed in the middle",
        ),
        (
            Reply::Bytes(b"<html>hello</html>\r\n".to_vec()),
            "not an HTTP/1.x status line",
        ),
        (Reply::Silence, "did not answer within 500 ms"),
    ];
    let needles: Vec<&str> = garbage.iter().map(|(_, n)| *n).collect();
    let replies = Mutex::new(
        garbage
            .into_iter()
            .map(|(r, _)| Some(r))
            .collect::<Vec<_>>(),
    );
    let url = serve(move |_, n| {
        // The first request is the load's probe; then one garbage answer, one good, in turn.
        let garbage = n >= 2 && n % 2 == 0;
        match garbage {
            true => replies.lock().unwrap()[(n - 2) / 2]
                .take()
                .unwrap_or_else(|| json(GOOD_ROW)),
            false => json(GOOD_ROW),
        }
    });
    let backend = load(&url, "embedding", 500).expect("the probe is fine");
    assert_eq!(backend.dim(), 3);
    for needle in needles {
        let error = backend.embed(&batch()).unwrap_err();
        let BackendError::Inference(message) = &error else {
            panic!("{error:?}");
        };
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        let good = backend.embed(&batch()).expect("the next batch works");
        assert_eq!(good.values, vec![0.5, 0.25, 1.0]);
        assert_eq!(good.tokens, vec![3]);
    }
}

#[test]
fn loads_fail_on_a_remote_that_does_not_embed() {
    for (reply, needle) in [
        (json(r#"{"data":[{"index":0,"embedding":[]}]}"#), "width 0"),
        (status("404 Not Found", "Not Found"), "HTTP 404: Not Found"),
    ] {
        let reply = Mutex::new(Some(reply));
        let url = serve(move |_, _| reply.lock().unwrap().take().unwrap_or(Reply::Silence));
        let error = load(&url, "embedding", 5_000).unwrap_err();
        assert!(error.to_string().contains(needle), "{error}");
    }
}

fn request(max_tokens: usize, stop: &[&str]) -> GenerateRequest {
    GenerateRequest {
        prompt: Prompt::Text("hi".into()),
        max_tokens,
        sampling: Sampling {
            temperature: 0.0,
            ..Sampling::default()
        },
        stop: stop.iter().map(|s| (*s).to_owned()).collect(),
        adapter: None,
    }
}

fn finish(generator: &dyn Generator, id: SequenceId) -> (String, SequenceEvent) {
    let started = Instant::now();
    let mut text = String::new();
    loop {
        assert!(started.elapsed() < PATIENCE, "the sequence never ended");
        for (got, event) in generator.step() {
            assert_eq!(got, id);
            match event {
                SequenceEvent::Tokens { text: t, token_ids } => {
                    assert!(token_ids.is_empty());
                    text.push_str(&t);
                }
                last => return (text, last),
            }
        }
    }
}

fn chunk(text: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":{finish}}}]}}\n\n"
    )
}

#[test]
fn streams_are_parsed_and_garbage_streams_fail_their_sequence() {
    let good = format!(
        "{}: keep-alive\n\n{}{}data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":11,\"completion_tokens\":3}}}}\n\ndata: [DONE]\n\n",
        chunk("Hel", None),
        chunk("lo wor", None),
        chunk("ld", Some("length")),
    );
    let cases: Vec<(Reply, Result<&str, &str>)> = vec![
        (events(&good), Ok("Hello world")),
        (
            events("data: {not json\n\n"),
            Err("a stream chunk is not a completion"),
        ),
        (
            events(&chunk("partial", None)),
            Err("the stream ended without a finish_reason"),
        ),
        (
            events("data: {\"error\":{\"message\":\"server overloaded\"}}\n\n"),
            Err("server overloaded"),
        ),
        (
            json(r#"{"choices":[{"text":"x"}]}"#),
            Err("expected a text/event-stream answer"),
        ),
        (
            status(
                "400 Bad Request",
                r#"{"error":{"message":"context length exceeded"}}"#,
            ),
            Err("HTTP 400: context length exceeded"),
        ),
        (Reply::Silence, Err("did not answer within 500 ms")),
    ];
    let expected: Vec<Result<&str, &str>> = cases.iter().map(|(_, e)| *e).collect();
    let replies = Mutex::new(cases.into_iter().map(|(r, _)| Some(r)).collect::<Vec<_>>());
    let url = serve(move |path, n| {
        if n == 1 {
            assert_eq!(path, "/v1/completions");
            return json(r#"{"choices":[{"text":"!","finish_reason":"length"}]}"#);
        }
        replies.lock().unwrap()[n - 2].take().unwrap()
    });
    let backend = load(&url, "generate", 500).expect("loads");
    let generator = backend.generator().unwrap();
    for (i, expected) in expected.into_iter().enumerate() {
        let id = SequenceId(i as u64);
        generator.admit(id, request(3, &[])).unwrap();
        let (text, last) = finish(generator, id);
        match expected {
            Ok(want) => {
                assert_eq!(text, want);
                assert_eq!(
                    last,
                    SequenceEvent::Done {
                        finish_reason: FinishReason::Length,
                        prompt_tokens: 11,
                        completion_tokens: 3,
                    }
                );
            }
            Err(needle) => {
                let SequenceEvent::Failed(BackendError::Inference(message)) = &last else {
                    panic!("case {i}: {last:?}");
                };
                assert!(
                    message.contains(needle),
                    "case {i}: {message:?} lacks {needle:?}"
                );
            }
        }
    }
}

#[test]
fn stop_strings_split_across_chunks_are_caught_locally() {
    // The remote ignores the stop string; the local filter must cut "… END …" right before it,
    // hold back "E" and "N" while they could still start it, and hang up.
    let stream = format!(
        "{}{}{}{}",
        chunk("alpha E", None),
        chunk("N", None),
        chunk("D omega", None),
        chunk(" more", Some("stop")),
    );
    let url = serve(move |_, n| match n {
        1 => json(r#"{"choices":[{"text":"!","finish_reason":"length"}]}"#),
        _ => events(&stream),
    });
    let backend = load(&url, "generate", 5_000).unwrap();
    let generator = backend.generator().unwrap();
    generator
        .admit(SequenceId(1), request(50, &["END"]))
        .unwrap();
    let (text, last) = finish(generator, SequenceId(1));
    assert_eq!(text, "alpha ");
    assert!(
        matches!(
            last,
            SequenceEvent::Done {
                finish_reason: FinishReason::Stop,
                ..
            }
        ),
        "{last:?}"
    );
}

#[test]
fn a_cancel_unblocks_a_silent_stream() {
    let url = serve(move |_, n| match n {
        1 => json(r#"{"choices":[{"text":"!","finish_reason":"length"}]}"#),
        _ => Reply::Silence,
    });
    let backend = load(&url, "generate", 3_600_000).unwrap();
    let generator = backend.generator().unwrap();
    generator.admit(SequenceId(1), request(5, &[])).unwrap();
    assert!(generator.step().is_empty());
    let done = generator.cancel(SequenceId(1)).unwrap();
    assert_eq!(
        done,
        SequenceEvent::Done {
            finish_reason: FinishReason::Cancelled,
            prompt_tokens: 3,
            completion_tokens: 0,
        }
    );
    assert_eq!(generator.active(), 0);
    assert!(generator.step().is_empty());
}
