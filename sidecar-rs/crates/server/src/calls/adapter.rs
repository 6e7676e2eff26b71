//! `load_adapter` and `unload_adapter`: queued on the generator's own thread, which loads or
//! drops the adapter between two decode steps (`crate::adapters`).

use std::path::PathBuf;
use std::sync::Arc;

use shoal_sidecar_core::{AdapterInfo, ModelFamily};
use tokio::sync::oneshot;

use crate::error::{ErrorCode, ProtocolError};
use crate::job::{AdapterJob, AdapterOp, Job};
use crate::registry::Registry;
use crate::runner::ModelHandle;

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
