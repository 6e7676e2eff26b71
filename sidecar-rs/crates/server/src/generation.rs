//! A generative model's thread: continuous batching. [`serve`] runs the [`Generator`]: between
//! two decode steps it takes every newly arrived sequence and every cancellation, so a request
//! joins the batch at the next step and the socket never waits for a batch to finish. The
//! connection's side of a `generate` call is `calls::generate`.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use opentelemetry::KeyValue;
use shoal_sidecar_core::{
    Backend, FinishReason, Generator, ModelFamily, SequenceEvent, SequenceId,
};
use tokio::sync::mpsc;

use crate::error::{ErrorCode, ProtocolError};
use crate::job::{BatchJob, Counters, Event, GenerateJob, Job, micros, panic_message};
use crate::trace;

/// A sequence the model thread is running.
struct Live {
    job: GenerateJob,
    admitted: Instant,
    started: SystemTime,
    queue_us: u64,
    compute_us: u64,
    /// Decode steps it has taken part in.
    steps: u32,
}

/// A traced sequence records its first decode step and every this-many-th after it as
/// `sidecar.decode_step` spans: enough to see how the step time moves with the batch around
/// it, without a span per token (a 500-token answer would otherwise carry 500).
const DECODE_SPAN_EVERY: u32 = 16;

/// Refuses a batch job sent to a generative model.
fn refuse_batch(job: BatchJob, family: ModelFamily) {
    let _ = job.reply.send(Err(ProtocolError::bad_request(format!(
        "models of family `{family}` answer `generate`, not `{}`",
        job.work.span_name().trim_start_matches("sidecar.")
    ))));
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
        counters
            .active_sequences
            .store(live.len() as u64, Ordering::Relaxed);
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
        counters
            .active_sequences
            .store(live.len() as u64, Ordering::Relaxed);
        if live.is_empty() {
            continue;
        }

        let started = Instant::now();
        let step_start = SystemTime::now();
        let stepped = catch_unwind(AssertUnwindSafe(|| generator.step()));
        let step_us = micros(started.elapsed());
        counters.busy_us.fetch_add(step_us, Ordering::Relaxed);
        counters.batches.fetch_add(1, Ordering::Relaxed);
        let sequences = live.len();
        for l in live.values_mut() {
            l.compute_us += step_us;
            l.steps += 1;
            trace_step(model, l, sequences, step_start);
        }
        let events = match stepped {
            Ok(events) => events,
            Err(panic) => {
                let message = format!("generation panicked: {}", panic_message(panic.as_ref()));
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
                    steps: 0,
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
                    panic_message(panic.as_ref())
                ),
            )));
        }
    }
}

/// Whether a sequence's `step`-th decode step (counted from 1) gets a span.
fn is_traced_step(step: u32) -> bool {
    step == 1 || step.is_multiple_of(DECODE_SPAN_EVERY)
}

/// Records the step `l` just took part in, when its trace is sampled and the step is one of
/// those kept (see [`DECODE_SPAN_EVERY`]).
fn trace_step(model: &str, l: &Live, sequences: usize, start: SystemTime) {
    let Some(parent) = &l.job.parent else {
        return;
    };
    if !is_traced_step(l.steps) {
        return;
    }
    trace::record(
        "sidecar.decode_step",
        std::slice::from_ref(parent),
        start,
        SystemTime::now(),
        &[
            KeyValue::new("shoal.model", model.to_owned()),
            KeyValue::new("shoal.step", i64::from(l.steps)),
            KeyValue::new("shoal.batch_sequences", sequences as i64),
        ],
        None,
    );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_the_first_decode_step_and_every_sixteenth() {
        let traced: Vec<u32> = (1..=50).filter(|&s| is_traced_step(s)).collect();
        assert_eq!(traced, vec![1, 16, 32, 48]);
    }
}
