//! Which models are resident, and the only place that loads and unloads them.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use shoal_sidecar_candle::CandleRuntime;
use tokio::sync::oneshot;

use crate::error::{ErrorCode, ProtocolError};
use crate::response::{AdapterStats, ModelStats};
use crate::runner::{self, LoadSpec, ModelHandle};

enum Slot {
    /// A load is under way; the name is taken.
    Loading,
    Ready {
        handle: Arc<ModelHandle>,
        exited: oneshot::Receiver<()>,
    },
}

pub(crate) struct Registry {
    slots: Mutex<HashMap<String, Slot>>,
    runtime: CandleRuntime,
    queue: usize,
}

/// Frees a `Loading` slot if the load is abandoned (its request future dropped mid-load).
struct LoadingGuard<'a> {
    registry: &'a Registry,
    name: &'a str,
    armed: bool,
}

impl Drop for LoadingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.registry.slots().remove(self.name);
        }
    }
}

impl Registry {
    pub(crate) fn new(runtime: CandleRuntime, queue: usize) -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            runtime,
            queue,
        }
    }

    pub(crate) fn runtime(&self) -> &CandleRuntime {
        &self.runtime
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        // No code panics while holding the lock, so poisoning cannot leave a broken map.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Loads `spec` as `name` on `threads` new model threads.
    pub(crate) async fn load(
        &self,
        name: &str,
        spec: LoadSpec,
        threads: usize,
    ) -> Result<Arc<ModelHandle>, ProtocolError> {
        {
            let mut slots = self.slots();
            if slots.contains_key(name) {
                return Err(ProtocolError::new(
                    ErrorCode::ModelExists,
                    format!("model `{name}` is already resident or loading"),
                ));
            }
            slots.insert(name.to_owned(), Slot::Loading);
        }
        let mut guard = LoadingGuard {
            registry: self,
            name,
            armed: true,
        };
        let (handle, exited) = runner::start(
            name.to_owned(),
            spec,
            self.runtime.clone(),
            self.queue,
            threads,
        )
        .await?;
        let handle = Arc::new(handle);
        guard.armed = false;
        self.slots().insert(
            name.to_owned(),
            Slot::Ready {
                handle: Arc::clone(&handle),
                exited,
            },
        );
        Ok(handle)
    }

    /// The resident model called `name`.
    pub(crate) fn get(&self, name: &str) -> Result<Arc<ModelHandle>, ProtocolError> {
        match self.slots().get(name) {
            Some(Slot::Ready { handle, .. }) => Ok(Arc::clone(handle)),
            Some(Slot::Loading) => Err(ProtocolError::new(
                ErrorCode::ModelNotFound,
                format!("model `{name}` is still loading"),
            )),
            None => Err(ProtocolError::model_not_found(name)),
        }
    }

    /// Makes `name` unreachable for new requests, then waits until the batches already queued
    /// for it have finished and its thread has freed the weights.
    pub(crate) async fn unload(&self, name: &str) -> Result<(), ProtocolError> {
        let (handle, exited) = {
            let mut slots = self.slots();
            match slots.remove(name) {
                Some(Slot::Ready { handle, exited }) => (handle, exited),
                Some(Slot::Loading) => {
                    slots.insert(name.to_owned(), Slot::Loading);
                    return Err(ProtocolError::new(
                        ErrorCode::ModelNotFound,
                        format!("model `{name}` is still loading"),
                    ));
                }
                None => return Err(ProtocolError::model_not_found(name)),
            }
        };
        drop(handle);
        // The sender half is dropped by the thread on exit, which resolves this either way.
        let _ = exited.await;
        Ok(())
    }

    /// Unloads every resident model; used at shutdown.
    pub(crate) async fn unload_all(&self) {
        let resident: Vec<_> = {
            let mut slots = self.slots();
            let names: Vec<String> = slots
                .iter()
                .filter(|(_, s)| matches!(s, Slot::Ready { .. }))
                .map(|(n, _)| n.clone())
                .collect();
            names
                .into_iter()
                .filter_map(|n| match slots.remove(&n) {
                    Some(Slot::Ready { handle, exited }) => Some((handle, exited)),
                    _ => None,
                })
                .collect()
        };
        for (handle, exited) in resident {
            drop(handle);
            let _ = exited.await;
        }
    }

    /// Counters of every resident model, sorted by name.
    pub(crate) fn stats(&self) -> Vec<ModelStats> {
        let mut stats: Vec<ModelStats> = self
            .slots()
            .values()
            .filter_map(|slot| match slot {
                Slot::Ready { handle, .. } => Some(ModelStats {
                    model: handle.name.clone(),
                    family: handle.info.family.as_str(),
                    memory_bytes: handle.info.memory_bytes,
                    batches: handle.counters.batches.load(Ordering::Relaxed),
                    items: handle.counters.items.load(Ordering::Relaxed),
                    tokens: handle.counters.tokens.load(Ordering::Relaxed),
                    busy_us: handle.counters.busy_us.load(Ordering::Relaxed),
                    sequences: handle.counters.sequences.load(Ordering::Relaxed),
                    generated_tokens: handle.counters.generated_tokens.load(Ordering::Relaxed),
                    active_sequences: handle.counters.active_sequences.load(Ordering::Relaxed),
                    adapters: handle
                        .adapters()
                        .iter()
                        .map(|(name, info)| AdapterStats {
                            adapter: name.clone(),
                            rank: info.rank as u64,
                            memory_bytes: info.memory_bytes,
                        })
                        .collect(),
                }),
                Slot::Loading => None,
            })
            .collect();
        stats.sort_by(|a, b| a.model.cmp(&b.model));
        stats
    }
}
