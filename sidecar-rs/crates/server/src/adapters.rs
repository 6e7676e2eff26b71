//! `load_adapter` and `unload_adapter`: LoRA adapters of a resident generator. They are loaded
//! and dropped on the model's own thread between two decode steps, the thread that owns the
//! generator, so no sequence sees its model change in the middle of a step.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use shoal_sidecar_core::{AdapterInfo, Generator, ModelFamily};
use tokio::sync::oneshot;

use crate::error::{ErrorCode, ProtocolError};
use crate::registry::Registry;
use crate::runner::{Job, ModelHandle};

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

/// Loads adapter `adapter` of model `model` from `path`.
pub(crate) async fn load(
    registry: &Registry,
    model: &str,
    adapter: &str,
    path: &str,
) -> Result<(AdapterInfo, u64), ProtocolError> {
    let handle = generator_handle(registry, model)?;
    let op = AdapterOp::Load {
        name: adapter.to_owned(),
        dir: PathBuf::from(path),
    };
    let loaded = submit(&handle, op).await?.ok_or_else(|| {
        ProtocolError::new(ErrorCode::Internal, "the model thread answered no adapter")
    })?;
    handle.adapters().insert(adapter.to_owned(), loaded.0);
    Ok(loaded)
}

/// Unloads adapter `adapter` of model `model`.
pub(crate) async fn unload(
    registry: &Registry,
    model: &str,
    adapter: &str,
) -> Result<(), ProtocolError> {
    let handle = generator_handle(registry, model)?;
    submit(
        &handle,
        AdapterOp::Unload {
            name: adapter.to_owned(),
        },
    )
    .await?;
    handle.adapters().remove(adapter);
    Ok(())
}

fn generator_handle(registry: &Registry, model: &str) -> Result<Arc<ModelHandle>, ProtocolError> {
    let handle = registry.get(model)?;
    if handle.info.family != ModelFamily::Generate {
        return Err(ProtocolError::bad_request(format!(
            "model `{model}` is a `{}` model; adapters are for `generate` models",
            handle.info.family
        )));
    }
    Ok(handle)
}

async fn submit(
    handle: &ModelHandle,
    op: AdapterOp,
) -> Result<Option<(AdapterInfo, u64)>, ProtocolError> {
    let (reply, answer) = oneshot::channel();
    handle
        .submit_job(Job::Adapter(AdapterJob { op, reply }))
        .await?;
    answer.await.map_err(|_| {
        ProtocolError::new(
            ErrorCode::ModelNotFound,
            format!("model `{}` was unloaded", handle.name),
        )
    })?
}

/// Runs `job` on the model thread that owns `generator`.
pub(crate) fn run(generator: &dyn Generator, job: AdapterJob) {
    let result = match job.op {
        AdapterOp::Load { name, dir } => {
            let started = Instant::now();
            generator
                .load_adapter(&name, &dir)
                .map(|info| {
                    let load_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                    tracing::info!(
                        adapter = name,
                        rank = info.rank,
                        load_us,
                        "loaded an adapter"
                    );
                    Some((info, load_us))
                })
                .map_err(ProtocolError::from)
        }
        AdapterOp::Unload { name } => generator
            .unload_adapter(&name)
            .map(|()| None)
            .map_err(ProtocolError::from),
    };
    let _ = job.reply.send(result);
}

/// Refuses `job` on a model that does not generate.
pub(crate) fn refuse(job: AdapterJob, family: ModelFamily) {
    let _ = job.reply.send(Err(ProtocolError::bad_request(format!(
        "models of family `{family}` take no adapters"
    ))));
}
