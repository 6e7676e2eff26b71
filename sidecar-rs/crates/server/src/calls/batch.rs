//! A batch call (`embed`, `score`, `classify`, `extract`): one job, one answer.

use std::time::Instant;

use opentelemetry::Context;
use tokio::sync::oneshot;

use crate::error::{ErrorCode, ProtocolError};
use crate::job::{BatchDone, BatchJob};
use crate::registry::Registry;
use crate::work::Work;

/// Queues `work` on `model`'s thread and waits for its answer. Also returns the model's
/// labels, which `classify` answers carry.
pub(crate) async fn run(
    registry: &Registry,
    model: &str,
    work: Work,
    parents: Vec<Context>,
) -> Result<(BatchDone, Vec<String>), ProtocolError> {
    let handle = registry.get(model)?;
    let (reply, done) = oneshot::channel();
    handle
        .submit(BatchJob {
            work,
            parents,
            enqueued: Instant::now(),
            reply,
        })
        .await?;
    let labels = handle.info.labels.clone();
    // Holding the handle while waiting would make an unload wait for this response even
    // though the job is already queued, which is all unload promises to finish.
    drop(handle);
    let done = done.await.map_err(|_| {
        ProtocolError::new(
            ErrorCode::Internal,
            format!("model `{model}` stopped before answering"),
        )
    })??;
    Ok((done, labels))
}
