//! Properties of the Candle backend on the real all-MiniLM-L6-v2 weights that do not need the
//! reference fixture: shapes, normalisation, semantic sanity, truncation and loader errors.

mod common;

use shoal_sidecar_candle::{CandleRuntime, LoadError, Pooling, Precision};
use shoal_sidecar_core::{Backend, BackendError, DeviceSpec, EmbedBatch, Input, ModelFamily};

use common::{cosine, load_minilm, minilm_dir, norm};

fn embed(model: &impl Backend, inputs: &[&str]) -> shoal_sidecar_core::Embeddings {
    model
        .embed(&EmbedBatch {
            inputs: inputs.iter().map(|&s| s.into()).collect(),
            truncate: true,
        })
        .expect("embeds")
}

#[test]
fn reads_the_sentence_transformers_config() {
    let model = load_minilm();
    assert_eq!(model.family(), ModelFamily::Embedding);
    assert_eq!(model.dim(), 384);
    assert_eq!(model.max_input_tokens(), 256);
    assert_eq!(model.pooling(), Pooling::Mean);
    assert!(model.normalizes());
    // 22.7M f32 parameters without the unused pooler; the file also holds the pooler and a
    // position_ids buffer, so the count must be below the file size but close to it.
    let file = std::fs::metadata(minilm_dir().join("model.safetensors"))
        .unwrap()
        .len();
    let bytes = model.memory_bytes();
    assert!(
        bytes > 80_000_000 && bytes < file,
        "memory_bytes {bytes}, file {file}"
    );
    model.health().expect("healthy");
}

#[test]
fn embeddings_are_unit_norm_and_semantic() {
    let model = load_minilm();
    let out = embed(
        &model,
        &[
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The new movie is awesome.",
            "The stock market fell sharply today.",
            "",
        ],
    );
    assert_eq!(out.dim, 384);
    assert_eq!(out.count(), 5);
    for i in 0..5 {
        let n = norm(out.row(i).unwrap());
        assert!((n - 1.0).abs() < 1e-5, "row {i} norm {n}");
    }
    let paraphrase = cosine(out.row(0).unwrap(), out.row(1).unwrap());
    let unrelated = cosine(out.row(0).unwrap(), out.row(3).unwrap());
    assert!(
        paraphrase > 0.6 && paraphrase > unrelated + 0.3,
        "paraphrase {paraphrase}, unrelated {unrelated}"
    );
    assert_eq!(out.tokens[4], 2, "an empty input is [CLS] [SEP]");
}

#[test]
fn padding_does_not_change_a_row() {
    let model = load_minilm();
    let short = "Padding must not leak into the mean.";
    let alone = embed(&model, &[short]);
    let long = "word ".repeat(200);
    let mixed = embed(&model, &[&long, short, "x"]);
    let cos = cosine(alone.row(0).unwrap(), mixed.row(1).unwrap());
    assert!(cos > 0.99999, "cosine {cos}");
}

#[test]
fn truncation_is_reported_or_refused() {
    let model = load_minilm();
    // Each "a" is one token, so n of them make n + 2 tokens with [CLS] and [SEP].
    let exactly = "a ".repeat(254);
    let over = "a ".repeat(255);
    let out = embed(&model, &[&exactly, &over, "a"]);
    assert_eq!(out.tokens, vec![256, 256, 3]);
    assert_eq!(out.truncated, vec![false, true, false]);

    let err = model
        .embed(&EmbedBatch {
            inputs: vec!["fine".into(), exactly.clone().into(), over.clone().into()],
            truncate: false,
        })
        .unwrap_err();
    assert_eq!(err, BackendError::InputTooLong { index: 2, max: 256 });

    // Megabytes of text cost no more than the limit needs, and still embed its first tokens.
    let huge = "word ".repeat(400_000);
    let started = std::time::Instant::now();
    let out = embed(&model, &[&huge]);
    assert_eq!((out.tokens[0], out.truncated[0]), (256, true));
    let same = embed(&model, &[&huge[..4000]]);
    assert!(cosine(out.row(0).unwrap(), same.row(0).unwrap()) > 0.99999);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let err = model
        .embed(&EmbedBatch {
            inputs: vec![huge.into()],
            truncate: false,
        })
        .unwrap_err();
    assert_eq!(err, BackendError::InputTooLong { index: 0, max: 256 });

    let fits = model
        .embed(&EmbedBatch {
            inputs: vec![exactly.into()],
            truncate: false,
        })
        .expect("256 tokens fit");
    assert_eq!(fits.truncated, vec![false]);
}

/// The ids MiniLM's own tokenizer gives `text`, without `[CLS]` and `[SEP]`.
fn ids_of(text: &str) -> Vec<u32> {
    let mut tokenizer =
        tokenizers::Tokenizer::from_file(minilm_dir().join("tokenizer.json")).unwrap();
    // The exported tokenizer.json pads every input to 128.
    tokenizer.with_padding(None);
    tokenizer.encode(text, false).unwrap().get_ids().to_vec()
}

#[test]
fn token_ids_embed_as_the_text_they_encode() {
    let model = load_minilm();
    let texts = ["hello world", "The new movie is awesome."];
    let by_text = embed(&model, &texts);
    // Ids and texts side by side in one batch, ids first.
    let mixed = model
        .embed(&EmbedBatch {
            inputs: vec![
                Input::Ids(ids_of(texts[0])),
                texts[1].into(),
                Input::Ids(ids_of(texts[1])),
            ],
            truncate: true,
        })
        .expect("embeds");
    assert_eq!(
        mixed.tokens,
        vec![by_text.tokens[0], by_text.tokens[1], by_text.tokens[1]]
    );
    for (row, text_row) in [(0, 0), (1, 1), (2, 1)] {
        let c = cosine(mixed.row(row).unwrap(), by_text.row(text_row).unwrap());
        assert!(c > 0.999_999, "row {row}: cosine {c}");
    }
}

#[test]
fn token_ids_are_checked_and_truncated_once() {
    let model = load_minilm();
    let long = vec![7592; 300];
    let out = model
        .embed(&EmbedBatch {
            inputs: vec![Input::Ids(long.clone())],
            truncate: true,
        })
        .expect("a cut id input still embeds");
    assert_eq!((out.tokens[0], out.truncated[0]), (256, true));
    let err = model
        .embed(&EmbedBatch {
            inputs: vec!["fine".into(), Input::Ids(long)],
            truncate: false,
        })
        .unwrap_err();
    assert_eq!(err, BackendError::InputTooLong { index: 1, max: 256 });
    // 254 ids and the two special tokens are exactly the limit.
    let fits = model
        .embed(&EmbedBatch {
            inputs: vec![Input::Ids(vec![7592; 254])],
            truncate: false,
        })
        .expect("254 ids fit");
    assert_eq!((fits.tokens[0], fits.truncated[0]), (256, false));
    let err = model
        .embed(&EmbedBatch {
            inputs: vec![Input::Ids(vec![101]), Input::Ids(vec![7592, 30522])],
            truncate: true,
        })
        .unwrap_err();
    assert_eq!(
        err,
        BackendError::UnknownTokenId {
            index: 1,
            position: 1,
            id: 30522,
            vocab: 30522
        }
    );
}

#[test]
fn large_batches_are_split_without_reordering() {
    let model = load_minilm();
    let texts: Vec<String> = (0..300)
        .map(|i| format!("sentence number {i} {}", "pad ".repeat(i % 40)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let all = embed(&model, &refs);
    for i in [0usize, 7, 39, 150, 299] {
        let one = embed(&model, &[refs[i]]);
        let cos = cosine(all.row(i).unwrap(), one.row(0).unwrap());
        assert!(cos > 0.99999, "row {i}: cosine {cos}");
        assert_eq!(all.tokens[i], one.tokens[0]);
    }
}

#[test]
fn empty_batches_are_refused() {
    let model = load_minilm();
    let err = model
        .embed(&EmbedBatch {
            inputs: vec![],
            truncate: true,
        })
        .unwrap_err();
    assert_eq!(err, BackendError::EmptyBatch);
}

#[test]
fn loader_errors_name_the_problem() {
    let runtime = CandleRuntime::open(DeviceSpec::Cpu).unwrap();
    let missing = runtime
        .load(std::path::Path::new("/nonexistent/model"), Precision::F32)
        .unwrap_err();
    assert!(matches!(missing, LoadError::Io { .. }), "{missing}");
    assert!(missing.to_string().contains("config.json"), "{missing}");

    let dir = std::env::temp_dir().join(format!("shoal-bad-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
    let unsupported = runtime.load(&dir, Precision::F32).unwrap_err();
    assert!(
        matches!(unsupported, LoadError::Unsupported(_)),
        "{unsupported}"
    );

    std::fs::write(dir.join("config.json"), r#"{"model_type": "bert"}"#).unwrap();
    let no_weights = runtime.load(&dir, Precision::F32).unwrap_err();
    assert!(
        no_weights.to_string().contains("model.safetensors"),
        "{no_weights}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cuda_needs_the_feature_and_a_gpu() {
    match CandleRuntime::open(DeviceSpec::Cuda(0)) {
        Ok(runtime) => assert_eq!(runtime.backend_name(), "candle-cuda"),
        Err(err) => assert!(matches!(err, LoadError::Device { .. }), "{err}"),
    }
    assert_eq!(
        CandleRuntime::open(DeviceSpec::Cpu).unwrap().backend_name(),
        "candle-cpu"
    );
}
