//! `score`, `classify` and `extract` over the socket, with the tiny task models of
//! `tools/reference/make_tiny_models.py` resident next to the real all-MiniLM-L6-v2.

mod common;
use common::*;

fn tiny(name: &str) -> String {
    fixtures::reference_fixtures()
        .join("tiny")
        .join(name)
        .display()
        .to_string()
}

fn fixture(name: &str) -> serde_json::Value {
    let path = fixtures::reference_fixtures().join(name);
    serde_json::from_slice(&std::fs::read(&path).expect("fixture exists")).unwrap()
}

fn f32s(value: &V) -> Vec<f32> {
    let V::Binary(bytes) = value else {
        panic!("not bin: {value}");
    };
    assert_eq!(bytes.len() % 4, 0);
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn load(id: u64, name: &str, dir: &str) -> V {
    req(
        id,
        "load",
        &[("model", V::from(name)), ("path", V::from(dir))],
    )
}

fn score(id: u64, model: &str, queries: &[&str], documents: &[&str]) -> V {
    req(
        id,
        "score",
        &[
            ("model", V::from(model)),
            ("queries", strs(queries)),
            ("documents", strs(documents)),
        ],
    )
}

fn embed(id: u64, model: &str, inputs: &[&str]) -> V {
    req(
        id,
        "embed",
        &[("model", V::from(model)), ("inputs", strs(inputs))],
    )
}

fn uints(value: &V) -> Vec<u64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_models_serve_interleaved_batches_from_two_clients() {
    let sidecar = TestSidecar::start(&["minilm"]).await;
    let mut a = sidecar.client().await;
    let mut b = sidecar.client().await;

    let loaded = a.call(&load(1, "rerank", &tiny("cross-encoder"))).await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "family").as_str(), Some("rerank"), "{loaded}");
    assert_eq!(get(&loaded, "max_input_tokens").as_u64(), Some(64));

    let reference = fixture("tiny-cross-encoder.json");
    let pairs = reference["pairs"].as_array().unwrap();
    let queries: Vec<&str> = pairs.iter().map(|p| p["query"].as_str().unwrap()).collect();
    let documents: Vec<&str> = pairs
        .iter()
        .map(|p| p["document"].as_str().unwrap())
        .collect();
    let want: Vec<f32> = pairs
        .iter()
        .map(|p| p["score"].as_f64().unwrap() as f32)
        .collect();
    let sentences = ["a small model", "a fleet of them", "Zürich 🚀 北京"];

    // Both clients pipeline alternating batches for both models before reading anything.
    const ROUNDS: u64 = 6;
    for round in 0..ROUNDS {
        for (offset, client) in [(0, &mut a), (1000, &mut b)] {
            let id = 100 + offset + round * 2;
            client
                .send(&score(id, "rerank", &queries, &documents))
                .await;
            client.send(&embed(id + 1, "minilm", &sentences)).await;
        }
    }
    for (offset, client) in [(0, &mut a), (1000, &mut b)] {
        let mut seen = Vec::new();
        for _ in 0..ROUNDS * 2 {
            let response = client.recv().await;
            let id = id_of(&response);
            assert_ok(&response, id);
            if (id - 100 - offset).is_multiple_of(2) {
                let scores = f32s(get(&response, "scores"));
                assert_eq!(scores.len(), want.len());
                for (i, (got, want)) in scores.iter().zip(&want).enumerate() {
                    assert!((got - want).abs() < 1e-4, "pair {i}: {got} vs {want}");
                }
                let tokens = uints(get(&response, "tokens"));
                let want_tokens: Vec<u64> = pairs
                    .iter()
                    .map(|p| p["tokens"].as_u64().unwrap())
                    .collect();
                assert_eq!(tokens, want_tokens);
            } else {
                let rows = rows(&response);
                assert_eq!(rows.len(), sentences.len());
                assert!(rows.iter().all(|r| (norm(r) - 1.0).abs() < 1e-4));
            }
            seen.push(id - offset);
        }
        seen.sort_unstable();
        assert_eq!(seen, (100..100 + ROUNDS * 2).collect::<Vec<_>>());
    }

    let stats = a.call(&req(9, "stats", &[])).await;
    assert_ok(&stats, 9);
    let models = get(&stats, "models").as_array().unwrap();
    let stat = |name: &str| {
        models
            .iter()
            .find(|m| get(m, "model").as_str() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
    };
    let rerank = stat("rerank");
    assert_eq!(get(rerank, "family").as_str(), Some("rerank"));
    assert_eq!(get(rerank, "batches").as_u64(), Some(2 * ROUNDS));
    assert_eq!(
        get(rerank, "items").as_u64(),
        Some(2 * ROUNDS * pairs.len() as u64)
    );
    assert!(get(rerank, "memory_bytes").as_u64().unwrap() > 0);
    assert_eq!(get(stat("minilm"), "batches").as_u64(), Some(2 * ROUNDS));
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classify_and_extract_answer_like_the_reference() {
    let sidecar = TestSidecar::start(&[]).await;
    let mut c = sidecar.client().await;

    let loaded = c.call(&load(1, "sentiment", &tiny("classifier"))).await;
    assert_ok(&loaded, 1);
    assert_eq!(get(&loaded, "family").as_str(), Some("classify"));
    assert_eq!(get(&loaded, "dim").as_u64(), Some(3));
    let reference = fixture("tiny-classifier.json");
    let labels: Vec<&str> = reference["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let listed = |v: &V| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(listed(get(&loaded, "labels")), labels);

    let inputs = reference["inputs"].as_array().unwrap();
    let texts: Vec<&str> = inputs.iter().map(|i| i["text"].as_str().unwrap()).collect();
    let response = c
        .call(&req(
            2,
            "classify",
            &[("model", V::from("sentiment")), ("inputs", strs(&texts))],
        ))
        .await;
    assert_ok(&response, 2);
    assert_eq!(listed(get(&response, "labels")), labels);
    assert_eq!(get(&response, "count").as_u64(), Some(texts.len() as u64));
    let probabilities = f32s(get(&response, "probabilities"));
    let want: Vec<f32> = inputs
        .iter()
        .flat_map(|i| i["probabilities"].as_array().unwrap().clone())
        .map(|p| p.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(probabilities.len(), want.len());
    for (got, want) in probabilities.iter().zip(&want) {
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
    }

    let loaded = c.call(&load(3, "ner", &tiny("ner"))).await;
    assert_eq!(get(&loaded, "family").as_str(), Some("extract"));
    assert_eq!(get(&loaded, "dim").as_u64(), Some(9));
    let reference = fixture("tiny-ner.json");
    let inputs = reference["inputs"].as_array().unwrap();
    let texts: Vec<&str> = inputs.iter().map(|i| i["text"].as_str().unwrap()).collect();
    let response = c
        .call(&req(
            4,
            "extract",
            &[("model", V::from("ner")), ("inputs", strs(&texts))],
        ))
        .await;
    assert_ok(&response, 4);
    let entities = get(&response, "entities").as_array().unwrap();
    assert_eq!(entities.len(), texts.len());
    for (got, want) in entities.iter().zip(inputs) {
        let got: Vec<(String, String, u64, u64)> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    get(e, "label").as_str().unwrap().to_owned(),
                    get(e, "text").as_str().unwrap().to_owned(),
                    get(e, "start").as_u64().unwrap(),
                    get(e, "end").as_u64().unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, String, u64, u64)> = want["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["label"].as_str().unwrap().to_owned(),
                    e["text"].as_str().unwrap().to_owned(),
                    e["start"].as_u64().unwrap(),
                    e["end"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want);
    }
    sidecar.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_family_and_bad_head_requests_are_refused_and_the_models_keep_working() {
    let sidecar = TestSidecar::start(&["minilm"]).await;
    let mut c = sidecar.client().await;
    assert_ok(&c.call(&load(1, "rerank", &tiny("cross-encoder"))).await, 1);
    assert_ok(&c.call(&load(2, "ner", &tiny("ner"))).await, 2);

    let message = assert_error(
        &c.call(&score(3, "minilm", &["q"], &["d"])).await,
        3,
        "bad_request",
    );
    assert!(
        message.contains("`embedding`") && message.contains("`score`"),
        "{message}"
    );
    let message = assert_error(&c.call(&embed(4, "rerank", &["x"])).await, 4, "bad_request");
    assert!(message.contains("`rerank`"), "{message}");
    let classify_ner = req(
        5,
        "classify",
        &[("model", V::from("ner")), ("inputs", strs(&["x"]))],
    );
    assert_error(&c.call(&classify_ner).await, 5, "bad_request");
    let message = assert_error(
        &c.call(&score(6, "rerank", &["a", "b"], &["a"])).await,
        6,
        "bad_request",
    );
    assert!(message.contains("`documents` has 1"), "{message}");
    assert_error(
        &c.call(&score(7, "absent", &["a"], &["b"])).await,
        7,
        "model_not_found",
    );
    let long = "word ".repeat(100);
    let strict = req(
        8,
        "score",
        &[
            ("model", V::from("rerank")),
            ("queries", strs(&["q"])),
            ("documents", strs(&[long.as_str()])),
            ("truncate", V::from(false)),
        ],
    );
    let message = assert_error(&c.call(&strict).await, 8, "input_too_long");
    assert!(message.contains("input 0"), "{message}");

    // A model directory whose head disagrees with its config.
    let broken = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(tiny("classifier")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), broken.path().join(entry.file_name())).unwrap();
    }
    let config = broken.path().join("config.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    json["id2label"] = serde_json::json!({"0": "a", "1": "b", "2": "c", "3": "d"});
    json.as_object_mut().unwrap().remove("label2id");
    std::fs::write(&config, serde_json::to_vec(&json).unwrap()).unwrap();
    let message = assert_error(
        &c.call(&load(9, "broken", &broken.path().display().to_string()))
            .await,
        9,
        "load_failed",
    );
    assert!(message.contains("classifier.weight"), "{message}");

    // Everything still answers.
    assert_ok(&c.call(&score(10, "rerank", &["q"], &["d"])).await, 10);
    assert_ok(&c.call(&embed(11, "minilm", &["x"])).await, 11);
    let extract = req(
        12,
        "extract",
        &[
            ("model", V::from("ner")),
            ("inputs", strs(&["Angela Merkel"])),
        ],
    );
    assert_ok(&c.call(&extract).await, 12);
    sidecar.stop().await;
}
