//! What a decoded frame asks for: the protocol's requests as types, borrowing their strings
//! from the frame body.

use shoal_sidecar_candle::{GgufWeightMode, Precision};
use shoal_sidecar_core::Input;
use shoal_sidecar_openai::OpenAiConfig;
use shoal_sidecar_sim::SimParams;

use crate::options::BackendKind;

/// A decoded request, borrowing its strings from the frame body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request<'a> {
    pub id: u64,
    /// W3C trace context of the caller, when sent.
    pub traceparent: Option<&'a str>,
    pub op: Op<'a>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op<'a> {
    Health,
    Stats,
    Load {
        model: &'a str,
        /// Required for Candle; for the simulated backend it only supplies the tokenizer.
        path: Option<&'a str>,
        /// `None` leaves the choice to `--backend`.
        backend: Option<BackendKind>,
        /// The `sim` map, resolved against its calibration profile and range-checked.
        sim: Option<SimParams>,
        /// The `openai` map, validated.
        openai: Option<OpenAiConfig>,
        /// Candle: how a GGUF's matrices are held; `None` is [`GgufWeightMode::Kernels`].
        gguf_weights: Option<GgufWeightMode>,
        /// Candle: what an encoder computes in.
        dtype: Option<Precision>,
        /// Model threads taking its batches (batch models only); `None` is one.
        threads: Option<usize>,
    },
    Unload {
        model: &'a str,
    },
    /// A LoRA adapter for a resident generator, loaded under `adapter` from directory `path`.
    LoadAdapter {
        model: &'a str,
        adapter: &'a str,
        path: &'a str,
    },
    UnloadAdapter {
        model: &'a str,
        adapter: &'a str,
    },
    Embed {
        model: &'a str,
        inputs: Vec<Input>,
        truncate: bool,
        traceparents: Vec<&'a str>,
    },
    /// `score`, `classify` or `extract`, which `inputs` tells apart.
    Head {
        model: &'a str,
        inputs: HeadInputs<'a>,
        truncate: bool,
        traceparents: Vec<&'a str>,
    },
    /// One sequence; its answers stream.
    Generate {
        model: &'a str,
        request: shoal_sidecar_core::GenerateRequest,
    },
    /// Cancels the `generate` request `target` of the same connection.
    Cancel {
        target: u64,
    },
}

impl Op<'_> {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Health => "health",
            Op::Stats => "stats",
            Op::Load { .. } => "load",
            Op::Unload { .. } => "unload",
            Op::LoadAdapter { .. } => "load_adapter",
            Op::UnloadAdapter { .. } => "unload_adapter",
            Op::Embed { .. } => "embed",
            Op::Head { inputs, .. } => inputs.op_name(),
            Op::Generate { .. } => "generate",
            Op::Cancel { .. } => "cancel",
        }
    }
}

/// What a task-head batch holds; the variant is the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeadInputs<'a> {
    /// `score`: pair `i` is `(queries[i], documents[i])`.
    Pairs {
        queries: Vec<&'a str>,
        documents: Vec<&'a str>,
    },
    /// `classify`: one text per row.
    Classify(Vec<&'a str>),
    /// `extract`: one text per row.
    Extract(Vec<&'a str>),
}

impl HeadInputs<'_> {
    pub(crate) fn op_name(&self) -> &'static str {
        match self {
            HeadInputs::Pairs { .. } => "score",
            HeadInputs::Classify(_) => "classify",
            HeadInputs::Extract(_) => "extract",
        }
    }
}
