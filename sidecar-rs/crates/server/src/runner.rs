//! OS threads per resident model (one, or `threads` for a batch model), fed by one bounded
//! channel.
//!
//! Inference never runs on the async executor: the socket loop only enqueues a job carrying its
//! reply channel and trace context, and awaits the reply. Each model thread builds its own
//! backend on a loading thread and owns it until unload: it must be `Send`, and needs no locks.
//! Several threads of one model take batches from the same queue, each running its batch
//! alone: on a CPU, batches side by side on separate cores beat one batch split across them,
//! whose every operation waits for the slowest core (and for whatever else was scheduled
//! there); see docs/benchmarks.md.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
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

/// The most threads one model may have: more than any host's cores are worth, few enough that a
/// typo cannot exhaust the process's threads or memory (each thread holds its own weights).
pub(crate) const MAX_MODEL_THREADS: usize = 64;

/// The receiving end of a model's queue, shared by its threads: whichever thread is free
/// holds the lock while it waits for the next job.
type SharedJobs = Arc<Mutex<mpsc::Receiver<Job>>>;

/// Starts `threads` threads for `name`, each loading `spec`, and returns once all are ready.
/// The returned receiver completes when every thread has dropped its model and exited.
pub(crate) async fn start(
    name: String,
    spec: LoadSpec,
    runtime: CandleRuntime,
    queue: usize,
    threads: usize,
) -> Result<(ModelHandle, oneshot::Receiver<()>), ProtocolError> {
    let (jobs_tx, jobs_rx) = mpsc::channel(queue.max(1));
    let jobs: SharedJobs = Arc::new(Mutex::new(jobs_rx));
    let (exited_tx, exited_rx) = oneshot::channel::<()>();
    // The last thread to exit drops the last clone, which completes `exited_rx`.
    let exited_tx = Arc::new(exited_tx);
    let counters = Arc::new(Counters::default());
    let loading = (0..threads)
        .map(|_| {
            spawn_model_thread(
                &name,
                spec.clone(),
                runtime.clone(),
                threads,
                Arc::clone(&jobs),
                Arc::clone(&counters),
                Arc::clone(&exited_tx),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    drop(exited_tx);
    let mut info: Option<ModelInfo> = None;
    for loaded in loading {
        let one = loaded.await.map_err(|_| {
            ProtocolError::new(ErrorCode::Internal, "the model thread died while loading")
        })??;
        info = Some(match info {
            None => one,
            // Every thread holds a copy of the weights.
            Some(all) => ModelInfo {
                memory_bytes: all.memory_bytes + one.memory_bytes,
                load_us: all.load_us.max(one.load_us),
                ..all
            },
        });
    }
    let info = info.ok_or_else(|| ProtocolError::bad_request("`threads` must be at least 1"))?;
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

/// One thread of a model: loads its own backend, reports it through the returned receiver,
/// then serves the shared queue until every sender is gone.
fn spawn_model_thread(
    name: &str,
    spec: LoadSpec,
    runtime: CandleRuntime,
    threads: usize,
    jobs: SharedJobs,
    counters: Arc<Counters>,
    exited: Arc<oneshot::Sender<()>>,
) -> Result<oneshot::Receiver<Result<ModelInfo, ProtocolError>>, ProtocolError> {
    let (loaded_tx, loaded_rx) = oneshot::channel();
    let model = name.to_owned();
    std::thread::Builder::new()
        .name(format!("model-{name}"))
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
            if threads > 1 && backend.generator().is_some() {
                let _ = loaded_tx.send(Err(ProtocolError::bad_request(format!(
                    "`threads` above 1 is for batch models; `{model}` generates, and one \
                     thread steps all of its sequences together"
                ))));
                return;
            }
            let pool = match compute_pool(threads) {
                Ok(pool) => pool,
                Err(e) => {
                    let _ = loaded_tx.send(Err(e));
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
            if loaded_tx.send(Ok(info)).is_err() {
                // The load request was abandoned; nobody can reach this model.
                return;
            }
            let run = move || {
                serve(&model, backend.as_ref(), &counters, &jobs);
                drop(backend);
            };
            match pool {
                Some(pool) => pool.install(run),
                None => run(),
            }
            drop(exited);
        })
        .map_err(|e| {
            ProtocolError::new(
                ErrorCode::Internal,
                format!("cannot start a model thread: {e}"),
            )
        })?;
    Ok(loaded_rx)
}

/// The pool that Candle splits this model thread's tensor operations over, when the model has
/// several threads: each gets a pool of its own (`RAYON_NUM_THREADS`, which `--compute-threads`
/// sets, threads, the calling thread among them). Sharing the process's global pool instead,
/// model threads queue their operations behind the same few workers: with `--compute-threads
/// 1` two model threads took turns on its one worker and ran a quarter slower than two
/// sidecar processes. A model of one thread keeps the global pool, which bounds what all such
/// models run at once to the cores.
fn compute_pool(threads: usize) -> Result<Option<rayon::ThreadPool>, ProtocolError> {
    if threads == 1 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build()
        .map(Some)
        .map_err(|e| {
            ProtocolError::new(
                ErrorCode::Internal,
                format!("cannot start a model thread's compute pool: {e}"),
            )
        })
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

/// A model thread's loop: one batch at a time, taken in arrival order from the queue it shares
/// with the model's other threads, until every sender is gone.
fn serve(
    model: &str,
    backend: &dyn Backend,
    counters: &Counters,
    jobs: &Mutex<mpsc::Receiver<Job>>,
) {
    // Nothing panics while holding the lock.
    let lock = || jobs.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(generator) = backend.generator() {
        // A generating model has exactly one thread, so it keeps the queue to itself.
        return generation::serve(model, backend, generator, counters, &mut lock());
    }
    loop {
        // A statement of its own, so the lock is released before the batch runs.
        let Some(job) = lock().blocking_recv() else {
            break;
        };
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

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    #[test]
    fn one_thread_models_share_the_global_pool() {
        assert!(compute_pool(1).unwrap().is_none());
    }

    #[test]
    fn each_thread_of_a_model_computes_in_a_pool_of_its_own_that_includes_it() {
        let caller = std::thread::current().id();
        let pool = compute_pool(2)
            .unwrap()
            .expect("a pool for a model of two threads");
        pool.install(|| {
            // The model thread runs its batches itself, as the pool's first worker: Candle's
            // parallel operations then go to this pool, not to the process's global one.
            assert_eq!(std::thread::current().id(), caller);
            assert_eq!(pool.current_thread_index(), Some(0));
            let in_own_pool: Vec<bool> = (0..64)
                .into_par_iter()
                .map(|_| pool.current_thread_index().is_some())
                .collect();
            assert!(in_own_pool.iter().all(|&x| x));
        });
    }
}
