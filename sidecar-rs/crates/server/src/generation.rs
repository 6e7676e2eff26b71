//! The `generate` and `cancel` path: streaming answers and continuous batching.
//!
//! On the async side, [`generate`] queues a [`GenerateJob`] on the model's thread and turns the
//! [`Event`]s that come back into `tokens` frames, written as they arrive, and one last `done`
//! frame. On the model thread, [`serve`] runs the [`Generator`]: between two decode steps it
//! takes every newly arrived sequence and every cancellation, so a request joins the batch at
//! the next step and the socket never waits for a batch to finish.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use opentelemetry::{Context, KeyValue};
use serde::Serialize;
use shoal_sidecar_core::{
    Backend, FinishReason, GenerateRequest, Generator, ModelFamily, SequenceEvent, SequenceId,
};
use tokio::sync::mpsc;

use crate::error::{ErrorCode, ProtocolError};
use crate::registry::Registry;
use crate::response;
use crate::runner::{Counters, Job};
use crate::trace;

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

/// A sequence the model thread is running.
struct Live {
    job: GenerateJob,
    admitted: Instant,
    started: SystemTime,
    queue_us: u64,
    compute_us: u64,
}

/// Refuses a batch job sent to a generative model.
fn refuse_batch(job: crate::runner::BatchJob, family: ModelFamily) {
    let _ = job.reply.send(Err(ProtocolError::bad_request(format!(
        "models of family `{family}` answer `generate`, not `{}`",
        job.work.span_name().trim_start_matches("sidecar.")
    ))));
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The model thread's loop for a generative model: continuous batching until every sender is
/// gone and every sequence has finished.
pub(crate) fn serve(
    model: &str,
    backend: &dyn Backend,
    generator: &dyn Generator,
    counters: &Counters,
    jobs: &mut mpsc::Receiver<Job>,
) {
    let mut live: HashMap<SequenceId, Live> = HashMap::new();
    let mut next_id = 0u64;
    let mut open = true;
    loop {
        if live.is_empty() {
            if !open {
                return;
            }
            match jobs.blocking_recv() {
                Some(job) => admit(backend, generator, job, &mut live, &mut next_id),
                None => return,
            }
        }
        loop {
            match jobs.try_recv() {
                Ok(job) => admit(backend, generator, job, &mut live, &mut next_id),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let gone: Vec<SequenceId> = live
            .iter()
            .filter(|(_, l)| l.job.cancelled.load(Ordering::Relaxed) || l.job.events.is_closed())
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(l) = live.remove(&id) {
                let event = generator.cancel(id).unwrap_or(SequenceEvent::Done {
                    finish_reason: FinishReason::Cancelled,
                    prompt_tokens: 0,
                    completion_tokens: 0,
                });
                finish(model, counters, l, event);
            }
        }
        if live.is_empty() {
            continue;
        }

        let started = Instant::now();
        let stepped = catch_unwind(AssertUnwindSafe(|| generator.step()));
        let step_us = micros(started.elapsed());
        counters.busy_us.fetch_add(step_us, Ordering::Relaxed);
        counters.batches.fetch_add(1, Ordering::Relaxed);
        for l in live.values_mut() {
            l.compute_us += step_us;
        }
        let events = match stepped {
            Ok(events) => events,
            Err(panic) => {
                let message = format!(
                    "generation panicked: {}",
                    crate::runner::panic_message(panic.as_ref())
                );
                tracing::error!(model, message, "a decode step panicked");
                for (id, l) in live.drain() {
                    generator.cancel(id);
                    let error = ProtocolError::new(ErrorCode::Internal, message.clone());
                    let _ = l.job.events.send(Event::Failed(error));
                }
                continue;
            }
        };
        for (id, event) in events {
            match event {
                SequenceEvent::Tokens { text, token_ids } => {
                    if let Some(l) = live.get(&id) {
                        let _ = l.job.events.send(Event::Tokens { text, token_ids });
                    }
                }
                done => {
                    if let Some(l) = live.remove(&id) {
                        finish(model, counters, l, done);
                    }
                }
            }
        }
    }
}

/// Starts `job` on `generator`, or answers it with why it cannot run.
fn admit(
    backend: &dyn Backend,
    generator: &dyn Generator,
    job: Job,
    live: &mut HashMap<SequenceId, Live>,
    next_id: &mut u64,
) {
    let job = match job {
        Job::Generate(job) => job,
        Job::Batch(job) => return refuse_batch(job, backend.family()),
        Job::Adapter(job) => return crate::adapters::run(generator, job),
    };
    if job.cancelled.load(Ordering::Relaxed) || job.events.is_closed() {
        let _ = job.events.send(Event::Done {
            finish_reason: FinishReason::Cancelled,
            prompt_tokens: 0,
            completion_tokens: 0,
            queue_us: micros(job.enqueued.elapsed()),
            compute_us: 0,
        });
        return;
    }
    *next_id += 1;
    let id = SequenceId(*next_id);
    let admitted = Instant::now();
    let queue_us = micros(admitted.duration_since(job.enqueued));
    let result = catch_unwind(AssertUnwindSafe(|| {
        generator.admit(id, job.request.clone())
    }));
    match result {
        Ok(Ok(_prompt_tokens)) => {
            live.insert(
                id,
                Live {
                    job,
                    admitted,
                    started: SystemTime::now(),
                    queue_us,
                    compute_us: 0,
                },
            );
        }
        Ok(Err(e)) => {
            let _ = job.events.send(Event::Failed(ProtocolError::from(e)));
        }
        Err(panic) => {
            let _ = job.events.send(Event::Failed(ProtocolError::new(
                ErrorCode::Internal,
                format!(
                    "admitting the sequence panicked: {}",
                    crate::runner::panic_message(panic.as_ref())
                ),
            )));
        }
    }
}

/// Sends a sequence's last event, counts it and records its span.
fn finish(model: &str, counters: &Counters, l: Live, event: SequenceEvent) {
    let (event, error) = match event {
        SequenceEvent::Done {
            finish_reason,
            prompt_tokens,
            completion_tokens,
        } => {
            counters.items.fetch_add(1, Ordering::Relaxed);
            counters.sequences.fetch_add(1, Ordering::Relaxed);
            counters
                .generated_tokens
                .fetch_add(completion_tokens as u64, Ordering::Relaxed);
            counters.tokens.fetch_add(
                (prompt_tokens + completion_tokens) as u64,
                Ordering::Relaxed,
            );
            (
                Event::Done {
                    finish_reason,
                    prompt_tokens,
                    completion_tokens,
                    queue_us: l.queue_us,
                    compute_us: l.compute_us,
                },
                None,
            )
        }
        SequenceEvent::Failed(e) => {
            let e = ProtocolError::from(e);
            let message = e.message.clone();
            (Event::Failed(e), Some(message))
        }
        SequenceEvent::Tokens { .. } => return,
    };
    if let Some(parent) = &l.job.parent {
        trace::record(
            "sidecar.generate",
            std::slice::from_ref(parent),
            l.started,
            SystemTime::now(),
            &[
                KeyValue::new("shoal.model", model.to_owned()),
                KeyValue::new("shoal.queue_us", l.queue_us as i64),
                KeyValue::new("shoal.compute_us", l.compute_us as i64),
            ],
            error.as_deref(),
        );
    }
    tracing::debug!(
        model,
        queue_us = l.queue_us,
        compute_us = l.compute_us,
        wall_us = micros(l.admitted.elapsed()),
        "finished a sequence"
    );
    let _ = l.job.events.send(event);
}
