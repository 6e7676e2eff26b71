//! The cost model, the calibration profiles that fill it, and per-load overrides.

use std::time::Duration;

use crate::SimError;

/// Largest value any cost term accepts (µs, µs or ns): enough for any accelerator we would
/// simulate, small enough that a batch's predicted time can never overflow a [`Duration`].
const MAX_COST_TERM: f64 = 1e9;

/// Widest simulated embedding; a batch of 1,024 rows of it is 64 MiB of f32.
const MAX_DIM: u64 = 16_384;

/// Longest simulated input limit, in tokens.
const MAX_INPUT_TOKENS: u64 = 1 << 20;

/// Predicted wall time of one batch:
/// `fixed_us + per_sequence_us × n + per_padded_token_ns × n × longest_tokens / 1000` µs,
/// where `n` is the number of inputs and `longest_tokens` the longest input after truncation
/// (every row is padded to it, so `n × longest_tokens` is the padded token count).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// Per-batch overhead: launching the pass, pooling, copying results.
    pub fixed_us: f64,
    /// Per-input cost independent of length: tokenising, per-row bookkeeping.
    pub per_sequence_us: f64,
    /// Cost of one padded token through the whole model, in nanoseconds.
    pub per_padded_token_ns: f64,
}

impl CostModel {
    /// The predicted time of a batch of `sequences` inputs padded to `longest_tokens`.
    pub fn batch_cost(&self, sequences: usize, longest_tokens: usize) -> Duration {
        let n = sequences as f64;
        let padded = n * longest_tokens as f64;
        let us = self.fixed_us + self.per_sequence_us * n + self.per_padded_token_ns * padded / 1e3;
        Duration::from_secs_f64(us.max(0.0) / 1e6)
    }
}

/// Everything a simulated model is: its shape, its footprint and its speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimParams {
    /// Width of one embedding.
    pub dim: usize,
    /// Longest input, in tokens including special tokens.
    pub max_input_tokens: usize,
    /// Reported device memory; nothing is allocated.
    pub memory_bytes: u64,
    /// How long batches take.
    pub cost: CostModel,
    /// How long a load takes (weights copied to the device), spent on the model's thread.
    pub load_ms: u64,
}

/// A named set of defaults measured on real hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// all-MiniLM-L6-v2 under Candle on the 2-core CI machines (f32, CPU).
    #[default]
    MiniLmL6Cpu,
}

impl Profile {
    /// Every profile, for error messages and docs.
    pub const ALL: [Profile; 1] = [Profile::MiniLmL6Cpu];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::MiniLmL6Cpu => "minilm-l6-cpu",
        }
    }

    /// The profile called `name`.
    pub fn from_name(name: &str) -> Result<Self, SimError> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| SimError::UnknownProfile {
                name: name.to_owned(),
                known: Self::ALL.map(Profile::name).join(", "),
            })
    }

    /// The profile's parameters.
    pub fn params(self) -> SimParams {
        match self {
            // Shape and footprint are all-MiniLM-L6-v2's as Candle loads it (384 wide, 256
            // tokens, 90,261,504 bytes of f32 weights). The cost terms were fitted on 2026-12-02
            // (2 shared x86-64 cores) by `cargo run --release -p shoal-sidecar-sim --example
            // calibrate -- --model-dir $HOME/.cache/shoal/models/all-minilm-l6-v2 --out
            // crates/sim/calibration/minilm-l6-cpu.json`: batch sizes 1..64 × 8..256 tokens,
            // median of 3, MAPE 15.4%, worst 45% (256-token batches, where attention's
            // quadratic term outgrows a per-token price); see docs/simulated-backend.md.
            Profile::MiniLmL6Cpu => SimParams {
                dim: 384,
                max_input_tokens: 256,
                memory_bytes: 90_261_504,
                // Loads measured by the worker take ~1 s for MiniLM, most of it the worker's
                // own fetch and checks; the simulated sidecar adds none unless asked.
                load_ms: 0,
                cost: CostModel {
                    fixed_us: 8_444.5,
                    // The non-negative fit drove this term to zero: on CPU, per-row work is
                    // lost in the per-token cost.
                    per_sequence_us: 0.0,
                    per_padded_token_ns: 234_357.0,
                },
            },
        }
    }
}

/// Parameters as a `load` request gives them: a profile and any fields to override in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOverrides {
    /// Calibration profile supplying the defaults; [`Profile::default`] when absent.
    pub profile: Option<String>,
    pub dim: Option<u64>,
    pub max_input_tokens: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub fixed_us: Option<f64>,
    pub per_sequence_us: Option<f64>,
    pub per_padded_token_ns: Option<f64>,
    pub load_ms: Option<u64>,
}

fn in_range(field: &'static str, value: u64, min: u64, max: u64) -> Result<usize, SimError> {
    if (min..=max).contains(&value) {
        usize::try_from(value).map_err(|_| SimError::Invalid {
            field,
            reason: format!("{value} does not fit this platform"),
        })
    } else {
        Err(SimError::Invalid {
            field,
            reason: format!("must be in {min}..={max}, got {value}"),
        })
    }
}

fn cost_term(field: &'static str, value: f64) -> Result<f64, SimError> {
    if value.is_finite() && (0.0..=MAX_COST_TERM).contains(&value) {
        Ok(value)
    } else {
        Err(SimError::Invalid {
            field,
            reason: format!("must be a finite number in 0..={MAX_COST_TERM}, got {value}"),
        })
    }
}

/// Ten minutes: longer than any real load, short enough that a typo cannot hang a test for ever.
const MAX_LOAD_MS: u64 = 600_000;

impl SimOverrides {
    /// The profile's parameters with every given field replaced, each checked for range.
    pub fn resolve(&self) -> Result<SimParams, SimError> {
        let profile = match &self.profile {
            Some(name) => Profile::from_name(name)?,
            None => Profile::default(),
        };
        let base = profile.params();
        Ok(SimParams {
            dim: match self.dim {
                Some(v) => in_range("dim", v, 1, MAX_DIM)?,
                None => base.dim,
            },
            // Two tokens at least: the special tokens every input carries.
            max_input_tokens: match self.max_input_tokens {
                Some(v) => in_range("max_input_tokens", v, 2, MAX_INPUT_TOKENS)?,
                None => base.max_input_tokens,
            },
            memory_bytes: self.memory_bytes.unwrap_or(base.memory_bytes),
            load_ms: match self.load_ms {
                Some(v) => in_range("load_ms", v, 0, MAX_LOAD_MS)? as u64,
                None => base.load_ms,
            },
            cost: CostModel {
                fixed_us: match self.fixed_us {
                    Some(v) => cost_term("fixed_us", v)?,
                    None => base.cost.fixed_us,
                },
                per_sequence_us: match self.per_sequence_us {
                    Some(v) => cost_term("per_sequence_us", v)?,
                    None => base.cost.per_sequence_us,
                },
                per_padded_token_ns: match self.per_padded_token_ns {
                    Some(v) => cost_term("per_padded_token_ns", v)?,
                    None => base.cost.per_padded_token_ns,
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_cost_follows_the_formula() {
        let cost = CostModel {
            fixed_us: 100.0,
            per_sequence_us: 10.0,
            per_padded_token_ns: 500.0,
        };
        // 100 + 10×4 + 500×4×32/1000 = 204 µs.
        assert_eq!(cost.batch_cost(4, 32), Duration::from_micros(204));
    }

    #[test]
    fn overrides_replace_profile_fields() {
        let base = Profile::MiniLmL6Cpu.params();
        assert_eq!(SimOverrides::default().resolve().unwrap(), base);
        let got = SimOverrides {
            profile: Some("minilm-l6-cpu".into()),
            dim: Some(8),
            fixed_us: Some(1.5),
            memory_bytes: Some(0),
            ..SimOverrides::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(got.dim, 8);
        assert_eq!(got.memory_bytes, 0);
        assert_eq!(got.cost.fixed_us, 1.5);
        assert_eq!(got.max_input_tokens, base.max_input_tokens);
        assert_eq!(got.cost.per_padded_token_ns, base.cost.per_padded_token_ns);
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        let cases = [
            (
                SimOverrides {
                    profile: Some("tpu-v9".into()),
                    ..SimOverrides::default()
                },
                "unknown calibration profile `tpu-v9`",
            ),
            (
                SimOverrides {
                    dim: Some(0),
                    ..SimOverrides::default()
                },
                "`sim.dim` must be in 1..=16384",
            ),
            (
                SimOverrides {
                    max_input_tokens: Some(1),
                    ..SimOverrides::default()
                },
                "`sim.max_input_tokens`",
            ),
            (
                SimOverrides {
                    fixed_us: Some(-1.0),
                    ..SimOverrides::default()
                },
                "`sim.fixed_us` must be a finite number",
            ),
            (
                SimOverrides {
                    per_sequence_us: Some(f64::NAN),
                    ..SimOverrides::default()
                },
                "`sim.per_sequence_us`",
            ),
            (
                SimOverrides {
                    per_padded_token_ns: Some(f64::INFINITY),
                    ..SimOverrides::default()
                },
                "`sim.per_padded_token_ns`",
            ),
        ];
        for (overrides, needle) in cases {
            let error = overrides.resolve().expect_err(needle);
            assert!(error.is_bad_parameters());
            assert!(error.to_string().contains(needle), "{error} lacks {needle}");
        }
    }
}
