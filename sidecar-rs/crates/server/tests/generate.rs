//! `generate` and `cancel` over the socket with the real SmolLM2-135M-Instruct GGUF: streamed
//! `tokens` frames and one `done`, continuous batching of many sequences, cancellation by
//! request and by a closed connection, `stats` while generating, and bad input.

mod common;

#[path = "../../../test-support/smollm2.rs"]
mod smollm2;

use std::collections::HashMap;
use std::time::Duration;

use common::*;

const MODEL: &str = "smol";

/// A sidecar with MiniLM as `minilm` and SmolLM2 as `smol`.
async fn sidecar() -> TestSidecar {
    TestSidecar::start_with(&["minilm"], |o| {
        o.models.push(shoal_sidecar::ModelArg {
            name: MODEL.into(),
            dir: smollm2::smollm2_gguf(),
        });
    })
    .await
}

fn generate(id: u64, fields: &[(&str, V)]) -> V {
    let mut all = vec![("model", V::from(MODEL))];
    all.extend(fields.iter().cloned());
    req(id, "generate", &all)
}

/// `event` of a frame, absent for answers of other ops.
fn event(frame: &V) -> Option<&str> {
    frame
        .as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some("event"))
        .and_then(|(_, v)| v.as_str())
}

fn greedy(id: u64, prompt: &str, max_tokens: u64) -> V {
    greedy_on(MODEL, id, prompt, max_tokens)
}

fn greedy_on(model: &str, id: u64, prompt: &str, max_tokens: u64) -> V {
    req(
        id,
        "generate",
        &[
            ("model", V::from(model)),
            ("prompt", V::from(prompt)),
            ("max_tokens", V::from(max_tokens)),
            ("temperature", V::F64(0.0)),
        ],
    )
}

/// What one stream delivered.
#[derive(Debug, Default, Clone)]
struct Stream {
    text: String,
    token_ids: Vec<u64>,
    frames: usize,
    done: Option<V>,
}

impl Stream {
    fn finish_reason(&self) -> &str {
        get(self.done.as_ref().expect("done"), "finish_reason")
            .as_str()
            .unwrap()
    }

    fn count(&self, key: &str) -> u64 {
        get(self.done.as_ref().expect("done"), key)
            .as_u64()
            .unwrap()
    }
}

/// Reads frames until every id in `ids` has its `done` (or error, returned as `done`).
async fn collect(client: &mut Client, ids: &[u64]) -> HashMap<u64, Stream> {
    let mut streams: HashMap<u64, Stream> = ids.iter().map(|&i| (i, Stream::default())).collect();
    while streams.values().any(|s| s.done.is_none()) {
        let frame = client.recv().await;
        let id = id_of(&frame);
        let s = streams
            .get_mut(&id)
            .unwrap_or_else(|| panic!("unexpected {frame}"));
        assert!(s.done.is_none(), "a frame after done: {frame}");
        if get(&frame, "ok").as_bool() != Some(true) {
            s.done = Some(frame);
            continue;
        }
        match get(&frame, "event").as_str() {
            Some("tokens") => {
                s.frames += 1;
                s.text.push_str(get(&frame, "text").as_str().unwrap());
                s.token_ids.extend(
                    get(&frame, "token_ids")
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_u64().unwrap()),
                );
            }
            Some("done") => s.done = Some(frame),
            other => panic!("unknown event {other:?} in {frame}"),
        }
    }
    streams
}

#[derive(serde::Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

impl Fixture {
    /// The raw-prompt cases (the chat case needs the template; other tests cover it).
    fn prompt_cases(&self) -> Vec<&Case> {
        self.cases.iter().filter(|c| c.prompt.is_some()).collect()
    }
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    prompt: Option<String>,
    greedy: Vec<u64>,
    prompt_tokens: Vec<u64>,
    margins: Vec<f64>,
}

impl Case {
    /// Steps before the reference's first near-tie, which Candle and llama.cpp must agree on
    /// (see crates/candle/tests/smollm2.rs for why ties may break either way).
    fn confident_steps(&self) -> usize {
        self.margins.iter().take_while(|&&m| m >= 0.3).count()
    }
}

/// `smollm2.json` (llama.cpp) or `smollm2-f32.json` (transformers, dequantized).
fn fixture(name: &str) -> Fixture {
    let path = fixtures::reference_fixtures().join(name);
    serde_json::from_slice(&std::fs::read(path).expect("fixture exists")).unwrap()
}

/// The `stats` entry of [`MODEL`], asked for under request id `id`.
async fn model_stats(c: &mut Client, id: u64) -> V {
    let stats = c.call(&req(id, "stats", &[])).await;
    get(&stats, "models")
        .as_array()
        .unwrap()
        .iter()
        .find(|m| get(m, "model").as_str() == Some(MODEL))
        .unwrap()
        .clone()
}

/// The committed PEFT adapter for SmolLM2 (tools/reference/make_smollm2_lora.py).
fn lora_dir() -> String {
    fixtures::reference_fixtures()
        .join("smollm2-lora")
        .to_string_lossy()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_load_serve_and_unload_over_the_socket() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let load = |id, model: &str, adapter: &str, path: &str| {
        req(
            id,
            "load_adapter",
            &[
                ("model", V::from(model)),
                ("adapter", V::from(adapter)),
                ("path", V::from(path)),
            ],
        )
    };
    let loaded = c.call(&load(1, MODEL, "tiny@1", &lora_dir())).await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "adapter").as_str(), Some("tiny@1"));
    assert_eq!(get(&loaded, "rank").as_u64(), Some(2));
    // Rank 2 on q, k, v, o (in + out features each) and down_proj of 30 layers, in f32.
    assert_eq!(
        get(&loaded, "memory_bytes").as_u64(),
        Some(30 * 2 * 4 * ((576 + 576) * 2 + (576 + 192) * 2 + 1536 + 576))
    );
    assert_error(
        &c.call(&load(2, MODEL, "tiny@1", &lora_dir())).await,
        2,
        "adapter_exists",
    );
    assert_error(
        &c.call(&load(3, "minilm", "tiny@1", &lora_dir())).await,
        3,
        "bad_request",
    );
    assert_error(
        &c.call(&load(4, "nope", "tiny@1", &lora_dir())).await,
        4,
        "model_not_found",
    );
    let message = assert_error(
        &c.call(&load(5, MODEL, "x", "/nonexistent")).await,
        5,
        "load_failed",
    );
    assert!(message.contains("adapter_config.json"), "{message}");
    assert_error(
        &c.call(&load(6, MODEL, "bad name", &lora_dir())).await,
        6,
        "bad_request",
    );
    assert_error(
        &c.call(&req(
            7,
            "load_adapter",
            &[("model", V::from(MODEL)), ("adapter", V::from("t"))],
        ))
        .await,
        7,
        "bad_request",
    );

    let smol = model_stats(&mut c, 8).await;
    let adapters = get(&smol, "adapters").as_array().unwrap();
    assert_eq!(adapters.len(), 1);
    assert_eq!(get(&adapters[0], "adapter").as_str(), Some("tiny@1"));

    // The same prompt with and without the adapter, decoding together, answer differently.
    let prompt = "Once upon a time, in a land far away,";
    let mut with = greedy(10, prompt, 24);
    if let V::Map(fields) = &mut with {
        fields.push((V::from("adapter"), V::from("tiny@1")));
    }
    c.send(&with).await;
    c.send(&greedy(11, prompt, 24)).await;
    let streams = collect(&mut c, &[10, 11]).await;
    assert_eq!(streams[&10].finish_reason(), "length");
    assert_eq!(streams[&11].finish_reason(), "length");
    assert_ne!(streams[&10].token_ids, streams[&11].token_ids);

    let mut unknown = greedy(12, prompt, 4);
    if let V::Map(fields) = &mut unknown {
        fields.push((V::from("adapter"), V::from("nope")));
    }
    assert_error(&c.call(&unknown).await, 12, "adapter_not_found");

    let unload = |id, adapter: &str| {
        req(
            id,
            "unload_adapter",
            &[("model", V::from(MODEL)), ("adapter", V::from(adapter))],
        )
    };
    assert_ok(&c.call(&unload(13, "tiny@1")).await, 13);
    assert_error(
        &c.call(&unload(14, "tiny@1")).await,
        14,
        "adapter_not_found",
    );
    let stats = c.call(&req(15, "stats", &[])).await;
    assert!(
        get(&stats, "models")
            .as_array()
            .unwrap()
            .iter()
            .all(|m| get(m, "adapters").as_array().unwrap().is_empty()),
        "{stats}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generator_refuses_a_half_precision_dtype() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let gguf = smollm2::smollm2_gguf();
    let load = req(
        1,
        "load",
        &[
            ("model", V::from("smol-f16")),
            ("path", V::from(gguf.to_str().unwrap())),
            ("dtype", V::from("f16")),
        ],
    );
    let message = assert_error(&c.call(&load).await, 1, "load_failed");
    assert!(message.contains("generators compute in f32"), "{message}");
    let stats = c.call(&req(2, "stats", &[])).await;
    let names: Vec<&str> = get(&stats, "models")
        .as_array()
        .unwrap()
        .iter()
        .map(|m| get(m, "model").as_str().unwrap())
        .collect();
    assert!(!names.contains(&"smol-f16"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generator_refuses_several_threads() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let gguf = smollm2::smollm2_gguf();
    let load = req(
        1,
        "load",
        &[
            ("model", V::from("smol-2")),
            ("path", V::from(gguf.to_str().unwrap())),
            ("threads", V::from(2)),
        ],
    );
    let message = assert_error(&c.call(&load).await, 1, "bad_request");
    assert!(
        message.contains("`threads` above 1 is for batch models"),
        "{message}"
    );
    // The name is free again: loading it on one thread works.
    let load = req(
        2,
        "load",
        &[
            ("model", V::from("smol-2")),
            ("path", V::from(gguf.to_str().unwrap())),
        ],
    );
    assert_ok(&c.call(&load).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dequantized_load_streams_the_float32_reference_tokens() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let gguf = smollm2::smollm2_gguf();
    let path = V::from(gguf.to_str().unwrap());
    let load = |id, name: &str, weights: Option<&str>| {
        let mut fields = vec![("model", V::from(name)), ("path", path.clone())];
        fields.extend(weights.map(|w| ("gguf_weights", V::from(w))));
        req(id, "load", &fields)
    };
    let f32 = c.call(&load(1, "smol-f32", Some("f32"))).await;
    assert_ok(&f32, 1);
    let stored = c.call(&load(2, "smol-q", Some("stored"))).await;
    assert_ok(&stored, 2);
    let kernels = c.call(&load(3, "smol-k", None)).await;
    assert_ok(&kernels, 3);
    let bytes = |v: &V| get(v, "memory_bytes").as_u64().unwrap() as f64;
    // Q4_1 holds 5 bits a weight (scale and minimum per 32), f32 holds 32; by default this
    // CPU holds Q4_1 re-quantized to Q8_0 (8.5 bits), for which it has SIMD kernels.
    // Held for this CPU's kernels by default: Q8_0 (8.5 bits) plus minimums, padded.
    let (f32, stored, kernels) = (bytes(&f32), bytes(&stored), bytes(&kernels));
    assert!(f32 > 5.0 * stored, "f32 {f32} vs as stored {stored}");
    assert!(
        stored < kernels && kernels < f32 / 2.0,
        "held for kernels {kernels}, as stored {stored}, f32 {f32}"
    );

    let fixture = fixture("smollm2-f32.json");
    let cases = fixture.prompt_cases();
    for (i, case) in cases.iter().enumerate() {
        let prompt = case.prompt.as_deref().unwrap();
        c.send(&greedy_on("smol-f32", 10 + i as u64, prompt, 32))
            .await;
    }
    let ids: Vec<u64> = (0..cases.len() as u64).map(|i| 10 + i).collect();
    let streams = collect(&mut c, &ids).await;
    for (i, case) in cases.iter().enumerate() {
        let s = &streams[&(10 + i as u64)];
        assert_ok(s.done.as_ref().unwrap(), 10 + i as u64);
        assert_eq!(s.token_ids, case.greedy[..32], "{}", case.name);
    }
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_as_a_generate_model_and_streams_the_reference_tokens() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let loaded = c
        .call(&req(
            1,
            "load",
            &[
                ("model", V::from("smol2")),
                ("path", V::from(smollm2::smollm2_gguf().to_str().unwrap())),
            ],
        ))
        .await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "family").as_str(), Some("generate"));
    assert_eq!(get(&loaded, "dim").as_u64(), Some(49152));
    assert_eq!(get(&loaded, "context_tokens").as_u64(), Some(8192));
    assert!(get(&loaded, "memory_bytes").as_u64().unwrap() > 50_000_000);

    // All raw-prompt cases of the fixture at once: the stream must carry the reference ids.
    // Loaded by default, the weights are held for the CPU's kernels, which compute the exact
    // model's logits to a few hundredths: the reference is transformers in float32.
    let fixture = fixture("smollm2-f32.json");
    let cases = fixture.prompt_cases();
    for (i, case) in cases.iter().enumerate() {
        c.send(&greedy(10 + i as u64, case.prompt.as_ref().unwrap(), 32))
            .await;
    }
    let ids: Vec<u64> = (0..cases.len() as u64).map(|i| 10 + i).collect();
    let streams = collect(&mut c, &ids).await;
    for (i, case) in cases.iter().enumerate() {
        let s = &streams[&(10 + i as u64)];
        assert_ok(s.done.as_ref().unwrap(), 10 + i as u64);
        let n = case.confident_steps().min(32);
        assert_eq!(s.token_ids[..n], case.greedy[..n], "{}", case.name);
        assert_eq!(s.token_ids.len(), 32, "{}", case.name);
        assert_eq!(s.finish_reason(), "length", "{}", case.name);
        assert_eq!(s.count("completion_tokens"), 32);
        assert_eq!(s.count("prompt_tokens"), case.prompt_tokens.len() as u64);
        assert!(s.frames >= 1 && !s.text.is_empty(), "{}: {s:?}", case.name);
        assert!(!s.text.contains('\u{fffd}'), "{}: {:?}", case.name, s.text);
    }
    let smol = model_stats(&mut c, 20).await;
    assert_eq!(get(&smol, "sequences").as_u64(), Some(cases.len() as u64));
    assert_eq!(
        get(&smol, "generated_tokens").as_u64(),
        Some(32 * cases.len() as u64)
    );
    assert_eq!(get(&smol, "family").as_str(), Some("generate"));
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_messages_stop_strings_and_seeds() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let chat = |id: u64, extra: &[(&str, V)]| {
        let mut fields = vec![(
            "messages",
            V::Array(vec![V::Map(vec![
                (V::from("role"), V::from("user")),
                (V::from("content"), V::from("Name three colours.")),
            ])]),
        )];
        fields.extend(extra.iter().cloned());
        generate(id, &fields)
    };
    c.send(&chat(
        1,
        &[("max_tokens", V::from(24)), ("temperature", V::F64(0.0))],
    ))
    .await;
    let full = collect(&mut c, &[1]).await.remove(&1).unwrap();
    assert!(full.text.len() > 10, "{full:?}");

    // Stop at a piece of the greedy text: the stream ends right before it, which is not sent.
    let words: Vec<&str> = full.text.split_whitespace().collect();
    let stop = words[words.len() / 2];
    let cut = full.text.find(stop).unwrap();
    c.send(&chat(
        2,
        &[
            ("max_tokens", V::from(24)),
            ("temperature", V::F64(0.0)),
            ("stop", strs(&[stop, "never appears 🦀"])),
        ],
    ))
    .await;
    let stopped = collect(&mut c, &[2]).await.remove(&2).unwrap();
    assert_eq!(stopped.text, full.text[..cut], "stop {stop:?}");
    assert_eq!(stopped.finish_reason(), "stop");

    // Sampling: a seed fixes the tokens; another seed (almost surely) changes them.
    let sampled = |id: u64, seed: u64| {
        chat(
            id,
            &[
                ("max_tokens", V::from(24)),
                ("temperature", V::F64(1.2)),
                ("top_p", V::F64(0.95)),
                ("top_k", V::from(50)),
                ("seed", V::from(seed)),
            ],
        )
    };
    for (id, seed) in [(3, 7), (4, 7), (5, 8)] {
        c.send(&sampled(id, seed)).await;
    }
    let s = collect(&mut c, &[3, 4, 5]).await;
    assert_eq!(s[&3].token_ids, s[&4].token_ids);
    assert_ne!(s[&3].token_ids, s[&5].token_ids);
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stats_and_other_models_while_generating() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    c.send(&greedy(1, "Once upon a time", 4000)).await;
    // The first tokens prove the sequence is running; then the socket still answers stats
    // and an embedding batch on the other model before the long generation ends.
    loop {
        let f = c.recv().await;
        assert_eq!(id_of(&f), 1, "{f}");
        if get(&f, "event").as_str() == Some("tokens") {
            break;
        }
    }
    c.send(&req(2, "stats", &[])).await;
    c.send(&req(
        3,
        "embed",
        &[("model", V::from("minilm")), ("inputs", strs(&["hi"]))],
    ))
    .await;
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let f = c.recv().await;
        match id_of(&f) {
            1 => assert_eq!(event(&f), Some("tokens"), "{f}"),
            id => {
                assert_ok(&f, id);
                answered.push(id);
            }
        }
    }
    let cancel = req(4, "cancel", &[("target", V::from(1))]);
    c.send(&cancel).await;
    let mut cancelled_answer = None;
    let mut done = None;
    while cancelled_answer.is_none() || done.is_none() {
        let f = c.recv().await;
        match (id_of(&f), event(&f)) {
            (4, _) => cancelled_answer = Some(f),
            (1, Some("done")) => done = Some(f),
            (1, Some("tokens")) => {}
            _ => panic!("unexpected {f}"),
        }
    }
    assert_eq!(
        get(cancelled_answer.as_ref().unwrap(), "cancelled").as_bool(),
        Some(true)
    );
    let done = done.unwrap();
    assert_eq!(get(&done, "finish_reason").as_str(), Some("cancelled"));
    assert!(get(&done, "completion_tokens").as_u64().unwrap() < 4000);
    // Cancelling what is already finished, or was never there, says so.
    let again = c.call(&req(5, "cancel", &[("target", V::from(1))])).await;
    assert_eq!(get(&again, "cancelled").as_bool(), Some(false));
    let unknown = c.call(&req(6, "cancel", &[("target", V::from(999))])).await;
    assert_ok(&unknown, 6);
    assert_eq!(get(&unknown, "cancelled").as_bool(), Some(false));
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_cancels_its_sequences() {
    let sidecar = sidecar().await;
    let mut a = sidecar.client().await;
    a.send(&greedy(1, "The history of the Roman Empire", 4000))
        .await;
    let first = a.recv().await;
    assert_eq!(get(&first, "event").as_str(), Some("tokens"), "{first}");
    let mut b = sidecar.client().await;
    let smol_stats = |stats: &V| {
        get(stats, "models")
            .as_array()
            .unwrap()
            .iter()
            .find(|m| get(m, "model").as_str() == Some(MODEL))
            .unwrap()
            .clone()
    };
    let running = smol_stats(&b.call(&req(1, "stats", &[])).await);
    assert_eq!(
        get(&running, "active_sequences").as_u64(),
        Some(1),
        "{running}"
    );
    drop(a);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let smol = smol_stats(&b.call(&req(2, "stats", &[])).await);
        // Finished and its slot given back: the thread dropped it between two steps.
        if get(&smol, "sequences").as_u64() == Some(1)
            && get(&smol, "active_sequences").as_u64() == Some(0)
        {
            assert!(get(&smol, "generated_tokens").as_u64().unwrap() < 4000);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never cancelled: {smol}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_generate_requests_get_typed_errors() {
    let sidecar = sidecar().await;
    let mut c = sidecar.client().await;
    let long = "word ".repeat(9000);
    let cases: Vec<(V, &str, &str)> = vec![
        (greedy(1, "hi", 8192), "input_too_long", "limit"),
        (greedy(2, &long, 4), "input_too_long", "limit"),
        (
            generate(
                3,
                &[("prompt", V::from("hi")), ("temperature", V::F64(3.0))],
            ),
            "bad_request",
            "temperature",
        ),
        (
            generate(4, &[("prompt", V::from("hi")), ("top_p", V::F64(0.0))]),
            "bad_request",
            "top_p",
        ),
        (
            generate(5, &[("prompt", V::from(""))]),
            "bad_request",
            "no tokens",
        ),
        (
            req(
                6,
                "generate",
                &[("model", V::from("minilm")), ("prompt", V::from("hi"))],
            ),
            "bad_request",
            "`generate` needs a `generate` model",
        ),
        (
            req(
                7,
                "embed",
                &[("model", V::from(MODEL)), ("inputs", strs(&["hi"]))],
            ),
            "bad_request",
            "generate",
        ),
        (
            req(
                8,
                "generate",
                &[("model", V::from("nope")), ("prompt", V::from("hi"))],
            ),
            "model_not_found",
            "nope",
        ),
        (
            req(9, "cancel", &[("target", V::from("one"))]),
            "bad_request",
            "target",
        ),
    ];
    for (request, code, needle) in cases {
        let id = id_of(&request);
        let response = c.call(&request).await;
        let message = assert_error(&response, id, code);
        assert!(
            message.contains(needle),
            "{id}: {message:?} lacks {needle:?}"
        );
    }
    // The model still generates afterwards.
    c.send(&greedy(10, "Hello", 3)).await;
    let s = collect(&mut c, &[10]).await.remove(&10).unwrap();
    assert_eq!(s.finish_reason(), "length");
    sidecar.stop().await;
}
