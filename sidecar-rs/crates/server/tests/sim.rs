//! The simulated backend over the socket: `load` with `backend: "sim"` and a `sim` map, models
//! that sleep instead of computing while the socket keeps serving, and `--backend sim`.

mod common;

use std::time::Duration;

use common::*;
use shoal_sidecar::BackendKind;

fn sim_map(entries: &[(&str, V)]) -> V {
    V::Map(
        entries
            .iter()
            .map(|(k, v)| (V::from(*k), v.clone()))
            .collect(),
    )
}

fn load_sim(id: u64, model: &str, extra: &[(&str, V)]) -> V {
    let mut fields = vec![("model", V::from(model)), ("backend", V::from("sim"))];
    fields.extend(extra.iter().cloned());
    req(id, "load", &fields)
}

fn embed(id: u64, model: &str, inputs: V) -> V {
    req(
        id,
        "embed",
        &[("model", V::from(model)), ("inputs", inputs)],
    )
}

/// A batch model on two threads runs two batches at once: neither waits in the queue for the
/// other, where on one thread the second waits the whole of the first (the simulated cost is
/// a sleep, so the wait is the cost whatever the machine's speed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_on_two_threads_runs_two_batches_at_once() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut control = sidecar.client().await;
    let slow = sim_map(&[
        ("fixed_us", V::from(400_000)),
        ("memory_bytes", V::from(1_000)),
    ]);
    for (id, model, threads) in [(1, "one", 1), (2, "two", 2)] {
        let loaded = control
            .call(&load_sim(
                id,
                model,
                &[("sim", slow.clone()), ("threads", V::from(threads))],
            ))
            .await;
        assert_ok(&loaded, id);
        // Each thread holds its own copy.
        assert_eq!(get(&loaded, "memory_bytes").as_u64(), Some(1_000 * threads));
    }
    for (model, waits) in [("one", true), ("two", false)] {
        let (mut a, mut b) = (sidecar.client().await, sidecar.client().await);
        let (first, second) = (
            embed(10, model, strs(&["a"])),
            embed(11, model, strs(&["b"])),
        );
        let (x, y) = tokio::join!(a.call(&first), b.call(&second));
        assert_ok(&x, 10);
        assert_ok(&y, 11);
        let longest_wait = [&x, &y]
            .iter()
            .map(|r| get(r, "queue_us").as_u64().unwrap())
            .max()
            .unwrap();
        assert_eq!(
            longest_wait >= 300_000,
            waits,
            "{model}: waited {longest_wait} µs"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sim_model_loads_over_the_socket_and_answers() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut client = sidecar.client().await;

    let loaded = client
        .call(&load_sim(
            1,
            "fake",
            &[(
                "sim",
                sim_map(&[
                    ("dim", V::from(32)),
                    ("max_input_tokens", V::from(12)),
                    ("memory_bytes", V::from(40_000_000_000u64)),
                    ("fixed_us", V::F64(1.5)),
                ]),
            )],
        ))
        .await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "family").as_str(), Some("embedding"));
    assert_eq!(get(&loaded, "dim").as_u64(), Some(32));
    assert_eq!(get(&loaded, "max_input_tokens").as_u64(), Some(12));
    assert_eq!(get(&loaded, "memory_bytes").as_u64(), Some(40_000_000_000));

    let long = "z".repeat(100);
    let inputs = strs(&["hello world", "hello world", "other", long.as_str()]);
    let done = client.call(&embed(2, "fake", inputs.clone())).await;
    assert_ok(&done, 2);
    let rows = rows(&done);
    assert_eq!(rows.len(), 4);
    assert!(
        rows.iter()
            .all(|r| r.len() == 32 && (norm(r) - 1.0).abs() < 1e-5)
    );
    assert_eq!(rows[0], rows[1]);
    assert!(cosine(&rows[0], &rows[2]).abs() < 0.9);
    // Estimated: 2 + ceil(bytes / 4), cut to 12.
    assert_eq!(
        get(&done, "tokens"),
        &V::Array(vec![5.into(), 5.into(), 4.into(), 12.into()])
    );
    let again = client.call(&embed(3, "fake", inputs)).await;
    assert_eq!(get(&again, "embeddings"), get(&done, "embeddings"));
    let refused = client
        .call(&req(
            4,
            "embed",
            &[
                ("model", V::from("fake")),
                ("inputs", strs(&["ok", long.as_str()])),
                ("truncate", V::Boolean(false)),
            ],
        ))
        .await;
    let message = assert_error(&refused, 4, "input_too_long");
    assert!(message.contains("input 1"), "{message}");

    // With the model's directory, its tokenizer counts: [CLS] hello world [SEP].
    let path = minilm_dir().to_string_lossy().into_owned();
    let real = client
        .call(&load_sim(
            5,
            "tokenized",
            &[("path", V::from(path.as_str()))],
        ))
        .await;
    assert_ok(&real, 5);
    assert_eq!(get(&real, "dim").as_u64(), Some(384));
    assert_eq!(get(&real, "max_input_tokens").as_u64(), Some(256));
    let counted = client
        .call(&embed(6, "tokenized", strs(&["hello world"])))
        .await;
    assert_eq!(get(&counted, "tokens"), &V::Array(vec![4.into()]));

    let stats = client.call(&req(7, "stats", &[])).await;
    let models = get(&stats, "models").as_array().unwrap();
    assert_eq!(get(&models[0], "model").as_str(), Some("fake"));
    assert_eq!(
        get(&models[0], "memory_bytes").as_u64(),
        Some(40_000_000_000)
    );
    assert_eq!(get(&models[0], "batches").as_u64(), Some(2));
    let health = client.call(&req(8, "health", &[])).await;
    assert_eq!(get(&health, "backend").as_str(), Some("candle-cpu"));
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sim_loads_are_refused() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut client = sidecar.client().await;
    let cases = [
        (
            load_sim(1, "m", &[("sim", sim_map(&[("fixed_us", V::from(-5))]))]),
            "bad_request",
            "`sim.fixed_us` must not be negative",
        ),
        (
            load_sim(2, "m", &[("sim", sim_map(&[("dim", V::from("wide"))]))]),
            "bad_request",
            "`sim.dim` must be a non-negative integer",
        ),
        (
            load_sim(3, "m", &[("sim", sim_map(&[("profile", V::from("h100"))]))]),
            "bad_request",
            "unknown calibration profile `h100`",
        ),
        (
            load_sim(4, "m", &[("backend", V::from("onnx"))]),
            "bad_request",
            "`backend` must be `candle`, `sim` or `openai`",
        ),
        (
            req(5, "load", &[("model", V::from("m"))]),
            "bad_request",
            "`path` is required for the candle backend",
        ),
        (
            req(
                6,
                "load",
                &[
                    ("model", V::from("m")),
                    ("path", V::from("/d")),
                    ("sim", sim_map(&[])),
                ],
            ),
            "bad_request",
            "`sim` is only valid with backend `sim`",
        ),
        (
            load_sim(7, "m", &[("gguf_weights", V::from("f32"))]),
            "bad_request",
            "`gguf_weights` is only valid with backend `candle`",
        ),
        (
            load_sim(9, "m", &[("path", V::from("/nonexistent/dir"))]),
            "load_failed",
            "/nonexistent/dir",
        ),
    ];
    for (request, code, needle) in cases {
        let id = get(&request, "id").as_u64().unwrap();
        let response = client.call(&request).await;
        let message = assert_error(&response, id, code);
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
    }
    // Nothing was left half-loaded: the name is free.
    assert_ok(&client.call(&load_sim(10, "m", &[])).await, 10);
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_and_other_sim_models_are_served_while_a_long_sim_batch_sleeps() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut client = sidecar.client().await;
    let sleep_us = 1_500_000u64;
    let slow = sim_map(&[
        ("fixed_us", V::from(sleep_us)),
        ("memory_bytes", V::from(7)),
    ]);
    assert_ok(
        &client.call(&load_sim(1, "slow", &[("sim", slow)])).await,
        1,
    );
    for (id, name) in [(2, "fast-a"), (3, "fast-b")] {
        let fast = sim_map(&[
            ("fixed_us", V::from(0)),
            ("per_padded_token_ns", V::from(0)),
        ]);
        assert_ok(
            &client.call(&load_sim(id, name, &[("sim", fast)])).await,
            id,
        );
    }

    client
        .send(&embed(10, "slow", strs(&["wait for me"])))
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.send(&req(11, "stats", &[])).await;
    client.send(&embed(12, "fast-a", strs(&["a"]))).await;
    client.send(&embed(13, "fast-b", strs(&["b"]))).await;

    // Everything sent after the slow batch is answered before it, while its thread sleeps.
    let mut order = Vec::new();
    for _ in 0..4 {
        let response = client.recv().await;
        let id = id_of(&response);
        assert_ok(&response, id);
        if id == 11 {
            let models = get(&response, "models").as_array().unwrap();
            let names: Vec<_> = models.iter().map(|m| get(m, "model").as_str()).collect();
            assert_eq!(names, [Some("fast-a"), Some("fast-b"), Some("slow")]);
            assert_eq!(get(&models[2], "memory_bytes").as_u64(), Some(7));
        }
        if id == 10 {
            let compute = get(&response, "compute_us").as_u64().unwrap();
            assert!(
                compute >= sleep_us,
                "slept {compute} µs, predicted {sleep_us}"
            );
        }
        order.push(id);
    }
    assert_eq!(order.last(), Some(&10), "answers came in order {order:?}");
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_sidecar_can_be_simulated() {
    let sidecar = TestSidecar::start_with(&["minilm"], |options| {
        options.backend = BackendKind::Sim;
    })
    .await;
    let mut client = sidecar.client().await;
    let health = client.call(&req(1, "health", &[])).await;
    assert_eq!(get(&health, "backend").as_str(), Some("sim"));

    // The preloaded `--model` is simulated with the MiniLM profile and the real tokenizer.
    let done = client
        .call(&embed(2, "minilm", strs(&["hello world"])))
        .await;
    assert_ok(&done, 2);
    assert_eq!(get(&done, "dim").as_u64(), Some(384));
    assert_eq!(get(&done, "tokens"), &V::Array(vec![4.into()]));

    // A load naming no backend is simulated and needs no path.
    let loaded = client
        .call(&req(3, "load", &[("model", V::from("more"))]))
        .await;
    assert_ok(&loaded, 3);
    assert_eq!(get(&loaded, "memory_bytes").as_u64(), Some(90_261_504));
    sidecar.stop().await;
}
