//! Simulated backend for the Shoal sidecar: no compute, only the time it would take.
//!
//! A [`SimBackend`] answers like a real model (same shapes, same truncation, same token counts
//! when the model's `tokenizer.json` is at hand) but its model thread *sleeps* for the time a
//! [`CostModel`] predicts instead of running a forward pass, and it reports a configured memory
//! footprint instead of allocating weights. Dozens of simulated accelerators therefore fit on
//! one small machine, which is what scale tests of the pull-based scheduler need.
//!
//! The cost model's constants come from a named calibration [`Profile`], measured on real Candle
//! runs by `examples/calibrate.rs` (see `docs/simulated-backend.md`); any of them can be
//! overridden per load through [`SimOverrides`].
//!
//! Each model computes on its own timeline unless the process shares one device among them
//! ([`share_one_device`]), as a fleet that packs several models on one accelerator needs.
//!
//! Only the embedding family is simulated today. The cost model and the token counter know
//! nothing about families, so scoring, extraction and generation become further
//! [`shoal_sidecar_core::Backend`] methods that charge the same [`CostModel`].

mod backend;
mod cost;
mod device;
mod error;
mod pseudo;
mod tokens;

pub use backend::SimBackend;
pub use cost::{CostModel, Profile, SimOverrides, SimParams};
pub use device::{SharedDevice, share_one_device, shared_device};
pub use error::SimError;
pub use pseudo::{pseudo_embedding, pseudo_embedding_of_ids};
pub use tokens::estimate_tokens;
