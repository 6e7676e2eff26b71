//! The simulated backend against the contract the Candle backend keeps: shapes, token counts
//! and truncation (with the real MiniLM tokenizer and with the estimate), determinism, and a
//! batch that takes at least the time the cost model predicts.

use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "../../../test-support/minilm.rs"]
mod minilm;
use minilm::minilm_dir;
use shoal_sidecar_candle::{CandleRuntime, Precision};
use shoal_sidecar_core::{Backend, BackendError, DeviceSpec, EmbedBatch, Input};
use shoal_sidecar_sim::{
    CostModel, Profile, SimBackend, SimOverrides, SimParams, pseudo_embedding,
};

fn free() -> CostModel {
    CostModel {
        fixed_us: 0.0,
        per_sequence_us: 0.0,
        per_padded_token_ns: 0.0,
    }
}

fn params(dim: usize, max_input_tokens: usize, cost: CostModel) -> SimParams {
    SimParams {
        dim,
        max_input_tokens,
        memory_bytes: 123_456_789_000,
        cost,
        load_ms: 0,
    }
}

fn batch(inputs: &[&str], truncate: bool) -> EmbedBatch {
    EmbedBatch {
        inputs: inputs.iter().map(|s| (*s).into()).collect(),
        truncate,
    }
}

fn norm(row: &[f32]) -> f64 {
    row.iter()
        .map(|v| f64::from(*v).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn answers_with_the_right_shapes_deterministic_unit_norm_rows() {
    let sim = SimBackend::load(None, params(16, 64, free())).unwrap();
    assert!(!sim.has_tokenizer());
    assert_eq!((sim.dim(), sim.max_input_tokens()), (16, 64));
    assert_eq!(sim.memory_bytes(), 123_456_789_000);
    sim.health().unwrap();
    let inputs = ["alpha", "beta", "alpha", ""];
    let out = sim.embed(&batch(&inputs, true)).unwrap();
    assert_eq!((out.dim, out.count(), out.values.len()), (16, 4, 64));
    for (i, input) in inputs.iter().enumerate() {
        let row = out.row(i).unwrap();
        assert!((norm(row) - 1.0).abs() < 1e-5, "row {i}");
        // Each row is its own input's vector, whatever else is in the batch.
        assert_eq!(row, pseudo_embedding(input, 16).as_slice(), "row {i}");
    }
    assert_eq!(out.row(0), out.row(2));
    assert_ne!(out.row(0), out.row(1));
    assert_eq!(out, sim.embed(&batch(&inputs, true)).unwrap());
    assert_eq!(
        sim.embed(&batch(&[], true)).unwrap_err(),
        BackendError::EmptyBatch
    );
}

#[test]
fn estimated_tokens_truncate_at_the_limit() {
    let sim = SimBackend::load(None, params(8, 10, free())).unwrap();
    // 2 + ceil(bytes / 4): 2, 5 and 2 + 25 (cut to 10).
    let long = "x".repeat(100);
    let out = sim
        .embed(&batch(&["", "hello world", &long], true))
        .unwrap();
    assert_eq!(out.tokens, vec![2, 5, 10]);
    assert_eq!(out.truncated, vec![false, false, true]);
    assert_eq!(
        sim.embed(&batch(&["ok", &long], false)).unwrap_err(),
        BackendError::InputTooLong { index: 1, max: 10 }
    );
}

#[test]
fn with_the_models_tokenizer_tokens_and_truncation_match_candle() {
    let dir = minilm_dir();
    let sim = SimBackend::load(Some(&dir), Profile::MiniLmL6Cpu.params()).unwrap();
    assert!(sim.has_tokenizer());
    let candle = CandleRuntime::open(DeviceSpec::Cpu)
        .unwrap()
        .load(&dir, Precision::F32)
        .unwrap();
    assert_eq!(sim.dim(), candle.dim());
    assert_eq!(sim.max_input_tokens(), candle.max_input_tokens());
    assert_eq!(sim.memory_bytes(), candle.memory_bytes());

    let long = (0..400)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let huge = "a ".repeat(40_000);
    let inputs = [
        "hello world",
        "A man is playing a guitar.",
        "",
        &long,
        &huge,
    ];
    // Only the answer shape is compared, so the cost of the sleep is irrelevant here.
    let fast = SimBackend::load(Some(&dir), params(384, 256, free())).unwrap();
    let got = fast.embed(&batch(&inputs, true)).unwrap();
    let want = candle.embed(&batch(&inputs, true)).unwrap();
    assert_eq!(got.tokens, want.tokens);
    assert_eq!(got.truncated, want.truncated);
    assert_eq!(got.tokens[0], 4);
    assert_eq!(got.truncated, vec![false, false, false, true, true]);
    // Token ids count as Candle counts them: the ids and the special tokens around them, cut
    // at the limit; ids outside the vocabulary are refused as Candle refuses them.
    let ids = EmbedBatch {
        inputs: vec![Input::Ids(vec![7592, 2088]), Input::Ids(vec![7592; 300])],
        truncate: true,
    };
    let got = fast.embed(&ids).unwrap();
    let want = candle.embed(&ids).unwrap();
    assert_eq!(
        (got.tokens.clone(), got.truncated.clone()),
        (vec![4, 256], vec![false, true])
    );
    assert_eq!((got.tokens, got.truncated), (want.tokens, want.truncated));
    let unknown = EmbedBatch {
        inputs: vec![Input::Ids(vec![30522])],
        truncate: true,
    };
    assert_eq!(
        fast.embed(&unknown).unwrap_err(),
        candle.embed(&unknown).unwrap_err()
    );
    for index in [3, 4] {
        let refused = vec![inputs[0], inputs[index]];
        assert_eq!(
            fast.embed(&batch(&refused, false)).unwrap_err(),
            BackendError::InputTooLong { index: 1, max: 256 },
            "input {index}"
        );
    }
}

#[test]
fn a_batch_takes_at_least_the_predicted_time() {
    let cost = CostModel {
        fixed_us: 20_000.0,
        per_sequence_us: 5_000.0,
        per_padded_token_ns: 100_000.0,
    };
    let sim = SimBackend::load(None, params(4, 64, cost)).unwrap();
    // Estimated lengths 3 and 27 tokens: every row is padded to 27.
    let inputs = ["abc", &"y".repeat(100)];
    let predicted = cost.batch_cost(2, 27);
    // 20 ms + 2 × 5 ms + 0.1 ms × 2 × 27 = 35.4 ms.
    assert_eq!(predicted, Duration::from_micros(35_400));
    let started = Instant::now();
    let out = sim.embed(&batch(&inputs, true)).unwrap();
    assert!(
        started.elapsed() >= predicted,
        "took {:?}, predicted {predicted:?}",
        started.elapsed()
    );
    assert_eq!(out.tokens, vec![3, 27]);
}

#[test]
fn a_directory_without_a_tokenizer_falls_back_to_the_estimate_and_a_file_is_refused() {
    // Read at run time, as test-support/fixtures.rs explains.
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo test"));
    let sim = SimBackend::load(Some(&here.join("src")), params(4, 64, free())).unwrap();
    assert!(!sim.has_tokenizer());
    let error =
        SimBackend::load(Some(&here.join("Cargo.toml")), params(4, 64, free())).unwrap_err();
    assert!(!error.is_bad_parameters());
    assert!(error.to_string().contains("must be a directory"), "{error}");
    let error =
        SimBackend::load(Some(&here.join("no-such-dir")), params(4, 64, free())).unwrap_err();
    assert!(!error.is_bad_parameters(), "{error}");
}

#[test]
fn the_default_profile_is_the_calibrated_minilm() {
    let params = SimOverrides::default().resolve().unwrap();
    assert_eq!(params, Profile::MiniLmL6Cpu.params());
    assert_eq!(
        Profile::from_name("minilm-l6-cpu").unwrap(),
        Profile::MiniLmL6Cpu
    );
}
