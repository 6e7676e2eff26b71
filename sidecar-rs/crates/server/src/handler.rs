//! Turns one request frame into one response frame.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use opentelemetry::KeyValue;
use shoal_sidecar_candle::LoadOptions;
use shoal_sidecar_core::EmbedBatch;
use tokio::sync::mpsc;

use crate::calls::adapter;
use crate::calls::batch;
use crate::calls::generate::{self, Streams};
use crate::error::{ErrorCode, ProtocolError};
use crate::heads;
use crate::options::BackendKind;
use crate::registry::Registry;
use crate::request::{self, Limits, Op, Request};
use crate::response;
use crate::runner::LoadSpec;
use crate::trace;
use crate::work::{Answer, Work};

/// What every connection shares.
pub(crate) struct State {
    pub registry: Registry,
    pub limits: Limits,
    pub started: Instant,
    pub device: String,
    /// The backend a `load` that names none uses (`--backend`).
    pub backend: BackendKind,
}

/// Answers `body`. Never fails: every problem becomes an error response.
///
/// A `generate` sends its `tokens` frames through `responses` itself and returns the last one;
/// `streams` are the generations in flight on the same connection, for `cancel`.
pub(crate) async fn handle(
    state: Arc<State>,
    body: Vec<u8>,
    streams: &Streams,
    responses: &mpsc::Sender<Vec<u8>>,
) -> Vec<u8> {
    let request = match request::decode(&body, state.limits) {
        Ok(request) => request,
        Err(rejected) => {
            tracing::debug!(
                id = rejected.id,
                code = rejected.error.code.as_str(),
                message = rejected.error.message,
                "rejected a frame"
            );
            return response::error(rejected.id, &rejected.error);
        }
    };
    let id = request.id;
    let op = request.op.name();
    let parent = request.traceparent.and_then(trace::parse);
    let trace_id = parent.as_ref().and_then(trace::trace_id);
    let start = SystemTime::now();
    let result = dispatch(&state, request, streams, responses).await;
    // Batch spans are recorded by the model thread, which knows the compute timing. Other
    // ops get a span only inside a caller's trace: health and stats are polled often, and a
    // root trace per poll would bury the traces that matter.
    if !matches!(op, "embed" | "score" | "classify" | "extract" | "generate")
        && let Some(parent) = parent
    {
        trace::record(
            match op {
                "health" => "sidecar.health",
                "stats" => "sidecar.stats",
                "load" => "sidecar.load",
                "load_adapter" => "sidecar.load_adapter",
                "unload_adapter" => "sidecar.unload_adapter",
                "cancel" => "sidecar.cancel",
                _ => "sidecar.unload",
            },
            &[parent],
            start,
            SystemTime::now(),
            &[KeyValue::new("shoal.request_id", id as i64)],
            result.as_ref().err().map(|e| e.message.as_str()),
        );
    }
    match result {
        Ok(frame) => frame,
        Err(error) => {
            if error.code == ErrorCode::Internal {
                tracing::error!(id, op, trace_id, message = error.message, "request failed");
            } else {
                tracing::debug!(
                    id,
                    op,
                    trace_id,
                    code = error.code.as_str(),
                    message = error.message,
                    "request refused"
                );
            }
            response::error(id, &error)
        }
    }
}

async fn dispatch(
    state: &State,
    request: Request<'_>,
    streams: &Streams,
    responses: &mpsc::Sender<Vec<u8>>,
) -> Result<Vec<u8>, ProtocolError> {
    let id = request.id;
    match request.op {
        Op::Health => Ok(response::ok(
            id,
            &response::Health {
                version: env!("CARGO_PKG_VERSION"),
                backend: match state.backend {
                    BackendKind::Sim => BackendKind::Sim.as_str(),
                    BackendKind::Candle | BackendKind::Openai => {
                        state.registry.runtime().backend_name()
                    }
                },
                device: &state.device,
            },
        )),
        Op::Stats => Ok(response::ok(
            id,
            &response::Stats {
                uptime_us: u64::try_from(state.started.elapsed().as_micros()).unwrap_or(u64::MAX),
                models: state.registry.stats(),
                device_busy_us: shoal_sidecar_sim::shared_device().map(|d| d.busy_us()),
            },
        )),
        Op::Load {
            model,
            path,
            backend,
            sim,
            openai,
            gguf_weights,
            dtype,
            threads,
        } => {
            let backend = backend.unwrap_or(state.backend);
            if gguf_weights.is_some() && backend != BackendKind::Candle {
                return Err(ProtocolError::bad_request(
                    "`gguf_weights` is only valid with backend `candle`",
                ));
            }
            if dtype.is_some() && backend != BackendKind::Candle {
                return Err(ProtocolError::bad_request(
                    "`dtype` is only valid with backend `candle`",
                ));
            }
            if openai.is_some() && backend != BackendKind::Openai {
                return Err(ProtocolError::bad_request(
                    "`openai` is only valid with backend `openai`",
                ));
            }
            let spec = match (backend, path, sim) {
                (BackendKind::Openai, Some(_), _) | (BackendKind::Openai, _, Some(_)) => {
                    return Err(ProtocolError::bad_request(
                        "backend `openai` takes neither `path` nor `sim`",
                    ));
                }
                (BackendKind::Openai, None, None) => LoadSpec::Openai {
                    config: openai.ok_or_else(|| {
                        ProtocolError::bad_request("backend `openai` needs the `openai` map")
                    })?,
                },
                (BackendKind::Candle, None, _) => {
                    return Err(ProtocolError::bad_request(
                        "`path` is required for the candle backend",
                    ));
                }
                (BackendKind::Candle, Some(_), Some(_)) => {
                    return Err(ProtocolError::bad_request(
                        "`sim` is only valid with backend `sim`",
                    ));
                }
                (BackendKind::Candle, Some(path), None) => LoadSpec::Candle {
                    dir: PathBuf::from(path),
                    options: LoadOptions {
                        gguf_weights: gguf_weights.unwrap_or_default(),
                        precision: dtype.unwrap_or_default(),
                    },
                },
                (BackendKind::Sim, path, sim) => LoadSpec::sim(path.map(PathBuf::from), sim),
            };
            let threads = threads.unwrap_or(1);
            let handle = state.registry.load(model, spec, threads).await?;
            tracing::info!(
                model,
                path,
                backend = backend.as_str(),
                threads,
                memory_bytes = handle.info.memory_bytes,
                load_us = handle.info.load_us,
                "loaded a model"
            );
            Ok(response::ok(
                id,
                &response::Loaded {
                    model,
                    family: handle.info.family.as_str(),
                    dim: handle.info.dim as u64,
                    max_input_tokens: handle.info.max_input_tokens as u64,
                    memory_bytes: handle.info.memory_bytes,
                    load_us: handle.info.load_us,
                    labels: &handle.info.labels,
                    context_tokens: (handle.info.family
                        == shoal_sidecar_core::ModelFamily::Generate)
                        .then_some(handle.info.max_input_tokens as u64),
                },
            ))
        }
        Op::Unload { model } => {
            state.registry.unload(model).await?;
            tracing::info!(model, "unloaded a model");
            Ok(response::ok(id, &response::Unloaded { model }))
        }
        Op::Embed {
            model,
            inputs,
            truncate,
            traceparents,
        } => {
            let parents =
                trace::distinct_parents(traceparents.iter().copied().chain(request.traceparent));
            let work = Work::Embed(EmbedBatch { inputs, truncate });
            let (done, _) = batch::run(&state.registry, model, work, parents).await?;
            let Answer::Embeddings {
                dim,
                embeddings,
                tokens,
                truncated,
            } = &done.answer
            else {
                return Err(ProtocolError::new(
                    ErrorCode::Internal,
                    "an embed batch answered with something else",
                ));
            };
            Ok(response::ok(
                id,
                &response::Embedded {
                    dim: *dim as u64,
                    count: tokens.len() as u64,
                    embeddings: serde_bytes::Bytes::new(embeddings),
                    tokens,
                    truncated,
                    queue_us: done.queue_us,
                    compute_us: done.compute_us,
                },
            ))
        }
        Op::Head {
            model,
            inputs,
            truncate,
            traceparents,
        } => {
            let parents =
                trace::distinct_parents(traceparents.iter().copied().chain(request.traceparent));
            heads::answer(&state.registry, id, model, inputs, truncate, parents).await
        }
        Op::Generate {
            model,
            request: job,
        } => {
            let parent = request.traceparent.and_then(trace::parse);
            generate::generate(&state.registry, streams, responses, id, model, job, parent).await
        }
        Op::Cancel { target } => Ok(generate::cancel(streams, id, target)),
        Op::LoadAdapter {
            model,
            adapter,
            path,
        } => {
            let (info, load_us) = adapter::load(&state.registry, model, adapter, path).await?;
            Ok(response::ok(
                id,
                &response::AdapterLoaded {
                    model,
                    adapter,
                    rank: info.rank as u64,
                    memory_bytes: info.memory_bytes,
                    load_us,
                },
            ))
        }
        Op::UnloadAdapter { model, adapter } => {
            adapter::unload(&state.registry, model, adapter).await?;
            tracing::info!(model, adapter, "unloaded an adapter");
            Ok(response::ok(
                id,
                &response::AdapterUnloaded { model, adapter },
            ))
        }
    }
}
