//! Measures real Candle batches of all-MiniLM-L6-v2 on this machine across a grid of batch
//! sizes × input lengths and fits the simulated backend's three cost constants to them.
//!
//! ```sh
//! cargo run --release -p shoal-sidecar-sim --example calibrate -- \
//!     --model-dir $HOME/.cache/shoal/models/all-minilm-l6-v2 --out calibration.json
//! ```
//!
//! Each grid point is timed `--repeats` times (the grid is swept once per repeat, so slow
//! drift on a shared machine spreads over every point) and its median kept. The fit minimises
//! the squared *relative* error of predicted against measured time, so a 1-row batch counts as
//! much as a 64-row one, and keeps every constant non-negative. The JSON written holds every
//! sample, the medians, the fitted constants and the fit error (mean and worst absolute
//! percentage error).

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use shoal_sidecar_candle::{CandleRuntime, Precision};
use shoal_sidecar_core::{Backend, DeviceSpec, EmbedBatch};
use shoal_sidecar_sim::CostModel;

#[derive(Debug, Parser)]
struct Args {
    /// all-MiniLM-L6-v2 (or any BERT-family) model directory.
    #[clap(long, env = "SHOAL_MINILM_DIR")]
    model_dir: PathBuf,
    /// Where to write the JSON results.
    #[clap(long)]
    out: PathBuf,
    /// Batch sizes to measure.
    #[clap(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
    batch_sizes: Vec<usize>,
    /// Input lengths to measure, in tokens including `[CLS]` and `[SEP]`.
    #[clap(long, value_delimiter = ',', default_value = "8,16,32,64,128,256")]
    lengths: Vec<usize>,
    /// Timed runs per grid point; the median is fitted.
    #[clap(long, default_value_t = 3)]
    repeats: usize,
}

struct Point {
    batch: usize,
    tokens: usize,
    samples_us: Vec<f64>,
}

impl Point {
    fn median_us(&self) -> f64 {
        let mut s = self.samples_us.clone();
        s.sort_by(f64::total_cmp);
        let mid = s.len() / 2;
        if s.len() % 2 == 1 {
            s[mid]
        } else {
            (s[mid - 1] + s[mid]) / 2.0
        }
    }

    /// The three regressors of the cost model: 1, n, n × longest / 1000.
    fn features(&self) -> [f64; 3] {
        let n = self.batch as f64;
        [1.0, n, n * self.tokens as f64 / 1e3]
    }
}

/// Solves the weighted least-squares problem over the terms in `active` (a bit mask of the
/// three), returning coefficients (zero for inactive terms) or `None` when singular.
fn solve(points: &[Point], active: u8) -> Option<[f64; 3]> {
    let idx: Vec<usize> = (0..3).filter(|i| active & (1 << i) != 0).collect();
    let k = idx.len();
    let mut a = vec![vec![0.0; k + 1]; k];
    for p in points {
        let y = p.median_us();
        // Weight 1/y² turns squared error into squared relative error.
        let w = 1.0 / (y * y);
        let x = p.features();
        for (r, &i) in idx.iter().enumerate() {
            for (c, &j) in idx.iter().enumerate() {
                a[r][c] += w * x[i] * x[j];
            }
            a[r][k] += w * x[i] * y;
        }
    }
    // Gauss–Jordan elimination with partial pivoting on the k × k normal equations.
    for col in 0..k {
        let pivot = (col..k).max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut out = [0.0; 3];
    for (r, &i) in idx.iter().enumerate() {
        out[i] = a[r][k] / a[r][r];
    }
    Some(out)
}

fn model_of(c: [f64; 3]) -> CostModel {
    CostModel {
        fixed_us: c[0],
        per_sequence_us: c[1],
        per_padded_token_ns: c[2],
    }
}

fn predicted_us(model: &CostModel, p: &Point) -> f64 {
    model.batch_cost(p.batch, p.tokens).as_secs_f64() * 1e6
}

/// Mean and worst absolute percentage error of `model` over `points`.
fn errors(model: &CostModel, points: &[Point]) -> (f64, f64) {
    let apes: Vec<f64> = points
        .iter()
        .map(|p| ((predicted_us(model, p) - p.median_us()) / p.median_us()).abs() * 100.0)
        .collect();
    let mean = apes.iter().sum::<f64>() / apes.len() as f64;
    (mean, apes.iter().copied().fold(0.0, f64::max))
}

/// The best non-negative fit: every subset of terms is solved and the one with the lowest
/// squared relative error whose coefficients are all non-negative wins.
fn fit(points: &[Point]) -> CostModel {
    let sse = |m: &CostModel| -> f64 {
        points
            .iter()
            .map(|p| ((predicted_us(m, p) - p.median_us()) / p.median_us()).powi(2))
            .sum()
    };
    (1u8..8)
        .filter_map(|active| solve(points, active))
        .filter(|c| c.iter().all(|&v| v >= 0.0))
        .map(model_of)
        .min_by(|a, b| sse(a).total_cmp(&sse(b)))
        .expect("a single-term fit is always non-negative for positive timings")
}

/// `count` copies of `hello`: MiniLM's WordPiece keeps it one token, so the input is exactly
/// `count + 2` tokens long.
fn text_of(tokens: usize) -> String {
    vec!["hello"; tokens.saturating_sub(2)].join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let runtime = CandleRuntime::open(DeviceSpec::Cpu)?;
    let backend = runtime.load(&args.model_dir, Precision::F32)?;
    let mut points: Vec<Point> = args
        .batch_sizes
        .iter()
        .flat_map(|&batch| {
            args.lengths.iter().map(move |&tokens| Point {
                batch,
                tokens,
                samples_us: Vec::new(),
            })
        })
        .collect();
    let started = Instant::now();
    // One untimed sweep warms caches and the allocator.
    for round in 0..=args.repeats {
        for p in &mut points {
            let batch = EmbedBatch {
                inputs: vec![text_of(p.tokens).into(); p.batch],
                truncate: true,
            };
            let t = Instant::now();
            let out = backend.embed(&batch)?;
            let us = t.elapsed().as_secs_f64() * 1e6;
            let got = out.tokens.iter().copied().max().unwrap_or(0) as usize;
            if got != p.tokens.min(backend.max_input_tokens()) {
                return Err(format!("asked for {} tokens, the model saw {got}", p.tokens).into());
            }
            if round > 0 {
                p.samples_us.push(us);
            }
        }
        eprintln!(
            "sweep {round}/{} done after {:.0} s",
            args.repeats,
            started.elapsed().as_secs_f64()
        );
    }

    let model = fit(&points);
    let (mape, max_ape) = errors(&model, &points);
    let json = serde_json::json!({
        "model_dir": args.model_dir,
        "backend": runtime.backend_name(),
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "unix_time": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "repeats": args.repeats,
        "elapsed_s": started.elapsed().as_secs_f64(),
        "memory_bytes": backend.memory_bytes(),
        "fit": {
            "fixed_us": model.fixed_us,
            "per_sequence_us": model.per_sequence_us,
            "per_padded_token_ns": model.per_padded_token_ns,
            "mape_percent": mape,
            "max_ape_percent": max_ape,
        },
        "measurements": points.iter().map(|p| serde_json::json!({
            "batch": p.batch,
            "tokens": p.tokens,
            "padded_tokens": p.batch * p.tokens,
            "samples_us": p.samples_us,
            "median_us": p.median_us(),
            "predicted_us": predicted_us(&model, p),
        })).collect::<Vec<_>>(),
    });
    std::fs::write(&args.out, serde_json::to_string_pretty(&json)? + "\n")?;
    println!(
        "fixed_us {:.1}  per_sequence_us {:.2}  per_padded_token_ns {:.1}  MAPE {mape:.1}%  worst {max_ape:.1}%  ({} points, {:.0} s)",
        model.fixed_us,
        model.per_sequence_us,
        model.per_padded_token_ns,
        points.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
