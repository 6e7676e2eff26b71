//! The tiny cross-encoder, classifier and NER models made by
//! `tools/reference/make_tiny_models.py`, on Candle, against transformers on torch.

#[path = "../../../test-support/fixtures.rs"]
mod fixtures;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use shoal_sidecar_candle::{CandleBackend, CandleRuntime, LoadError, Precision};
use shoal_sidecar_core::{
    Backend, BackendError, DeviceSpec, EmbedBatch, Input, ModelFamily, PairBatch,
};

const TOLERANCE: f32 = 1e-4;

fn fixtures() -> PathBuf {
    fixtures::reference_fixtures()
}

fn load(dir: &Path) -> Result<CandleBackend, LoadError> {
    CandleRuntime::open(DeviceSpec::Cpu)
        .unwrap()
        .load(dir, Precision::F32)
}

fn tiny(name: &str) -> CandleBackend {
    load(&fixtures().join("tiny").join(name)).unwrap_or_else(|e| panic!("tiny/{name} loads: {e}"))
}

fn fixture<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = fixtures().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}); run tools/reference/regenerate.sh",
            path.display()
        )
    });
    serde_json::from_slice(&bytes).expect("fixture parses")
}

#[derive(Deserialize)]
struct CrossEncoderFixture {
    max_input_tokens: usize,
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Pair {
    query: String,
    document: String,
    score: f32,
    tokens: u32,
    truncated: bool,
}

#[derive(Deserialize)]
struct ClassifierFixture {
    labels: Vec<String>,
    inputs: Vec<Classified>,
}

#[derive(Deserialize)]
struct Classified {
    text: String,
    probabilities: Vec<f32>,
    tokens: u32,
    truncated: bool,
}

#[derive(Deserialize)]
struct NerFixture {
    labels: Vec<String>,
    inputs: Vec<Tagged>,
}

#[derive(Deserialize)]
struct Tagged {
    text: String,
    entities: Vec<ReferenceEntity>,
    tokens: u32,
    truncated: bool,
}

#[derive(Deserialize)]
struct ReferenceEntity {
    label: String,
    text: String,
    start: usize,
    end: usize,
    score: f32,
}

fn batch(inputs: &[&str]) -> EmbedBatch {
    EmbedBatch {
        inputs: inputs.iter().map(|&s| s.into()).collect(),
        truncate: true,
    }
}

#[test]
fn cross_encoder_scores_match_transformers_in_one_batch_and_one_at_a_time() {
    let fixture: CrossEncoderFixture = fixture("tiny-cross-encoder.json");
    let model = tiny("cross-encoder");
    assert_eq!(model.family(), ModelFamily::Rerank);
    assert_eq!(model.max_input_tokens(), fixture.max_input_tokens);
    assert!(fixture.pairs.iter().any(|p| p.truncated));
    let all = PairBatch {
        queries: fixture.pairs.iter().map(|p| p.query.clone()).collect(),
        documents: fixture.pairs.iter().map(|p| p.document.clone()).collect(),
        truncate: true,
    };
    let together = model.score(&all).unwrap();
    assert_eq!(together.count(), fixture.pairs.len());
    for (i, pair) in fixture.pairs.iter().enumerate() {
        let alone = model
            .score(&PairBatch {
                queries: vec![pair.query.clone()],
                documents: vec![pair.document.clone()],
                truncate: true,
            })
            .unwrap();
        for (how, out, row) in [("batch", &together, i), ("alone", &alone, 0)] {
            let got = out.values[row];
            assert!(
                (got - pair.score).abs() < TOLERANCE,
                "{how}: pair {i} ({:?}, {:?}): score {got} vs {}",
                pair.query,
                pair.document,
                pair.score
            );
            assert_eq!(out.tokens[row], pair.tokens, "{how}: pair {i} tokens");
            assert_eq!(
                out.truncated[row], pair.truncated,
                "{how}: pair {i} truncated"
            );
        }
    }
}

#[test]
fn classifier_probabilities_match_transformers() {
    let fixture: ClassifierFixture = fixture("tiny-classifier.json");
    let model = tiny("classifier");
    assert_eq!(model.family(), ModelFamily::Classify);
    assert_eq!(model.labels(), fixture.labels);
    assert_eq!(model.dim(), fixture.labels.len());
    let texts: Vec<&str> = fixture.inputs.iter().map(|i| i.text.as_str()).collect();
    let out = model.classify(&batch(&texts)).unwrap();
    assert_eq!(
        (out.count(), out.labels),
        (texts.len(), fixture.labels.len())
    );
    for (i, input) in fixture.inputs.iter().enumerate() {
        let row = out.row(i).unwrap();
        for (label, (got, want)) in row.iter().zip(&input.probabilities).enumerate() {
            assert!(
                (got - want).abs() < TOLERANCE,
                "input {i} {:?}: label {label}: {got} vs {want}",
                input.text
            );
        }
        assert_eq!(out.tokens[i], input.tokens, "input {i} tokens");
        assert_eq!(out.truncated[i], input.truncated, "input {i} truncated");
    }
}

#[test]
fn ner_entities_match_the_transformers_pipeline() {
    let fixture: NerFixture = fixture("tiny-ner.json");
    let model = tiny("ner");
    assert_eq!(model.family(), ModelFamily::Extract);
    assert_eq!(model.labels(), fixture.labels);
    let texts: Vec<&str> = fixture.inputs.iter().map(|i| i.text.as_str()).collect();
    let out = model.extract(&batch(&texts)).unwrap();
    let multi_token = fixture
        .inputs
        .iter()
        .flat_map(|i| &i.entities)
        .filter(|e| e.text.contains(' '))
        .count();
    assert!(
        multi_token >= 3,
        "the fixture should hold multi-word entities"
    );
    for (i, input) in fixture.inputs.iter().enumerate() {
        let got: Vec<(&str, &str, usize, usize)> = out.entities[i]
            .iter()
            .map(|e| (e.label.as_str(), e.text.as_str(), e.start, e.end))
            .collect();
        let want: Vec<(&str, &str, usize, usize)> = input
            .entities
            .iter()
            .map(|e| (e.label.as_str(), e.text.as_str(), e.start, e.end))
            .collect();
        assert_eq!(got, want, "input {i} {:?}", input.text);
        for (g, w) in out.entities[i].iter().zip(&input.entities) {
            assert!(
                (g.score - w.score).abs() < TOLERANCE,
                "input {i}: entity {:?}: score {} vs {}",
                w.text,
                g.score,
                w.score
            );
        }
        assert_eq!(out.tokens[i], input.tokens, "input {i} tokens");
        assert_eq!(out.truncated[i], input.truncated, "input {i} truncated");
    }
}

#[test]
fn ops_on_a_model_of_another_family_are_refused() {
    let rerank = tiny("cross-encoder");
    let classifier = tiny("classifier");
    let ner = tiny("ner");
    let pairs = PairBatch {
        queries: vec!["q".into()],
        documents: vec!["d".into()],
        truncate: true,
    };
    let refused = [
        rerank.embed(&batch(&["a"])).unwrap_err(),
        rerank.classify(&batch(&["a"])).unwrap_err(),
        rerank.extract(&batch(&["a"])).unwrap_err(),
        classifier.score(&pairs).unwrap_err(),
        classifier.extract(&batch(&["a"])).unwrap_err(),
        ner.score(&pairs).unwrap_err(),
        ner.classify(&batch(&["a"])).unwrap_err(),
        ner.embed(&batch(&["a"])).unwrap_err(),
    ];
    for err in refused {
        assert!(
            matches!(err, BackendError::Unsupported(ref m) if m.contains("do not answer")),
            "{err:?}"
        );
    }
    for model in [&rerank, &classifier, &ner] {
        model.health().unwrap();
    }
}

#[test]
fn bad_batches_get_typed_errors() {
    let rerank = tiny("cross-encoder");
    let ner = tiny("ner");
    let err = rerank
        .score(&PairBatch {
            queries: vec!["a".into(), "b".into()],
            documents: vec!["a".into()],
            truncate: true,
        })
        .unwrap_err();
    assert_eq!(
        err,
        BackendError::MismatchedPairs {
            queries: 2,
            documents: 1
        }
    );
    let empty = PairBatch {
        queries: vec![],
        documents: vec![],
        truncate: true,
    };
    assert_eq!(rerank.score(&empty).unwrap_err(), BackendError::EmptyBatch);
    assert_eq!(
        ner.extract(&batch(&[])).unwrap_err(),
        BackendError::EmptyBatch
    );

    let long = "word ".repeat(200);
    let strict = PairBatch {
        queries: vec!["short".into(), "q".into()],
        documents: vec!["fine".into(), long.clone()],
        truncate: false,
    };
    assert_eq!(
        rerank.score(&strict).unwrap_err(),
        BackendError::InputTooLong { index: 1, max: 64 }
    );
    let strict = EmbedBatch {
        inputs: vec!["ok".into(), long.into()],
        truncate: false,
    };
    assert_eq!(
        ner.extract(&strict).unwrap_err(),
        BackendError::InputTooLong { index: 1, max: 64 }
    );
    // Entities are spans of a text; token ids have none.
    let ids = EmbedBatch {
        inputs: vec!["ok".into(), Input::Ids(vec![5, 6])],
        truncate: true,
    };
    assert_eq!(
        ner.extract(&ids).unwrap_err(),
        BackendError::TextRequired {
            index: 1,
            op: "extract"
        }
    );

    // A multi-megabyte input is cut before tokenising and answered like any long one; its
    // entities stay inside the kept prefix.
    let huge = "Angela Merkel visited Paris. ".repeat(100_000);
    let out = ner.extract(&batch(&[&huge])).unwrap();
    assert_eq!((out.tokens[0], out.truncated[0]), (64, true));
    assert!(out.entities[0].iter().all(|e| e.end < 1_000));
    let out = rerank
        .score(&PairBatch {
            queries: vec![huge.clone()],
            documents: vec![huge],
            truncate: true,
        })
        .unwrap();
    assert_eq!((out.tokens[0], out.truncated[0]), (64, true));
    assert!(out.values[0].is_finite());
}

/// A copy of a tiny model directory under the test's scratch space, to break.
fn scratch_copy(name: &str, test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("heads-{test}-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixtures().join("tiny").join(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir
}

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut config);
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
}

#[test]
fn missing_and_mismatched_files_fail_to_load_with_a_reason() {
    // A head whose weights disagree with the labels in config.json.
    let dir = scratch_copy("classifier", "labels");
    edit_config(&dir, |c| {
        c["id2label"] = serde_json::json!({"0": "a", "1": "b"});
        c["label2id"] = serde_json::json!({"a": 0, "b": 1});
    });
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, LoadError::Weights(_)), "{err}");
    assert!(err.to_string().contains("classifier.weight"), "{err}");

    // A token-classification config over sequence-classification weights: the head loads
    // its own shape and finds the checkpoint's classifier of another width.
    let dir = scratch_copy("cross-encoder", "architecture");
    edit_config(&dir, |c| {
        c["architectures"] = serde_json::json!(["BertForTokenClassification"]);
        c["id2label"] = serde_json::json!({"0": "O", "1": "B-PER", "2": "I-PER"});
    });
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, LoadError::Weights(_)), "{err}");

    // Inconsistent label tables.
    let dir = scratch_copy("ner", "id2label");
    edit_config(&dir, |c| {
        c["id2label"] = serde_json::json!({"0": "O", "5": "B-PER"})
    });
    let err = load(&dir).unwrap_err();
    assert!(matches!(err, LoadError::Unsupported(_)), "{err}");

    // Missing files.
    for file in ["model.safetensors", "tokenizer.json", "config.json"] {
        let dir = scratch_copy("ner", file);
        std::fs::remove_file(dir.join(file)).unwrap();
        let err = load(&dir).unwrap_err();
        assert!(err.to_string().contains(file), "{file}: {err}");
    }

    // Weights that are not safetensors.
    let dir = scratch_copy("ner", "garbage");
    std::fs::write(dir.join("model.safetensors"), b"\x80\x02pickle").unwrap();
    assert!(matches!(load(&dir).unwrap_err(), LoadError::Weights(_)));
}
