//! Locating the real all-MiniLM-L6-v2 weights and reference outputs shared by the tests.
// Each test binary compiles this module and uses a different subset of it.
#![allow(dead_code)]

#[path = "../../../../test-support/minilm.rs"]
mod minilm;
pub use minilm::minilm_dir;
#[path = "../../../../test-support/fixtures.rs"]
mod fixtures;

use std::path::PathBuf;

use shoal_sidecar_candle::{CandleBackend, CandleRuntime, Precision};
use shoal_sidecar_core::DeviceSpec;

/// The reference outputs made by `tools/reference/make_minilm_fixture.py`.
pub fn fixture_path() -> PathBuf {
    fixtures::reference_fixtures().join("all-minilm-l6-v2.json")
}

pub fn load_minilm() -> CandleBackend {
    CandleRuntime::open(DeviceSpec::Cpu)
        .unwrap()
        .load(&minilm_dir(), Precision::F32)
        .expect("all-MiniLM-L6-v2 loads")
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "vectors of different width");
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

pub fn norm(a: &[f32]) -> f64 {
    a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt()
}
