//! Turns one request frame into one response frame.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use opentelemetry::KeyValue;
use shoal_sidecar_core::EmbedBatch;
use tokio::sync::oneshot;

use crate::error::{ErrorCode, ProtocolError};
use crate::options::BackendKind;
use crate::registry::Registry;
use crate::request::{self, Limits, Op, Request};
use crate::response;
use crate::runner::{EmbedJob, LoadSpec};
use crate::trace;

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
pub(crate) async fn handle(state: Arc<State>, body: Vec<u8>) -> Vec<u8> {
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
    let result = dispatch(&state, request).await;
    // The embed span is recorded by the model thread, which knows the compute timing. Other
    // ops get a span only inside a caller's trace: health and stats are polled often, and a
    // root trace per poll would bury the traces that matter.
    if op != "embed"
        && let Some(parent) = parent
    {
        trace::record(
            match op {
                "health" => "sidecar.health",
                "stats" => "sidecar.stats",
                "load" => "sidecar.load",
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

async fn dispatch(state: &State, request: Request<'_>) -> Result<Vec<u8>, ProtocolError> {
    let id = request.id;
    match request.op {
        Op::Health => Ok(response::ok(
            id,
            &response::Health {
                version: env!("CARGO_PKG_VERSION"),
                backend: match state.backend {
                    BackendKind::Sim => BackendKind::Sim.as_str(),
                    BackendKind::Candle => state.registry.runtime().backend_name(),
                },
                device: &state.device,
            },
        )),
        Op::Stats => Ok(response::ok(
            id,
            &response::Stats {
                uptime_us: u64::try_from(state.started.elapsed().as_micros()).unwrap_or(u64::MAX),
                models: state.registry.stats(),
            },
        )),
        Op::Load {
            model,
            path,
            backend,
            sim,
        } => {
            let backend = backend.unwrap_or(state.backend);
            let spec = match (backend, path, sim) {
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
                },
                (BackendKind::Sim, path, sim) => LoadSpec::sim(path.map(PathBuf::from), sim),
            };
            let handle = state.registry.load(model, spec).await?;
            tracing::info!(
                model,
                path,
                backend = backend.as_str(),
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
            let handle = state.registry.get(model)?;
            let parents =
                trace::distinct_parents(traceparents.iter().copied().chain(request.traceparent));
            let (reply, done) = oneshot::channel();
            handle
                .submit(EmbedJob {
                    batch: EmbedBatch {
                        inputs: inputs.iter().map(|s| (*s).to_owned()).collect(),
                        truncate,
                    },
                    parents,
                    enqueued: Instant::now(),
                    reply,
                })
                .await?;
            // Holding the handle while waiting would make an unload wait for this response
            // even though the job is already queued, which is all unload promises to finish.
            drop(handle);
            let done = done.await.map_err(|_| {
                ProtocolError::new(
                    ErrorCode::Internal,
                    format!("model `{model}` stopped before answering"),
                )
            })??;
            Ok(response::ok(
                id,
                &response::Embedded {
                    dim: done.dim as u64,
                    count: done.tokens.len() as u64,
                    embeddings: serde_bytes::Bytes::new(&done.embeddings),
                    tokens: &done.tokens,
                    truncated: &done.truncated,
                    queue_us: done.queue_us,
                    compute_us: done.compute_us,
                },
            ))
        }
    }
}
