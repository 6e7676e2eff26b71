//! One OS thread per resident model, fed by a bounded channel.
//!
//! Inference never runs on the async executor: the socket loop only enqueues a job carrying its
//! reply channel and trace context, and awaits the reply. The backend is built on a loading
//! thread and moved to the model thread, which owns it until unload: it must be `Send`, and
//! needs no locks.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use opentelemetry::KeyValue;
use shoal_sidecar_candle::{CandleRuntime, LoadOptions};
use shoal_sidecar_core::{AdapterInfo, Backend, ModelFamily};
use shoal_sidecar_openai::{OpenAiBackend, OpenAiConfig};
use shoal_sidecar_sim::{Profile, SimBackend, SimParams};
use tokio::sync::{mpsc, oneshot};

use crate::adapters;
use crate::error::{ErrorCode, ProtocolError};
use crate::generation;
use crate::job::{BatchDone, BatchJob, Counters, Event, Job, micros, panic_message};
use crate::options::BackendKind;
use crate::trace;
use crate::work::Answer;

/// What to load, and on which runtime.
#[derive(Debug, Clone)]
pub(crate) enum LoadSpec {
    /// A model directory computed by Candle on the sidecar's device.
    Candle { dir: PathBuf, options: LoadOptions },
    /// A simulated model; `dir`, when given, supplies its tokenizer.
    Sim {
        dir: Option<PathBuf>,
        params: SimParams,
    },
    /// A model served by a remote OpenAI-compatible server.
    Openai { config: OpenAiConfig },
}

impl LoadSpec {
    /// A simulated model with `params`, or the default calibration profile's when absent.
    pub(crate) fn sim(dir: Option<PathBuf>, params: Option<SimParams>) -> Self {
        LoadSpec::Sim {
            dir,
            params: params.unwrap_or_else(|| Profile::default().params()),
        }
    }

    /// A `--model name=dir` preloaded on the sidecar's default `backend`.
    pub(crate) fn preload(backend: BackendKind, dir: PathBuf) -> Self {
        match backend {
            // `--backend` cannot be `openai` (clap does not offer it), and a directory is a
            // Candle model either way.
            BackendKind::Candle | BackendKind::Openai => LoadSpec::Candle {
                dir,
                options: LoadOptions::default(),
            },
            BackendKind::Sim => LoadSpec::sim(Some(dir), None),
        }
    }

    /// Builds the backend; runs on the loading thread (see [`load_below_serving`]).
    fn load(self, runtime: &CandleRuntime) -> Result<Box<dyn Backend + Send>, ProtocolError> {
        match self {
            LoadSpec::Candle { dir, options } => Ok(runtime.load_model(&dir, options)?),
            LoadSpec::Sim { dir, params } => {
                Ok(Box::new(SimBackend::load(dir.as_deref(), params)?))
            }
            LoadSpec::Openai { config } => Ok(Box::new(OpenAiBackend::load(config)?)),
        }
    }
}

/// What a loaded model tells its clients.
#[derive(Debug, Clone)]
pub(crate) struct ModelInfo {
    pub family: ModelFamily,
    pub dim: usize,
    pub max_input_tokens: usize,
    pub memory_bytes: u64,
    pub load_us: u64,
    /// Label names of a `classify` or `extract` model, in id order; empty otherwise.
    pub labels: Vec<String>,
}

/// The async side's view of a resident model. Clones of the `Arc` holding it keep the model
/// thread alive: the thread exits once every sender is gone and the queue is drained.
pub(crate) struct ModelHandle {
    pub name: String,
    pub info: ModelInfo,
    pub counters: Arc<Counters>,
    /// The adapters loaded on the model thread, as its answers reported them, for `stats`.
    adapters: Mutex<BTreeMap<String, AdapterInfo>>,
    jobs: mpsc::Sender<Job>,
}

impl ModelHandle {
    /// Queues `job`, waiting while the queue is full. Fails only if the thread has stopped.
    pub(crate) async fn submit(&self, job: BatchJob) -> Result<(), ProtocolError> {
        self.submit_job(Job::Batch(job)).await
    }

    /// The adapters loaded, by name.
    pub(crate) fn adapters(&self) -> MutexGuard<'_, BTreeMap<String, AdapterInfo>> {
        // Nothing panics while holding the lock.
        self.adapters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues any job, waiting while the queue is full. Fails only if the thread has stopped.
    pub(crate) async fn submit_job(&self, job: Job) -> Result<(), ProtocolError> {
        self.jobs.send(job).await.map_err(|_| {
            ProtocolError::new(
                ErrorCode::ModelNotFound,
                format!("model `{}` was unloaded", self.name),
            )
        })
    }
}

/// Starts a thread for `name`, loads `spec` on it and returns once the model is ready. The
/// returned receiver completes when the thread has dropped the model and exited.
pub(crate) async fn start(
    name: String,
    spec: LoadSpec,
    runtime: CandleRuntime,
    queue: usize,
) -> Result<(ModelHandle, oneshot::Receiver<()>), ProtocolError> {
    let (jobs_tx, jobs_rx) = mpsc::channel(queue.max(1));
    let (loaded_tx, loaded_rx) = oneshot::channel();
    let (exited_tx, exited_rx) = oneshot::channel();
    let thread_name = format!("model-{name}");
    let model = name.clone();
    std::thread::Builder::new()
        .name(thread_name)
        .spawn(move || {
            let started = Instant::now();
            let backend = match load_below_serving(&model, spec, &runtime) {
                Ok(Ok(backend)) => backend,
                Ok(Err(e)) => {
                    let _ = loaded_tx.send(Err(e));
                    return;
                }
                Err(panic) => {
                    let _ = loaded_tx.send(Err(ProtocolError::new(
                        ErrorCode::Internal,
                        format!("loading panicked: {}", panic_message(panic.as_ref())),
                    )));
                    return;
                }
            };
            let info = ModelInfo {
                family: backend.family(),
                dim: backend.dim(),
                max_input_tokens: backend.max_input_tokens(),
                memory_bytes: backend.memory_bytes(),
                load_us: micros(started.elapsed()),
                labels: backend.labels().to_vec(),
            };
            let counters = Arc::new(Counters::default());
            if loaded_tx.send(Ok((info, Arc::clone(&counters)))).is_err() {
                // The load request was abandoned; nobody can reach this model.
                return;
            }
            serve(&model, backend.as_ref(), &counters, jobs_rx);
            drop(backend);
            drop(exited_tx);
        })
        .map_err(|e| {
            ProtocolError::new(
                ErrorCode::Internal,
                format!("cannot start a model thread: {e}"),
            )
        })?;

    let (info, counters) = loaded_rx.await.map_err(|_| {
        ProtocolError::new(ErrorCode::Internal, "the model thread died while loading")
    })??;
    Ok((
        ModelHandle {
            name,
            info,
            counters,
            adapters: Mutex::new(BTreeMap::new()),
            jobs: jobs_tx,
        },
        exited_rx,
    ))
}

/// Niceness of a loading thread: far enough below serving threads (0) that the scheduler gives
/// a load only the CPU time the resident models leave idle.
const LOAD_NICE: libc::c_int = 19;

/// Loads `spec` on a thread of its own at [`LOAD_NICE`], so that reading and converting
/// weights competes as little as possible with the batches of models already serving (on a
/// CPU sidecar both are CPU work on the same cores). A thread cannot raise its priority back
/// without privileges, hence a separate thread rather than the model thread itself.
fn load_below_serving(
    model: &str,
    spec: LoadSpec,
    runtime: &CandleRuntime,
) -> std::thread::Result<Result<Box<dyn Backend + Send>, ProtocolError>> {
    std::thread::scope(|scope| {
        let loading = std::thread::Builder::new()
            .name(format!("load-{model}"))
            .spawn_scoped(scope, || {
                lower_thread_priority();
                spec.load(runtime)
            });
        match loading {
            Ok(handle) => handle.join(),
            Err(e) => Ok(Err(ProtocolError::new(
                ErrorCode::Internal,
                format!("cannot start a loading thread: {e}"),
            ))),
        }
    })
}

/// Lowers the calling thread's scheduling priority to [`LOAD_NICE`]; best effort, since a
/// load at normal priority is still correct.
#[cfg(target_os = "linux")]
fn lower_thread_priority() {
    // SAFETY: neither call takes pointers. On Linux, `PRIO_PROCESS` with a thread id sets the
    // niceness of that one thread.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, LOAD_NICE);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_thread_priority() {}

/// The model thread's loop: one batch at a time, in arrival order, until every sender is gone.
fn serve(model: &str, backend: &dyn Backend, counters: &Counters, mut jobs: mpsc::Receiver<Job>) {
    if let Some(generator) = backend.generator() {
        return generation::serve(model, backend, generator, counters, &mut jobs);
    }
    while let Some(job) = jobs.blocking_recv() {
        let job = match job {
            Job::Batch(job) => job,
            Job::Adapter(job) => {
                adapters::refuse(job, backend.family());
                continue;
            }
            Job::Generate(job) => {
                let _ = job
                    .events
                    .send(Event::Failed(ProtocolError::bad_request(format!(
                        "models of family `{}` do not answer `generate`",
                        backend.family()
                    ))));
                continue;
            }
        };
        let picked = Instant::now();
        let queue_us = micros(picked.duration_since(job.enqueued));
        if job.reply.is_closed() {
            // Whoever asked is gone (shutdown grace ran out); computing would be wasted.
            continue;
        }
        let start = SystemTime::now();
        let result = catch_unwind(AssertUnwindSafe(|| job.work.run(backend)));
        let compute = picked.elapsed();
        let end = SystemTime::now();
        let compute_us = micros(compute);
        counters.busy_us.fetch_add(compute_us, Ordering::Relaxed);

        let result: Result<Answer, ProtocolError> = match result {
            Ok(result) => result.map_err(ProtocolError::from),
            Err(panic) => Err(ProtocolError::new(
                ErrorCode::Internal,
                format!("inference panicked: {}", panic_message(panic.as_ref())),
            )),
        };
        let size = job.work.len();
        let tokens = result.as_ref().map_or(0, Answer::total_tokens);
        trace::record(
            job.work.span_name(),
            &job.parents,
            start,
            end,
            &[
                KeyValue::new("shoal.model", model.to_owned()),
                KeyValue::new("shoal.batch_size", size as i64),
                KeyValue::new("shoal.tokens", tokens as i64),
                KeyValue::new("shoal.queue_us", queue_us as i64),
            ],
            result.as_ref().err().map(|e| e.message.as_str()),
        );

        let reply = result.map(|out| {
            counters.batches.fetch_add(1, Ordering::Relaxed);
            counters
                .items
                .fetch_add(out.count() as u64, Ordering::Relaxed);
            counters.tokens.fetch_add(tokens, Ordering::Relaxed);
            tracing::debug!(
                model,
                size,
                tokens,
                queue_us,
                compute_us,
                trace_id = job.parents.first().and_then(trace::trace_id),
                op = job.work.span_name(),
                "ran a batch"
            );
            BatchDone {
                answer: out,
                queue_us,
                compute_us,
            }
        });
        let _ = job.reply.send(reply);
    }
}
