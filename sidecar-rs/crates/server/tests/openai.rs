//! The `openai` backend through the real sidecar binary's socket, against a real
//! llama-cpp-python server serving SmolLM2: `load`, `embed`, streamed `generate`, `cancel`, and
//! what a remote that is down or talks garbage does to the connection (nothing).

mod common;
#[path = "../../../test-support/llama_server.rs"]
mod llama_server;
#[path = "../../../test-support/smollm2.rs"]
mod smollm2;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use common::*;
use llama_server::{LlamaServer, Mode};
use serde_json::json;

const BINARY: &str = env!("CARGO_BIN_EXE_shoal-sidecar");
const PROMPT: &str = "Once upon a time, in a small village by the sea,";

/// The sidecar binary on a temporary socket; it exits when this handle (its stdin) is dropped.
struct Sidecar {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sidecar {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sidecar.sock");
        let mut child = Command::new(BINARY)
            .arg("--socket")
            .arg(&socket)
            .arg("--exit-on-stdin-eof")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the sidecar binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("ready "), "{line:?}");
        Self {
            child,
            socket,
            _dir: dir,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(&self.socket).await
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn embed_server() -> &'static LlamaServer {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    SERVER.get_or_init(|| LlamaServer::start(Mode::Embedding, "smollm2-embed", None))
}

fn generate_server() -> &'static LlamaServer {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    SERVER.get_or_init(|| LlamaServer::start(Mode::Generate, "smollm2", None))
}

fn openai_map(url: &str, remote_model: &str, family: &str) -> V {
    V::Map(vec![
        (V::from("url"), V::from(url)),
        (V::from("remote_model"), V::from(remote_model)),
        (V::from("family"), V::from(family)),
    ])
}

fn load_openai(id: u64, model: &str, openai: V) -> V {
    req(
        id,
        "load",
        &[
            ("model", V::from(model)),
            ("backend", V::from("openai")),
            ("openai", openai),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_embedding_model_answers_like_the_remote_beside_a_candle_model() {
    let server = embed_server();
    let sidecar = Sidecar::start();
    let mut client = sidecar.client().await;
    let loaded = client
        .call(&load_openai(
            1,
            "remote-embed",
            openai_map(&server.url, &server.alias, "embedding"),
        ))
        .await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "family").as_str(), Some("embedding"));
    assert_eq!(get(&loaded, "memory_bytes").as_u64(), Some(0));
    assert_eq!(get(&loaded, "max_input_tokens").as_u64(), Some(2048));
    let minilm = minilm_dir();
    let loaded = client
        .call(&req(
            2,
            "load",
            &[
                ("model", V::from("minilm")),
                ("path", V::from(minilm.to_str().unwrap())),
            ],
        ))
        .await;
    assert_ok(&loaded, 2);

    let inputs = ["hello world", "Le café est très bon ☕"];
    let embedded = client
        .call(&req(
            3,
            "embed",
            &[
                ("model", V::from("remote-embed")),
                ("inputs", strs(&inputs)),
            ],
        ))
        .await;
    assert_ok(&embedded, 3);
    let direct = server.json(
        "/v1/embeddings",
        &json!({ "model": server.alias, "input": inputs }),
    );
    for (i, row) in rows(&embedded).iter().enumerate() {
        let expected: Vec<f32> = direct["data"][i]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert!(cosine(row, &expected) >= 0.9999, "row {i}");
    }
    let tokens: u64 = get(&embedded, "tokens")
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .sum();
    assert_eq!(Some(tokens), direct["usage"]["prompt_tokens"].as_u64());

    // The candle model on the same socket is unaffected.
    let local = client
        .call(&req(
            4,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", strs(&["hello world"])),
            ],
        ))
        .await;
    assert_ok(&local, 4);
    assert_eq!(get(&local, "dim").as_u64(), Some(384));
}

/// Sends a greedy `generate` and collects `(text, tokens frames, done frame)`.
async fn generate(client: &mut Client, id: u64, fields: &[(&str, V)]) -> (String, usize, V) {
    let mut all = vec![
        ("model", V::from("remote-gen")),
        ("temperature", V::F64(0.0)),
        ("seed", V::from(7)),
    ];
    all.extend(fields.iter().cloned());
    client.send(&req(id, "generate", &all)).await;
    let mut text = String::new();
    let mut frames = 0;
    loop {
        let frame = client.recv().await;
        assert_eq!(id_of(&frame), id, "{frame}");
        assert_eq!(get(&frame, "ok").as_bool(), Some(true), "{frame}");
        match get(&frame, "event").as_str() {
            Some("tokens") => {
                text.push_str(get(&frame, "text").as_str().unwrap());
                frames += 1;
            }
            Some("done") => return (text, frames, frame),
            other => panic!("unexpected event {other:?}: {frame}"),
        }
    }
}

fn direct_completion(server: &LlamaServer, max_tokens: u64) -> String {
    let answer = server.json_warm(
        "/v1/completions",
        &json!({
            "model": server.alias, "prompt": PROMPT, "max_tokens": max_tokens,
            "temperature": 0.0, "top_p": 1.0, "seed": 7,
        }),
    );
    answer["choices"][0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_generator_streams_stops_and_cancels() {
    let server = generate_server();
    let sidecar = Sidecar::start();
    let mut client = sidecar.client().await;
    let loaded = client
        .call(&load_openai(
            1,
            "remote-gen",
            openai_map(&server.url, &server.alias, "generate"),
        ))
        .await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "family").as_str(), Some("generate"));

    // Greedy, to max_tokens: the same text the remote gives when asked directly.
    let expected = direct_completion(server, 24);
    let (text, frames, done) = generate(
        &mut client,
        2,
        &[("prompt", V::from(PROMPT)), ("max_tokens", V::from(24))],
    )
    .await;
    assert_eq!(text, expected);
    assert!(frames >= 2, "streamed in {frames} frames");
    assert_eq!(get(&done, "finish_reason").as_str(), Some("length"));
    assert_eq!(get(&done, "completion_tokens").as_u64(), Some(24));

    // A stop string from the middle of that text ends generation right before it.
    let words: Vec<&str> = expected.split_whitespace().collect();
    let stop = format!("{} {}", words[3], words[4]);
    let before = &expected[..expected.find(&stop).unwrap()];
    let (text, _, done) = generate(
        &mut client,
        3,
        &[
            ("prompt", V::from(PROMPT)),
            ("max_tokens", V::from(24)),
            ("stop", strs(&[stop.as_str()])),
        ],
    )
    .await;
    assert_eq!(text, before);
    assert_eq!(get(&done, "finish_reason").as_str(), Some("stop"));

    // Chat messages go through the remote's chat template.
    let messages = V::Array(vec![V::Map(vec![
        (V::from("role"), V::from("user")),
        (
            V::from("content"),
            V::from("What is the capital of France?"),
        ),
    ])]);
    let direct = server.json(
        "/v1/chat/completions",
        &json!({
            "model": server.alias,
            "messages": [{ "role": "user", "content": "What is the capital of France?" }],
            "max_tokens": 12, "temperature": 0.0, "top_p": 1.0, "seed": 7,
        }),
    );
    let (text, _, _) = generate(
        &mut client,
        4,
        &[("messages", messages), ("max_tokens", V::from(12))],
    )
    .await;
    assert_eq!(
        Some(text.as_str()),
        direct["choices"][0]["message"]["content"].as_str()
    );

    // Cancel mid-stream: the stream ends `cancelled`, and the model keeps serving.
    client
        .send(&req(
            5,
            "generate",
            &[
                ("model", V::from("remote-gen")),
                ("prompt", V::from(PROMPT)),
                ("max_tokens", V::from(1500)),
                ("temperature", V::F64(0.0)),
            ],
        ))
        .await;
    let first = client.recv().await;
    assert_eq!(get(&first, "event").as_str(), Some("tokens"), "{first}");
    client
        .send(&req(6, "cancel", &[("target", V::from(5))]))
        .await;
    let mut cancelled_answer = None;
    let mut finish = None;
    while cancelled_answer.is_none() || finish.is_none() {
        let frame = client.recv().await;
        match id_of(&frame) {
            6 => cancelled_answer = get(&frame, "cancelled").as_bool(),
            5 if get(&frame, "event").as_str() == Some("done") => {
                finish = get(&frame, "finish_reason").as_str().map(str::to_owned)
            }
            5 => {}
            _ => panic!("unexpected frame {frame}"),
        }
    }
    assert_eq!(cancelled_answer, Some(true));
    assert_eq!(finish.as_deref(), Some("cancelled"));
    let (text, _, _) = generate(
        &mut client,
        7,
        &[("prompt", V::from(PROMPT)), ("max_tokens", V::from(24))],
    )
    .await;
    assert_eq!(text, expected);
    let stats = client.call(&req(8, "stats", &[])).await;
    assert_ok(&stats, 8);
}

/// Serves `/v1/models` and a good first (probe) answer, then garbage to every request.
fn garbage_remote() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut embeddings = 0;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
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
            let body = if line.contains("/v1/models") {
                r#"{"data":[{"id":"junk"}]}"#
            } else {
                embeddings += 1;
                match embeddings {
                    1 => r#"{"data":[{"index":0,"embedding":[1.0,0.0]}]}"#,
                    _ => r#"{"data":"#,
                }
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remotes_that_are_down_or_talk_garbage_fail_only_their_requests() {
    let sidecar = Sidecar::start();
    let mut client = sidecar.client().await;

    // Settings the decoder refuses, by name.
    for (id, openai, needle) in [
        (1, V::Map(vec![]), "`openai.url` is required"),
        (
            2,
            openai_map("https://example.com", "m", "embedding"),
            "must start with http://",
        ),
        (
            3,
            V::Map(vec![(V::from("uri"), V::from("http://h"))]),
            "unknown `openai` field `uri`",
        ),
        (
            4,
            openai_map("http://127.0.0.1:1", "m", "rerank"),
            "`openai.family` must be `embedding` or `generate`",
        ),
    ] {
        let answer = client.call(&load_openai(id, "m", openai)).await;
        let message = assert_error(&answer, id, "bad_request");
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
    let answer = client
        .call(&req(
            5,
            "load",
            &[
                ("model", V::from("m")),
                ("openai", openai_map("http://127.0.0.1:1", "m", "embedding")),
            ],
        ))
        .await;
    assert_error(&answer, 5, "bad_request");

    // Nobody listening: the load fails and nothing is registered.
    let port = llama_server::free_port();
    let answer = client
        .call(&load_openai(
            6,
            "down",
            openai_map(&format!("http://127.0.0.1:{port}"), "m", "embedding"),
        ))
        .await;
    let message = assert_error(&answer, 6, "load_failed");
    assert!(message.contains("cannot connect"), "{message}");

    // A remote that loads fine and then answers garbage: an error frame per request.
    let answer = client
        .call(&load_openai(
            7,
            "garbage",
            openai_map(&garbage_remote(), "junk", "embedding"),
        ))
        .await;
    assert_ok(&answer, 7);
    assert_eq!(get(&answer, "dim").as_u64(), Some(2));
    for id in [8, 9] {
        let answer = client
            .call(&req(
                id,
                "embed",
                &[("model", V::from("garbage")), ("inputs", strs(&["x"]))],
            ))
            .await;
        let message = assert_error(&answer, id, "internal");
        assert!(message.contains("malformed answer"), "{message}");
    }

    // A remote that goes away after the load.
    let server = LlamaServer::start(Mode::Embedding, "short-lived", None);
    let answer = client
        .call(&load_openai(
            10,
            "short-lived",
            openai_map(&server.url, &server.alias, "embedding"),
        ))
        .await;
    assert_ok(&answer, 10);
    drop(server);
    let answer = client
        .call(&req(
            11,
            "embed",
            &[("model", V::from("short-lived")), ("inputs", strs(&["x"]))],
        ))
        .await;
    let message = assert_error(&answer, 11, "internal");
    assert!(message.contains("cannot connect"), "{message}");

    // The socket is fine throughout.
    let health = client.call(&req(12, "health", &[])).await;
    assert_ok(&health, 12);
    let stats = client.call(&req(13, "stats", &[])).await;
    let models: Vec<&str> = get(&stats, "models")
        .as_array()
        .unwrap()
        .iter()
        .map(|m| get(m, "model").as_str().unwrap())
        .collect();
    assert_eq!(models, vec!["garbage", "short-lived"]);
}
