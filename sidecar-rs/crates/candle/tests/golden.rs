//! all-MiniLM-L6-v2 on Candle against sentence-transformers on torch, sentence by sentence.

mod common;

use serde::Deserialize;
use shoal_sidecar_candle::{CandleRuntime, Precision};
use shoal_sidecar_core::{Backend, DeviceSpec, EmbedBatch, Embeddings};

use common::{cosine, fixture_path, load_minilm, minilm_dir, norm};

const MIN_COSINE: f64 = 0.9999;

#[derive(Deserialize)]
struct Fixture {
    model: String,
    dim: usize,
    max_seq_length: usize,
    sentences: Vec<Sentence>,
}

#[derive(Deserialize)]
struct Sentence {
    text: String,
    embedding: Vec<f32>,
    tokens: u32,
    truncated: bool,
}

fn fixture() -> Fixture {
    let path = fixture_path();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "reference fixture {} is missing ({e}); run tools/reference/regenerate.sh",
            path.display()
        )
    });
    let fixture: Fixture = serde_json::from_slice(&bytes).expect("fixture parses");
    assert_eq!(fixture.model, "sentence-transformers/all-MiniLM-L6-v2");
    assert!(
        fixture.sentences.len() >= 20,
        "fixture has only {} sentences",
        fixture.sentences.len()
    );
    fixture
}

fn check(sentence: &Sentence, index: usize, out: &Embeddings, row: usize, how: &str) -> f64 {
    check_within(sentence, index, out, row, how, MIN_COSINE)
}

fn check_within(
    sentence: &Sentence,
    index: usize,
    out: &Embeddings,
    row: usize,
    how: &str,
    min_cosine: f64,
) -> f64 {
    let got = out.row(row).expect("row exists");
    let cos = cosine(got, &sentence.embedding);
    let n = norm(got);
    assert!(
        (n - 1.0).abs() < 1e-5,
        "{how}: sentence {index}: norm {n}, the model's Normalize module was skipped"
    );
    assert!(
        cos >= min_cosine,
        "{how}: sentence {index} {:?}: cosine {cos:.6} < {min_cosine}",
        sentence.text
    );
    assert_eq!(
        out.tokens[row], sentence.tokens,
        "{how}: sentence {index} {:?}: token count",
        sentence.text
    );
    assert_eq!(
        out.truncated[row], sentence.truncated,
        "{how}: sentence {index} {:?}: truncated flag",
        sentence.text
    );
    cos
}

#[test]
fn matches_sentence_transformers_in_one_batch_and_one_at_a_time() {
    let fixture = fixture();
    let model = load_minilm();
    assert_eq!(model.dim(), fixture.dim);
    assert_eq!(model.max_input_tokens(), fixture.max_seq_length);
    assert!(
        fixture.sentences.iter().any(|s| s.truncated),
        "fixture should exercise truncation"
    );

    let batch = EmbedBatch {
        inputs: fixture
            .sentences
            .iter()
            .map(|s| s.text.clone().into())
            .collect(),
        truncate: true,
    };
    let all = model.embed(&batch).expect("batch embeds");
    assert_eq!(all.count(), fixture.sentences.len());
    assert_eq!(all.values.len(), fixture.sentences.len() * fixture.dim);
    let mut worst = f64::INFINITY;
    for (i, sentence) in fixture.sentences.iter().enumerate() {
        worst = worst.min(check(sentence, i, &all, i, "batch"));
    }

    for (i, sentence) in fixture.sentences.iter().enumerate() {
        let one = model
            .embed(&EmbedBatch {
                inputs: vec![sentence.text.clone().into()],
                truncate: true,
            })
            .expect("single input embeds");
        worst = worst.min(check(sentence, i, &one, 0, "single"));
    }
    eprintln!(
        "{} sentences, lowest cosine {worst:.7}",
        fixture.sentences.len()
    );
}

/// f16 and bf16 keep 11 and 8 significant bits against f32's 24, so they are held to a looser
/// bound; pooling and normalisation still run in f32, so norms stay exact.
#[test]
fn half_precisions_stay_close_to_sentence_transformers() {
    let fixture = fixture();
    let runtime = CandleRuntime::open(DeviceSpec::Cpu).unwrap();
    let batch = EmbedBatch {
        inputs: fixture
            .sentences
            .iter()
            .map(|s| s.text.clone().into())
            .collect(),
        truncate: true,
    };
    let f32_bytes = load_minilm().memory_bytes();
    for (precision, min_cosine) in [(Precision::F16, 0.999), (Precision::Bf16, 0.99)] {
        let model = runtime.load(&minilm_dir(), precision).expect("loads");
        assert_eq!(
            model.memory_bytes(),
            f32_bytes / 2,
            "{precision:?} holds two bytes a weight"
        );
        let all = model.embed(&batch).expect("batch embeds");
        let mut worst = f64::INFINITY;
        for (i, sentence) in fixture.sentences.iter().enumerate() {
            let how = format!("{precision:?}");
            worst = worst.min(check_within(sentence, i, &all, i, &how, min_cosine));
        }
        eprintln!("{precision:?}: lowest cosine {worst:.7}");
    }
}
