//! Response bodies. Each is a MessagePack map with string keys (`rmp_serde::to_vec_named`);
//! tensors are `bin` via `serde_bytes`, never arrays of floats.

use serde::Serialize;

use crate::error::ProtocolError;

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'static str,
    message: &'a str,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    id: u64,
    ok: bool,
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
pub(crate) struct Health<'a> {
    pub version: &'a str,
    pub backend: &'a str,
    pub device: &'a str,
}

#[derive(Serialize)]
pub(crate) struct Loaded<'a> {
    pub model: &'a str,
    pub family: &'a str,
    pub dim: u64,
    pub max_input_tokens: u64,
    pub memory_bytes: u64,
    pub load_us: u64,
    /// `classify` and `extract` models: the label names, in id order.
    #[serde(skip_serializing_if = "no_labels")]
    pub labels: &'a [String],
    /// `generate` models: the context length (prompt plus generated tokens).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
}

fn no_labels(labels: &&[String]) -> bool {
    labels.is_empty()
}

#[derive(Serialize)]
pub(crate) struct Unloaded<'a> {
    pub model: &'a str,
}

#[derive(Serialize)]
pub(crate) struct Embedded<'a> {
    pub dim: u64,
    pub count: u64,
    pub embeddings: &'a serde_bytes::Bytes,
    pub tokens: &'a [u32],
    pub truncated: &'a [bool],
    pub queue_us: u64,
    pub compute_us: u64,
}

#[derive(Serialize)]
pub(crate) struct ModelStats {
    pub model: String,
    pub family: &'static str,
    pub memory_bytes: u64,
    pub batches: u64,
    pub items: u64,
    pub tokens: u64,
    pub busy_us: u64,
    /// `generate` models: sequences finished and the tokens they generated.
    pub sequences: u64,
    pub generated_tokens: u64,
    /// `generate` models: sequences running now.
    pub active_sequences: u64,
    /// `generate` models: the LoRA adapters loaded, by name.
    pub adapters: Vec<AdapterStats>,
}

#[derive(Serialize)]
pub(crate) struct AdapterStats {
    pub adapter: String,
    pub rank: u64,
    pub memory_bytes: u64,
}

#[derive(Serialize)]
pub(crate) struct AdapterLoaded<'a> {
    pub model: &'a str,
    pub adapter: &'a str,
    pub rank: u64,
    pub memory_bytes: u64,
    pub load_us: u64,
}

#[derive(Serialize)]
pub(crate) struct AdapterUnloaded<'a> {
    pub model: &'a str,
    pub adapter: &'a str,
}

#[derive(Serialize)]
pub(crate) struct Stats {
    pub uptime_us: u64,
    pub models: Vec<ModelStats>,
    /// With `--sim-device shared`: the time the one simulated device has been busy, µs (each
    /// model's `busy_us` then also counts its turns waiting for the device).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_busy_us: Option<u64>,
}

#[derive(Serialize)]
struct OkResponse<'a, T> {
    id: u64,
    ok: bool,
    #[serde(flatten)]
    body: &'a T,
}

/// `{id, ok: true, ..body}`.
pub(crate) fn ok<T: Serialize>(id: u64, body: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(&OkResponse { id, ok: true, body })
        .expect("response bodies are plain structs and always serialize")
}

/// `{id, ok: false, error: {code, message}}`.
pub(crate) fn error(id: u64, error: &ProtocolError) -> Vec<u8> {
    rmp_serde::to_vec_named(&ErrorResponse {
        id,
        ok: false,
        error: ErrorBody {
            code: error.code.as_str(),
            message: &error.message,
        },
    })
    .expect("error responses always serialize")
}
