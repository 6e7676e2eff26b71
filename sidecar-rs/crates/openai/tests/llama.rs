//! The openai backend against a real OpenAI-compatible server: llama-cpp-python serving
//! SmolLM2-135M-Instruct. What the backend returns is compared with what the same server
//! answers when asked directly, so these tests check the forwarding, not the model.

#[path = "../../../test-support/llama_server.rs"]
mod llama_server;
#[path = "../../../test-support/smollm2.rs"]
mod smollm2;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use llama_server::{LlamaServer, Mode};
use serde_json::json;
use shoal_sidecar_core::{
    Backend, ChatMessage, EmbedBatch, FinishReason, GenerateRequest, Generator, ModelFamily,
    Prompt, Sampling, SequenceEvent, SequenceId,
};
use shoal_sidecar_openai::{OpenAiBackend, OpenAiError, OpenAiSettings};

const PATIENCE: Duration = Duration::from_secs(300);
const PROMPT: &str = "Once upon a time, in a small village by the sea,";

fn embed_server() -> &'static LlamaServer {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    SERVER.get_or_init(|| LlamaServer::start(Mode::Embedding, "smollm2-embed", None))
}

fn generate_server() -> &'static LlamaServer {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    SERVER.get_or_init(|| LlamaServer::start(Mode::Generate, "smollm2", None))
}

fn settings(server: &LlamaServer, family: &str) -> OpenAiSettings {
    OpenAiSettings {
        url: Some(server.url.clone()),
        remote_model: Some(server.alias.clone()),
        family: Some(family.into()),
        ..OpenAiSettings::default()
    }
}

fn load(settings: OpenAiSettings) -> Result<OpenAiBackend, OpenAiError> {
    OpenAiBackend::load(settings.resolve().expect("valid settings"))
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn embeds_what_the_server_embeds() {
    let server = embed_server();
    let backend = load(settings(server, "embedding")).expect("loads");
    assert_eq!(backend.family(), ModelFamily::Embedding);
    assert_eq!(backend.memory_bytes(), 0);
    assert!(backend.generator().is_none());
    backend.health().expect("healthy");

    let inputs = ["hello world", "Le café est très bon ☕", "hello world"];
    let out = backend
        .embed(&EmbedBatch {
            inputs: inputs.iter().map(|&s| s.into()).collect(),
            truncate: true,
        })
        .expect("embeds");
    let direct = server.json(
        "/v1/embeddings",
        &json!({ "model": server.alias, "input": inputs }),
    );
    let rows = direct["data"].as_array().unwrap();
    assert_eq!(out.count(), 3);
    assert_eq!(out.dim, rows[0]["embedding"].as_array().unwrap().len());
    for (i, row) in rows.iter().enumerate() {
        let expected: Vec<f32> = row["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let got = out.row(i).unwrap();
        assert!(cosine(got, &expected) >= 0.9999, "row {i}");
    }
    assert!(cosine(out.row(0).unwrap(), out.row(1).unwrap()) < 0.999);
    // The remote counts tokens for the whole batch; the shares add up to its count.
    let total = direct["usage"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(out.total_tokens(), total);
    assert_eq!(out.truncated, vec![false; 3]);
}

#[test]
fn embedding_inputs_over_the_byte_guard_are_cut_or_refused() {
    let server = embed_server();
    let mut settings = settings(server, "embedding");
    settings.max_input_tokens = Some(4);
    let backend = load(settings).expect("loads");
    let long = "word ".repeat(200);
    let out = backend
        .embed(&EmbedBatch {
            inputs: vec![long.clone().into(), "short".into()],
            truncate: true,
        })
        .expect("a cut input still embeds");
    assert_eq!(out.truncated, vec![true, false]);
    let error = backend
        .embed(&EmbedBatch {
            inputs: vec!["short".into(), long.into()],
            truncate: false,
        })
        .unwrap_err();
    assert_eq!(
        error,
        shoal_sidecar_core::BackendError::InputTooLong { index: 1, max: 4 }
    );
}

fn greedy(prompt: Prompt, max_tokens: usize, stop: &[&str]) -> GenerateRequest {
    GenerateRequest {
        prompt,
        max_tokens,
        sampling: Sampling {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            seed: 7,
            ..Sampling::default()
        },
        stop: stop.iter().map(|s| (*s).to_owned()).collect(),
        adapter: None,
    }
}

/// Steps `generator` until every sequence in `ids` is done; returns, per id, its text, the
/// number of `Tokens` events and its last event.
fn drive(generator: &dyn Generator, ids: &[SequenceId]) -> Vec<(String, usize, SequenceEvent)> {
    let mut out: Vec<(String, usize, Option<SequenceEvent>)> =
        ids.iter().map(|_| (String::new(), 0, None)).collect();
    let started = Instant::now();
    while out.iter().any(|(_, _, done)| done.is_none()) {
        assert!(started.elapsed() < PATIENCE, "generation did not finish");
        for (id, event) in generator.step() {
            let slot = &mut out[ids.iter().position(|i| *i == id).expect("a known id")];
            assert!(slot.2.is_none(), "an event after the last one: {event:?}");
            match event {
                SequenceEvent::Tokens { text, .. } => {
                    slot.0.push_str(&text);
                    slot.1 += 1;
                }
                last => slot.2 = Some(last),
            }
        }
    }
    assert_eq!(generator.active(), 0);
    out.into_iter()
        .map(|(text, events, done)| (text, events, done.unwrap()))
        .collect()
}

fn direct_completion(server: &LlamaServer, max_tokens: usize) -> String {
    let answer = server.json_warm(
        "/v1/completions",
        &json!({
            "model": server.alias, "prompt": PROMPT, "max_tokens": max_tokens,
            "temperature": 0.0, "top_p": 1.0, "seed": 7,
        }),
    );
    assert_eq!(answer["choices"][0]["finish_reason"], "length", "{answer}");
    answer["choices"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn streams_the_greedy_completion_the_server_gives() {
    let server = generate_server();
    let _turn = server.exclusive();
    let backend = load(settings(server, "generate")).expect("loads");
    assert_eq!(backend.family(), ModelFamily::Generate);
    let generator = backend.generator().expect("a generator");
    let expected = direct_completion(server, 16);

    let id = SequenceId(1);
    let prompt_estimate = generator
        .admit(id, greedy(Prompt::Text(PROMPT.into()), 16, &[]))
        .expect("admitted");
    assert!(prompt_estimate > 0);
    let mut runs = drive(generator, &[id]);
    let (text, events, done) = runs.remove(0);
    assert_eq!(text, expected);
    assert!(events >= 2, "streamed in {events} events");
    let SequenceEvent::Done {
        finish_reason,
        completion_tokens,
        ..
    } = done
    else {
        panic!("not done: {done:?}");
    };
    assert_eq!(finish_reason, FinishReason::Length);
    assert_eq!(completion_tokens, 16);
}

#[test]
fn stop_strings_end_generation_before_them() {
    let server = generate_server();
    let _turn = server.exclusive();
    let backend = load(settings(server, "generate")).expect("loads");
    let generator = backend.generator().unwrap();
    let full = direct_completion(server, 24);
    // A stop string from the middle of the greedy answer: generation must end right before it.
    let words: Vec<&str> = full.split_whitespace().collect();
    assert!(words.len() >= 6, "{full:?}");
    let stop = format!("{} {}", words[3], words[4]);
    let before = &full[..full.find(&stop).unwrap()];

    // Beyond the four stop strings OpenAI's API takes, so only the local filter knows it.
    let stops = ["@@1", "@@2", "@@3", "@@4", stop.as_str()];
    generator
        .admit(
            SequenceId(5),
            greedy(Prompt::Text(PROMPT.into()), 24, &stops),
        )
        .unwrap();
    let (text, _, done) = drive(generator, &[SequenceId(5)]).remove(0);
    assert_eq!(text, before);
    assert!(
        matches!(
            done,
            SequenceEvent::Done {
                finish_reason: FinishReason::Stop,
                ..
            }
        ),
        "{done:?}"
    );
}

#[test]
fn chat_messages_go_through_the_chat_endpoint() {
    let server = generate_server();
    let _turn = server.exclusive();
    let backend = load(settings(server, "generate")).expect("loads");
    let generator = backend.generator().unwrap();
    let messages = vec![ChatMessage {
        role: "user".into(),
        content: "What is the capital of France?".into(),
    }];
    let direct = server.json_warm(
        "/v1/chat/completions",
        &json!({
            "model": server.alias,
            "messages": [{ "role": "user", "content": messages[0].content }],
            "max_tokens": 12, "temperature": 0.0, "top_p": 1.0, "seed": 7,
        }),
    );
    let expected = direct["choices"][0]["message"]["content"].as_str().unwrap();
    generator
        .admit(SequenceId(9), greedy(Prompt::Messages(messages), 12, &[]))
        .unwrap();
    let (text, _, done) = drive(generator, &[SequenceId(9)]).remove(0);
    assert_eq!(text, expected);
    assert!(matches!(done, SequenceEvent::Done { .. }), "{done:?}");
}

#[test]
fn sequences_run_side_by_side_and_cancel_alone() {
    let server = generate_server();
    let _turn = server.exclusive();
    let backend = load(settings(server, "generate")).expect("loads");
    let generator = backend.generator().unwrap();
    let expected = direct_completion(server, 8);

    let (long, short) = (SequenceId(20), SequenceId(21));
    generator
        .admit(long, greedy(Prompt::Text(PROMPT.into()), 1500, &[]))
        .unwrap();
    generator
        .admit(short, greedy(Prompt::Text(PROMPT.into()), 8, &[]))
        .unwrap();
    assert_eq!(generator.active(), 2);
    // Wait for the long one's first text, then cancel it mid-stream.
    let started = Instant::now();
    let mut short_text = String::new();
    let mut short_done = None;
    'wait: loop {
        assert!(
            started.elapsed() < PATIENCE,
            "no text from the long sequence"
        );
        for (id, event) in generator.step() {
            match (id == long, event) {
                (true, SequenceEvent::Tokens { .. }) => break 'wait,
                (true, other) => panic!("the long sequence ended early: {other:?}"),
                (false, SequenceEvent::Tokens { text, .. }) => short_text.push_str(&text),
                (false, done) => short_done = Some(done),
            }
        }
    }
    let cancelled = generator.cancel(long).expect("it was active");
    assert!(
        matches!(
            cancelled,
            SequenceEvent::Done { finish_reason: FinishReason::Cancelled, completion_tokens, .. }
                if completion_tokens >= 1
        ),
        "{cancelled:?}"
    );
    assert!(generator.cancel(long).is_none(), "cancelled twice");
    if short_done.is_none() {
        let (text, _, done) = drive(generator, &[short]).remove(0);
        short_text.push_str(&text);
        short_done = Some(done);
    }
    assert_eq!(short_text, expected);
    assert!(matches!(
        short_done,
        Some(SequenceEvent::Done {
            finish_reason: FinishReason::Length,
            ..
        })
    ));
    // Nothing more arrives for the cancelled one, and the model keeps generating.
    assert!(generator.step().is_empty());
    generator
        .admit(long, greedy(Prompt::Text(PROMPT.into()), 8, &[]))
        .unwrap();
    let (text, _, _) = drive(generator, &[long]).remove(0);
    assert_eq!(text, expected, "the reused id gets only its own text");
}

#[test]
fn load_refuses_what_the_remote_does_not_serve() {
    let server = generate_server();
    let _turn = server.exclusive();
    let mut wrong = settings(server, "generate");
    wrong.remote_model = Some("gpt-17".into());
    let error = load(wrong).unwrap_err();
    assert!(matches!(error, OpenAiError::UnknownModel { .. }), "{error}");
    assert!(error.to_string().contains("smollm2"), "{error}");

    let port = llama_server::free_port();
    let mut down = settings(server, "embedding");
    down.url = Some(format!("http://127.0.0.1:{port}"));
    let error = load(down).unwrap_err();
    assert!(matches!(error, OpenAiError::Connect { .. }), "{error}");
}

#[test]
fn an_api_key_is_sent_when_the_remote_wants_one() {
    let server = LlamaServer::start(Mode::Embedding, "keyed", Some("sk-test-123"));
    let error = load(settings(&server, "embedding")).unwrap_err();
    assert!(
        matches!(error, OpenAiError::Status { status: 401, .. }),
        "{error}"
    );
    let mut keyed = settings(&server, "embedding");
    keyed.api_key = Some("sk-test-123".into());
    let backend = load(keyed).expect("loads with the key");
    assert!(!format!("{backend:?}").contains("sk-test-123"));
    backend
        .embed(&EmbedBatch {
            inputs: vec!["hi".into()],
            truncate: true,
        })
        .expect("embeds with the key");
}
