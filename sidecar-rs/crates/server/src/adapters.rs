//! LoRA adapters on a generator's own thread: loaded and dropped between two decode steps, by
//! the thread that owns the generator, so no sequence sees its model change in the middle of a
//! step. The connection's side of `load_adapter`/`unload_adapter` is `calls::adapter`.

use std::time::Instant;

use shoal_sidecar_core::{Generator, ModelFamily};

use crate::error::ProtocolError;
use crate::job::{AdapterJob, AdapterOp};

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
