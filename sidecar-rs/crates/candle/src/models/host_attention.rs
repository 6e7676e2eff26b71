//! Attention of decoding sequences on the CPU, over plain slices. A decode step reads one new
//! token per sequence; through tensor operations each sequence's attention is a dozen small
//! ops per layer (split, rotate, round, concatenate the cache, repeat heads, two matmuls, a
//! softmax), and with many sequences those ops, not the arithmetic, took most of a step. Here
//! a layer's decoding sequences are done in one pass, spread over the cores, with caches that
//! grow in place. The arithmetic is the tensor path's, in the same order per element where
//! it matters for agreement (rotation, scaling, softmax, f16 rounding); only the summation
//! order of the two dot products differs, by float rounding.

use half::f16;
use rayon::prelude::*;

/// The head layout of one layer's attention and how it rounds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Heads {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Round queries, keys, values and attention weights through f16, as llama.cpp's default
    /// KV cache does.
    pub f16: bool,
}

impl Heads {
    fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

/// One sequence's keys and values for one layer: `len × kv_heads × head_dim` each, row by row.
#[derive(Debug, Default, Clone)]
pub(super) struct HostKv {
    pub keys: Vec<f32>,
    pub values: Vec<f32>,
}

/// Rotary position embedding of one token's heads at `position`, in place: pairs of adjacent
/// elements (`interleaved`, llama.cpp's layout) or the two halves of each head (transformers'),
/// with `cos`/`sin` the tables' rows for that position (`head_dim / 2` each).
pub(super) fn rotate(
    row: &mut [f32],
    head_dim: usize,
    interleaved: bool,
    cos: &[f32],
    sin: &[f32],
) {
    let half = head_dim / 2;
    for head in row.chunks_exact_mut(head_dim) {
        for i in 0..half {
            let (i1, i2) = if interleaved {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + half)
            };
            let (x1, x2) = (head[i1], head[i2]);
            head[i1] = x1 * cos[i] - x2 * sin[i];
            head[i2] = x1 * sin[i] + x2 * cos[i];
        }
    }
}

/// Rounds every element to the nearest f16 and back.
pub(super) fn round_f16(xs: &mut [f32]) {
    for x in xs {
        *x = f16::from_f32(*x).to_f32();
    }
}

/// One decoding sequence of a step: its query row (rotated, `heads × head_dim`), the cache it
/// attends over (the new token's keys and values already appended) and where its output goes.
pub(super) struct Decode<'a> {
    pub query: &'a [f32],
    pub kv: &'a HostKv,
    pub out: &'a mut [f32],
}

/// Causal attention of each sequence's one query over its whole cache, the sequences in
/// parallel.
pub(super) fn attend_decoding(layout: Heads, sequences: Vec<Decode<'_>>) {
    sequences
        .into_par_iter()
        .for_each_init(Vec::new, |scores, d| {
            attend_one(layout, d.query, d.kv, d.out, scores);
        });
}

fn attend_one(layout: Heads, query: &[f32], kv: &HostKv, out: &mut [f32], scores: &mut Vec<f32>) {
    let hd = layout.head_dim;
    let width = layout.kv_width();
    let len = kv.keys.len() / width;
    let group = layout.heads / layout.kv_heads;
    let scale = (1.0 / (hd as f64).sqrt()) as f32;
    let mut q = vec![0f32; hd];
    for head in 0..layout.heads {
        let kv_head = head / group;
        q.copy_from_slice(&query[head * hd..(head + 1) * hd]);
        if layout.f16 {
            round_f16(&mut q);
        }
        scores.clear();
        scores.extend((0..len).map(|j| {
            let k = &kv.keys[j * width + kv_head * hd..][..hd];
            dot(&q, k) * scale
        }));
        softmax(scores);
        if layout.f16 {
            round_f16(scores);
        }
        let o = &mut out[head * hd..(head + 1) * hd];
        o.fill(0.0);
        for (j, &w) in scores.iter().enumerate() {
            let v = &kv.values[j * width + kv_head * hd..][..hd];
            for (o, v) in o.iter_mut().zip(v) {
                *o += w * v;
            }
        }
    }
}

/// Eight running sums, so the compiler can keep them in one vector register.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// In place, as candle's `softmax_last_dim` computes it: exp of each less the maximum, over
/// their sum.
fn softmax(xs: &mut [f32]) {
    let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for x in xs.iter_mut() {
        *x = (*x - max).exp();
    }
    let sum: f32 = xs.iter().sum();
    for x in xs.iter_mut() {
        *x /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_query_over_its_cache_is_the_softmax_weighted_sum_of_values() {
        // Two query heads share one key/value head (grouped-query attention).
        let layout = Heads {
            heads: 2,
            kv_heads: 1,
            head_dim: 2,
            f16: false,
        };
        let kv = HostKv {
            keys: vec![1.0, 0.0, 0.0, 1.0],
            values: vec![10.0, 0.0, 0.0, 20.0],
        };
        let query = [2.0f32.sqrt() * 3f32.ln(), 0.0, 0.0, 0.0];
        let mut out = [0f32; 4];
        attend_decoding(
            layout,
            vec![Decode {
                query: &query,
                kv: &kv,
                out: &mut out,
            }],
        );
        // Head 0: scores ln 3 and 0 (after the 1/√2 scale), weights 3/4 and 1/4.
        assert!(
            (out[0] - 7.5).abs() < 1e-5 && (out[1] - 5.0).abs() < 1e-5,
            "{out:?}"
        );
        // Head 1: a zero query weighs both keys equally.
        assert!(
            (out[2] - 5.0).abs() < 1e-5 && (out[3] - 10.0).abs() < 1e-5,
            "{out:?}"
        );
    }

    #[test]
    fn rotation_turns_pairs_by_the_angle_in_either_layout() {
        let (cos, sin) = ([0.0f32, 1.0], [1.0f32, 0.0]);
        let mut interleaved = [1.0, 2.0, 3.0, 4.0];
        rotate(&mut interleaved, 4, true, &cos, &sin);
        assert_eq!(interleaved, [-2.0, 1.0, 3.0, 4.0]);
        let mut halves = [1.0, 2.0, 3.0, 4.0];
        rotate(&mut halves, 4, false, &cos, &sin);
        assert_eq!(halves, [-3.0, 2.0, 1.0, 4.0]);
    }
}
