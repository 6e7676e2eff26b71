//! What the async side asks of a model thread, and what the thread reports back: the bottom
//! of the sidecar's layers. The thread loops (`runner`, `generation`, `adapters`) take these
//! jobs; the calls a connection makes (`calls`) build them. Neither side knows the other.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;

use opentelemetry::Context;
use shoal_sidecar_core::{AdapterInfo, FinishReason, GenerateRequest};
use tokio::sync::{mpsc, oneshot};

use crate::error::ProtocolError;
use crate::work::{Answer, Work};

/// Counters since load, written by the model thread and read by `stats` without waiting for it.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub batches: AtomicU64,
    pub items: AtomicU64,
    pub tokens: AtomicU64,
    pub busy_us: AtomicU64,
    /// `generate` models: sequences finished and tokens they generated.
    pub sequences: AtomicU64,
    pub generated_tokens: AtomicU64,
    /// `generate` models: sequences admitted and not yet finished (a cancelled one is
    /// finished once the thread has dropped it between two steps).
    pub active_sequences: AtomicU64,
}

/// What a model thread is asked to do.
pub(crate) enum Job {
    Batch(BatchJob),
    Generate(GenerateJob),
    Adapter(AdapterJob),
}

/// One batch request (`embed`, `score`, `classify`, `extract`) on its way to the model thread.
pub(crate) struct BatchJob {
    pub work: Work,
    /// Each distinct trace the batch belongs to; the compute span is recorded under each.
    pub parents: Vec<Context>,
    pub enqueued: Instant,
    pub reply: oneshot::Sender<Result<BatchDone, ProtocolError>>,
}

/// A finished batch, ready to be written as a response.
pub(crate) struct BatchDone {
    pub answer: Answer,
    pub queue_us: u64,
    pub compute_us: u64,
}

/// One `generate` request on its way to the model thread.
pub(crate) struct GenerateJob {
    pub request: GenerateRequest,
    pub parent: Option<Context>,
    pub enqueued: Instant,
    /// Set by `cancel` or a closed connection; read by the model thread between steps.
    pub cancelled: Arc<AtomicBool>,
    /// Unbounded because the model thread must never block on one slow client; what one
    /// sequence can queue is bounded by its `max_tokens`.
    pub events: mpsc::UnboundedSender<Event>,
}

/// What the model thread reports about one sequence.
#[derive(Debug)]
pub(crate) enum Event {
    Tokens {
        text: String,
        token_ids: Vec<u32>,
    },
    Done {
        finish_reason: FinishReason,
        prompt_tokens: usize,
        completion_tokens: usize,
        queue_us: u64,
        compute_us: u64,
    },
    Failed(ProtocolError),
}

/// What to do with an adapter.
pub(crate) enum AdapterOp {
    Load { name: String, dir: PathBuf },
    Unload { name: String },
}

/// An adapter operation on its way to a model thread.
pub(crate) struct AdapterJob {
    pub op: AdapterOp,
    /// The loaded adapter and the microseconds its load took; nothing for an unload.
    pub reply: oneshot::Sender<Result<Option<(AdapterInfo, u64)>, ProtocolError>>,
}

pub(crate) fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}
