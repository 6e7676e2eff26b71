//! The protocol of docs/sidecar-protocol.md against an in-process sidecar with the real
//! all-MiniLM-L6-v2 weights.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// 254 one-token words: 256 tokens with [CLS] and [SEP], the model's limit.
fn full_length_input() -> String {
    "a ".repeat(254)
}

/// A batch that keeps the model thread busy for seconds on a small CPU.
fn big_batch(n: usize) -> V {
    strs(&vec![full_length_input(); n])
}

fn embed(id: u64, model: &str, inputs: V) -> V {
    req(
        id,
        "embed",
        &[("model", V::from(model)), ("inputs", inputs)],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reports_backend_and_device() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut client = sidecar.client().await;
    let health = client.call(&req(1, "health", &[])).await;
    assert_ok(&health, 1);
    assert_eq!(get(&health, "backend").as_str(), Some("candle-cpu"));
    assert_eq!(get(&health, "device").as_str(), Some("cpu"));
    assert_eq!(
        get(&health, "version").as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let stats = client.call(&req(2, "stats", &[])).await;
    assert_ok(&stats, 2);
    assert!(get(&stats, "uptime_us").as_u64().unwrap() > 0);
    assert_eq!(get(&stats, "models").as_array().unwrap().len(), 0);
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_and_unload() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut client = sidecar.client().await;
    let path = minilm_dir().to_string_lossy().into_owned();
    let load = |id: u64, name: &str, path: &str| {
        req(
            id,
            "load",
            &[("model", V::from(name)), ("path", V::from(path))],
        )
    };

    let loaded = client.call(&load(1, "minilm", &path)).await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "model").as_str(), Some("minilm"));
    assert_eq!(get(&loaded, "family").as_str(), Some("embedding"));
    assert_eq!(get(&loaded, "dim").as_u64(), Some(384));
    assert_eq!(get(&loaded, "max_input_tokens").as_u64(), Some(256));
    let memory = get(&loaded, "memory_bytes").as_u64().unwrap();
    assert!((80_000_000..100_000_000).contains(&memory), "{memory}");
    assert!(get(&loaded, "load_us").as_u64().unwrap() > 0);

    let again = client.call(&load(2, "minilm", &path)).await;
    assert_error(&again, 2, "model_exists");

    let stats = client.call(&req(3, "stats", &[])).await;
    let models = get(&stats, "models").as_array().unwrap();
    assert_eq!(models.len(), 1);
    assert_eq!(get(&models[0], "model").as_str(), Some("minilm"));
    assert_eq!(get(&models[0], "family").as_str(), Some("embedding"));
    assert_eq!(get(&models[0], "memory_bytes").as_u64(), Some(memory));
    assert_eq!(get(&models[0], "batches").as_u64(), Some(0));

    let unloaded = client
        .call(&req(4, "unload", &[("model", V::from("minilm"))]))
        .await;
    assert_ok(&unloaded, 4);
    assert_eq!(get(&unloaded, "model").as_str(), Some("minilm"));
    let twice = client
        .call(&req(5, "unload", &[("model", V::from("minilm"))]))
        .await;
    assert_error(&twice, 5, "model_not_found");
    let gone = client.call(&embed(6, "minilm", strs(&["hi"]))).await;
    assert_error(&gone, 6, "model_not_found");

    let missing = client.call(&load(7, "x", "/nonexistent/dir")).await;
    let message = assert_error(&missing, 7, "load_failed");
    assert!(message.contains("config.json"), "{message}");

    let bogus = tempfile::tempdir().unwrap();
    std::fs::write(bogus.path().join("config.json"), r#"{"model_type":"t5"}"#).unwrap();
    let unsupported = client
        .call(&load(8, "x", bogus.path().to_str().unwrap()))
        .await;
    let message = assert_error(&unsupported, 8, "load_failed");
    assert!(message.contains("t5"), "{message}");

    // An encoder computes in the dtype it is loaded with: half the bytes in f16.
    let half = client
        .call(&req(
            11,
            "load",
            &[
                ("model", V::from("minilm-f16")),
                ("path", V::from(path.as_str())),
                ("dtype", V::from("f16")),
            ],
        ))
        .await;
    assert_ok(&half, 11);
    assert_eq!(get(&half, "memory_bytes").as_u64(), Some(memory / 2));
    let embedded = client.call(&embed(12, "minilm-f16", strs(&["hi"]))).await;
    assert_ok(&embedded, 12);
    assert!((norm(&rows(&embedded)[0]) - 1.0).abs() < 1e-5);

    // A failed load frees the name, and the name can be reused after an unload.
    let reloaded = client.call(&load(9, "minilm", &path)).await;
    assert_ok(&reloaded, 9);
    let works = client.call(&embed(10, "minilm", strs(&["hi"]))).await;
    assert_ok(&works, 10);
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embed_returns_little_endian_rows_matching_the_reference() {
    let sidecar = TestSidecar::start(&["minilm"]).await;
    let mut client = sidecar.client().await;

    let fixture_path = fixtures::reference_fixtures().join("all-minilm-l6-v2.json");
    let fixture: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&fixture_path).unwrap_or_else(|e| panic!("{}: {e}", fixture_path.display())),
    )
    .unwrap();
    let sentences = fixture["sentences"].as_array().unwrap();
    let texts: Vec<&str> = sentences
        .iter()
        .map(|s| s["text"].as_str().unwrap())
        .collect();

    let response = client.call(&embed(1, "minilm", strs(&texts))).await;
    assert_ok(&response, 1);
    assert_eq!(get(&response, "dim").as_u64(), Some(384));
    assert_eq!(get(&response, "count").as_u64(), Some(texts.len() as u64));
    assert!(get(&response, "queue_us").as_u64().is_some());
    assert!(get(&response, "compute_us").as_u64().unwrap() > 0);
    let tokens = get(&response, "tokens").as_array().unwrap();
    let truncated = get(&response, "truncated").as_array().unwrap();
    for (i, (row, sentence)) in rows(&response).iter().zip(sentences).enumerate() {
        assert!((norm(row) - 1.0).abs() < 1e-5, "row {i} norm");
        let reference: Vec<f32> = sentence["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let cos = cosine(row, &reference);
        assert!(cos >= 0.9999, "sentence {i}: cosine {cos}");
        assert_eq!(
            tokens[i].as_u64(),
            sentence["tokens"].as_u64(),
            "tokens {i}"
        );
        assert_eq!(
            truncated[i].as_bool(),
            sentence["truncated"].as_bool(),
            "truncated {i}"
        );
    }

    let stats = client.call(&req(2, "stats", &[])).await;
    let model = &get(&stats, "models").as_array().unwrap()[0];
    assert_eq!(get(model, "batches").as_u64(), Some(1));
    assert_eq!(get(model, "items").as_u64(), Some(texts.len() as u64));
    let total: u64 = tokens.iter().map(|t| t.as_u64().unwrap()).sum();
    assert_eq!(get(model, "tokens").as_u64(), Some(total));
    assert!(get(model, "busy_us").as_u64().unwrap() > 0);

    // truncate: false refuses the too-long input and names it.
    let strict = client
        .call(&req(
            3,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", strs(&["short", &"a ".repeat(300)])),
                ("truncate", V::Boolean(false)),
            ],
        ))
        .await;
    let message = assert_error(&strict, 3, "input_too_long");
    assert!(message.contains("input 1"), "{message}");
    let lenient = client
        .call(&req(
            4,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", strs(&["a ".repeat(300)])),
                ("truncate", V::Boolean(true)),
            ],
        ))
        .await;
    assert_ok(&lenient, 4);
    assert_eq!(
        get(&lenient, "tokens").as_array().unwrap()[0].as_u64(),
        Some(256)
    );
    assert_eq!(
        get(&lenient, "truncated").as_array().unwrap()[0].as_bool(),
        Some(true)
    );
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_is_answered_while_a_long_batch_runs() {
    let sidecar = TestSidecar::start(&["minilm"]).await;
    let mut busy = sidecar.client().await;
    let mut other = sidecar.client().await;

    // Responses on a connection come back in completion order: stats, asked right after a batch
    // that keeps the model thread (and every core) busy, must overtake it whatever the
    // machine's speed.
    busy.send(&embed(1, "minilm", big_batch(24))).await;
    let asked = Instant::now();
    busy.send(&req(2, "stats", &[])).await;
    let stats = busy.recv().await;
    let stats_latency = asked.elapsed();
    assert_ok(&stats, 2);
    let health = other.call(&req(3, "health", &[])).await;
    assert_ok(&health, 3);

    let done = busy.recv().await;
    assert_ok(&done, 1);
    let compute = Duration::from_micros(get(&done, "compute_us").as_u64().unwrap());
    eprintln!("24 x 256 tokens: compute {compute:?}; stats answered in {stats_latency:?}");
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_come_back_by_id_in_completion_order() {
    let sidecar = TestSidecar::start(&["slow", "fast"]).await;
    let mut client = sidecar.client().await;

    client.send(&embed(10, "slow", big_batch(16))).await;
    client.send(&embed(11, "fast", strs(&["quick one"]))).await;
    client.send(&req(12, "health", &[])).await;
    let first = client.recv().await;
    let second = client.recv().await;
    let mut early = [id_of(&first), id_of(&second)];
    early.sort_unstable();
    assert_eq!(
        early,
        [11, 12],
        "the big batch must not hold back the others"
    );
    assert_ok(&client.recv().await, 10);

    // Many pipelined requests on one connection: every id answered exactly once.
    let ids: Vec<u64> = (100..160).collect();
    for &id in &ids {
        let text = format!("sentence {id}");
        client
            .send(&embed(
                id,
                if id % 2 == 0 { "fast" } else { "slow" },
                strs(&[text]),
            ))
            .await;
    }
    let mut seen = Vec::new();
    for _ in &ids {
        let response = client.recv().await;
        assert_eq!(get(&response, "count").as_u64(), Some(1), "{response}");
        seen.push(id_of(&response));
    }
    seen.sort_unstable();
    assert_eq!(seen, ids);
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unload_lets_queued_batches_finish() {
    let sidecar = TestSidecar::start(&["minilm"]).await;
    let mut a = sidecar.client().await;
    let mut b = sidecar.client().await;
    a.send(&embed(1, "minilm", big_batch(16))).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    b.send(&req(2, "unload", &[("model", V::from("minilm"))]))
        .await;
    let embedded = a.recv().await;
    assert_ok(&embedded, 1);
    let unloaded = b.recv().await;
    assert_ok(&unloaded, 2);
    let after = b.call(&embed(3, "minilm", strs(&["x"]))).await;
    assert_error(&after, 3, "model_not_found");
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_never_takes_the_server_down() {
    let sidecar = TestSidecar::start_with(&["minilm"], |o| o.max_frame_bytes = 1 << 20).await;
    let mut c = sidecar.client().await;

    // Bodies that are not a request map: bad_frame, and the connection stays usable.
    c.send_body(&[0xc1]).await;
    assert_error(&c.recv().await, 0, "bad_frame");
    c.send_body(&[]).await;
    assert_error(&c.recv().await, 0, "bad_frame");
    c.send_body(b"\xa5hello").await;
    assert_error(&c.recv().await, 0, "bad_frame");
    c.send(&strs(&["id", "op"])).await;
    assert_error(&c.recv().await, 0, "bad_frame");
    c.send(&V::Map(vec![(V::from("op"), V::from("health"))]))
        .await;
    assert_error(&c.recv().await, 0, "bad_frame");
    c.send(&V::Map(vec![(V::from("id"), V::from(21))])).await;
    assert_error(&c.recv().await, 21, "bad_frame");
    c.send(&V::Map(vec![
        (V::from("id"), V::from(-1)),
        (V::from("op"), V::from("health")),
    ]))
    .await;
    assert_error(&c.recv().await, 0, "bad_frame");
    c.send(&V::Map(vec![
        (V::from("id"), V::from(22)),
        (V::from("op"), V::from(1)),
    ]))
    .await;
    assert_error(&c.recv().await, 22, "bad_frame");
    // Truncated msgpack inside a well-framed body.
    let mut cut = encode(&embed(23, "minilm", strs(&["hello"])));
    cut.truncate(cut.len() - 3);
    c.send_body(&cut).await;
    assert_error(&c.recv().await, 23, "bad_frame");

    // Well-formed requests with bad contents.
    assert_error(&c.call(&req(30, "train", &[])).await, 30, "unknown_op");
    assert_error(
        &c.call(&req(31, "embed", &[("model", V::from("minilm"))]))
            .await,
        31,
        "bad_request",
    );
    assert_error(
        &c.call(&req(
            32,
            "embed",
            &[("model", V::from(7)), ("inputs", strs(&["a"]))],
        ))
        .await,
        32,
        "bad_request",
    );
    assert_error(
        &c.call(&req(
            33,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", V::Array(vec![V::from(1)])),
            ],
        ))
        .await,
        33,
        "bad_request",
    );
    assert_error(
        &c.call(&req(
            34,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", strs(&["a"])),
                ("truncate", V::from(1)),
            ],
        ))
        .await,
        34,
        "bad_request",
    );
    assert_error(
        &c.call(&embed(35, "nope", strs(&["a"]))).await,
        35,
        "model_not_found",
    );
    assert_error(
        &c.call(&embed(36, "minilm", strs::<&str>(&[]))).await,
        36,
        "bad_request",
    );
    let too_many = vec!["x"; 1025];
    let message = assert_error(
        &c.call(&embed(37, "minilm", strs(&too_many))).await,
        37,
        "bad_request",
    );
    assert!(message.contains("1025"), "{message}");
    assert_error(
        &c.call(&req(38, "load", &[("model", V::from("m"))])).await,
        38,
        "bad_request",
    );
    assert_error(&c.call(&req(39, "unload", &[])).await, 39, "bad_request");
    assert_ok(&c.call(&req(40, "health", &[])).await, 40);

    // A client that vanishes mid-frame, and one that vanishes with a batch in flight.
    {
        let mut quitter = sidecar.client().await;
        quitter.send_raw(&100u32.to_be_bytes()).await;
        quitter.send_raw(b"0123456789").await;
    }
    {
        let mut quitter = sidecar.client().await;
        quitter.send(&embed(50, "minilm", big_batch(8))).await;
    }
    {
        let mut quitter = sidecar.client().await;
        quitter.send_raw(&[0, 0]).await;
    }

    // An oversized length prefix: frame_too_large under id 0, then the connection closes.
    let mut big = sidecar.client().await;
    big.send_raw(&(2u32 << 20).to_be_bytes()).await;
    assert_error(&big.recv().await, 0, "frame_too_large");
    assert!(
        big.try_recv().await.is_none(),
        "connection closed after frame_too_large"
    );
    let mut huge = sidecar.client().await;
    huge.send_raw(&u32::MAX.to_be_bytes()).await;
    assert_error(&huge.recv().await, 0, "frame_too_large");
    assert!(huge.try_recv().await.is_none());

    // Everyone else is still served, on old and new connections.
    assert_ok(
        &c.call(&embed(60, "minilm", strs(&["still here"]))).await,
        60,
    );
    let mut fresh = sidecar.client().await;
    let stats = fresh.call(&req(61, "stats", &[])).await;
    assert_ok(&stats, 61);
    sidecar.stop().await;
}
