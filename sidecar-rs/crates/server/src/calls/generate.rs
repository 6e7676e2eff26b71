//! `generate` and `cancel`: queues a sequence on the model's thread and turns the events that
//! come back into `tokens` frames, written as they arrive, and one last `done` frame.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use opentelemetry::Context;
use serde::Serialize;
use shoal_sidecar_core::{GenerateRequest, ModelFamily};
use tokio::sync::mpsc;

use crate::error::{ErrorCode, ProtocolError};
use crate::job::{Event, GenerateJob, Job};
use crate::registry::Registry;
use crate::response;

#[derive(Serialize)]
struct TokensFrame<'a> {
    event: &'static str,
    text: &'a str,
    token_ids: &'a [u32],
}

#[derive(Serialize)]
struct DoneFrame {
    event: &'static str,
    finish_reason: &'static str,
    prompt_tokens: u64,
    completion_tokens: u64,
    queue_us: u64,
    compute_us: u64,
}

#[derive(Serialize)]
struct Cancelled {
    cancelled: bool,
}

/// The generations in flight on one connection, by request id, so that `cancel` can reach
/// them and a closed connection can stop them.
#[derive(Default)]
pub(crate) struct Streams {
    cancels: Mutex<HashMap<u64, Arc<AtomicBool>>>,
}

impl Streams {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<AtomicBool>>> {
        // Nothing panics while holding the lock.
        self.cancels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Flags request `target` for cancellation; false when it is not in flight.
    pub(crate) fn cancel(&self, target: u64) -> bool {
        match self.lock().get(&target) {
            Some(flag) => !flag.swap(true, Ordering::Relaxed),
            None => false,
        }
    }

    /// Flags every generation of the connection; called when the client goes away.
    pub(crate) fn cancel_all(&self) {
        for flag in self.lock().values() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Removes a request from its connection's [`Streams`] however its stream ends.
struct Registered<'a> {
    streams: &'a Streams,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.streams.lock().remove(&self.id);
    }
}

/// The answer to `cancel`.
pub(crate) fn cancel(streams: &Streams, id: u64, target: u64) -> Vec<u8> {
    response::ok(
        id,
        &Cancelled {
            cancelled: streams.cancel(target),
        },
    )
}

/// Runs request `id` on `model`, sending `tokens` frames through `responses` as they come, and
/// returns the final `done` frame.
pub(crate) async fn generate(
    registry: &Registry,
    streams: &Streams,
    responses: &mpsc::Sender<Vec<u8>>,
    id: u64,
    model: &str,
    request: GenerateRequest,
    parent: Option<Context>,
) -> Result<Vec<u8>, ProtocolError> {
    let handle = registry.get(model)?;
    if handle.info.family != ModelFamily::Generate {
        return Err(ProtocolError::bad_request(format!(
            "model `{model}` is a `{}` model; `generate` needs a `generate` model",
            handle.info.family
        )));
    }
    let cancelled = Arc::new(AtomicBool::new(false));
    streams.lock().insert(id, Arc::clone(&cancelled));
    let _registered = Registered { streams, id };
    let (events, mut rx) = mpsc::unbounded_channel();
    handle
        .submit_job(Job::Generate(GenerateJob {
            request,
            parent,
            enqueued: Instant::now(),
            cancelled: Arc::clone(&cancelled),
            events,
        }))
        .await?;
    // Holding the handle while streaming would make an unload wait on this client.
    drop(handle);
    while let Some(event) = rx.recv().await {
        match event {
            Event::Tokens { text, token_ids } => {
                let frame = response::ok(
                    id,
                    &TokensFrame {
                        event: "tokens",
                        text: &text,
                        token_ids: &token_ids,
                    },
                );
                if responses.send(frame).await.is_err() {
                    // The writer is gone with the client: stop computing for it.
                    cancelled.store(true, Ordering::Relaxed);
                    return Err(ProtocolError::new(
                        ErrorCode::Internal,
                        "the client went away",
                    ));
                }
            }
            Event::Done {
                finish_reason,
                prompt_tokens,
                completion_tokens,
                queue_us,
                compute_us,
            } => {
                return Ok(response::ok(
                    id,
                    &DoneFrame {
                        event: "done",
                        finish_reason: finish_reason.as_str(),
                        prompt_tokens: prompt_tokens as u64,
                        completion_tokens: completion_tokens as u64,
                        queue_us,
                        compute_us,
                    },
                ));
            }
            Event::Failed(error) => return Err(error),
        }
    }
    Err(ProtocolError::new(
        ErrorCode::Internal,
        format!("model `{model}` stopped before finishing the sequence"),
    ))
}
