//! Hostile and broken generator files: each fails to load with a clear [`LoadError`], never a
//! panic or an attempt to allocate what a lying header claims.

#[path = "../../../test-support/smollm2.rs"]
mod smollm2;

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use candle_core::Device;
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use shoal_sidecar_candle::{CandleRuntime, LoadError, LoadOptions};
use shoal_sidecar_core::DeviceSpec;

fn load(path: &Path) -> Result<(), LoadError> {
    CandleRuntime::open(DeviceSpec::Cpu)
        .unwrap()
        .load_model(path, LoadOptions::default())
        .map(|_| ())
}

fn err(path: &Path) -> String {
    load(path).expect_err("must not load").to_string()
}

fn write_gguf(path: &Path, metadata: &[(&str, Value)]) {
    let tensor = QTensor::quantize(
        &candle_core::Tensor::zeros((2, 32), candle_core::DType::F32, &Device::Cpu).unwrap(),
        GgmlDType::F32,
    )
    .unwrap();
    let meta: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let mut f = std::fs::File::create(path).unwrap();
    gguf_file::write(&mut f, &meta, &[("token_embd.weight", &tensor)]).unwrap();
}

#[test]
fn an_unsupported_architecture_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mamba.gguf");
    write_gguf(
        &path,
        &[("general.architecture", Value::String("mamba".into()))],
    );
    let e = err(&path);
    assert!(e.contains("general.architecture `mamba`"), "{e}");
    assert!(e.contains("supported: llama"), "{e}");
}

#[test]
fn llama_without_its_metadata_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bare.gguf");
    write_gguf(
        &path,
        &[("general.architecture", Value::String("llama".into()))],
    );
    let e = err(&path);
    assert!(
        e.contains("has no metadata key `tokenizer.ggml.model`"),
        "{e}"
    );
}

#[test]
fn non_gguf_files_are_refused_by_their_magic() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("empty.gguf", &b""[..]),
        ("short.gguf", &b"GG"[..]),
        ("text.gguf", &b"this is not a model at all"[..]),
        ("pickle.bin", &b"\x80\x04\x95 pickle"[..]),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = err(&path);
        assert!(e.contains("not a GGUF file"), "{name}: {e}");
    }
}

#[test]
fn a_header_that_lies_about_lengths_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lies.gguf");
    // Version 3, 0 tensors, 1 metadata pair whose key claims to be 2^60 bytes long.
    let mut bytes = b"GGUF".to_vec();
    bytes.extend(3u32.to_le_bytes());
    bytes.extend(0u64.to_le_bytes());
    bytes.extend(1u64.to_le_bytes());
    bytes.extend((1u64 << 60).to_le_bytes());
    bytes.extend(b"general.architecture");
    std::fs::write(&path, &bytes).unwrap();
    let e = err(&path);
    assert!(e.contains("not a valid GGUF file"), "{e}");
}

/// The real file cut short: in the metadata, and in the tensor data.
#[test]
fn a_truncated_smollm2_is_refused() {
    let real = smollm2::smollm2_gguf();
    let mut f = std::fs::File::open(&real).unwrap();
    let len = f.seek(SeekFrom::End(0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for cut in [100_000u64, len - 1_000_000] {
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut head = vec![0u8; cut as usize];
        f.read_exact(&mut head).unwrap();
        let path = dir.path().join(format!("cut-{cut}.gguf"));
        std::fs::write(&path, &head).unwrap();
        let e = err(&path);
        assert!(
            e.contains("not a valid GGUF file") || e.contains("cannot be read"),
            "cut at {cut}: {e}"
        );
    }
}

#[test]
fn a_missing_path_is_an_io_error() {
    let e = load(Path::new("/nonexistent/smollm2.gguf")).expect_err("must not load");
    assert!(matches!(e, LoadError::Io { .. }), "{e}");
}

#[test]
fn a_directory_holding_model_gguf_and_no_config_loads_the_gguf() {
    let dir = tempfile::tempdir().unwrap();
    write_gguf(
        &dir.path().join("model.gguf"),
        &[("general.architecture", Value::String("mamba".into()))],
    );
    // The GGUF's own complaint, not a missing config.json, shows which loader read the directory.
    let e = err(dir.path());
    assert!(e.contains("general.architecture `mamba`"), "{e}");
}
