//! Choosing the next token from logits: greedy, or temperature + top-k + top-p + min-p sampling
//! from a per-sequence random stream, after an optional repetition penalty. The generator is our own (xoshiro256++ seeded by SplitMix64,
//! <https://prng.di.unimi.it/>) so that a seed means the same tokens in every build, whatever
//! version of a random-number crate is linked.

use std::collections::HashSet;

use shoal_sidecar_core::Sampling;

/// xoshiro256++: a small, fast generator with a 2^256 period; plenty for picking tokens.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Self {
            s: [next(), next(), next(), next()],
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// transformers' repetition penalty, in place: the logit of every token in `seen` is divided by
/// `penalty` when positive and multiplied by it when negative, so a penalty above 1 always
/// makes a repeat less likely.
pub(crate) fn penalize_repeats(logits: &mut [f32], seen: &HashSet<u32>, penalty: f32) {
    for &token in seen {
        if let Some(logit) = logits.get_mut(token as usize) {
            *logit = if *logit > 0.0 {
                *logit / penalty
            } else {
                *logit * penalty
            };
        }
    }
}

/// Picks one token id from `logits` (one per vocabulary entry).
pub(crate) fn sample(logits: &[f32], params: &Sampling, rng: &mut Rng) -> u32 {
    if params.temperature <= 0.0 {
        return argmax(logits);
    }
    let mut candidates: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .map(|(i, &l)| (i as u32, l))
        .collect();
    if candidates.is_empty() {
        return argmax(logits);
    }
    let by_logit = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if params.top_k > 0 && params.top_k < candidates.len() {
        candidates.select_nth_unstable_by(params.top_k - 1, by_logit);
        candidates.truncate(params.top_k);
    }
    candidates.sort_unstable_by(by_logit);
    let temperature = f64::from(params.temperature);
    let max = f64::from(candidates[0].1);
    let mut probs: Vec<f64> = candidates
        .iter()
        .map(|&(_, l)| ((f64::from(l) - max) / temperature).exp())
        .collect();
    let total: f64 = probs.iter().sum();
    probs.iter_mut().for_each(|p| *p /= total);
    if params.top_p < 1.0 {
        let mut cumulative = 0.0;
        let mut keep = probs.len();
        for (i, p) in probs.iter().enumerate() {
            cumulative += p;
            if cumulative >= f64::from(params.top_p) {
                keep = i + 1;
                break;
            }
        }
        probs.truncate(keep);
        candidates.truncate(keep);
    }
    if params.min_p > 0.0 {
        // Relative to the likeliest token, so the cut is the same before or after top-p.
        let floor = probs[0] * f64::from(params.min_p);
        let keep = probs.iter().take_while(|&&p| p >= floor).count().max(1);
        probs.truncate(keep);
        candidates.truncate(keep);
    }
    let total: f64 = probs.iter().sum();
    let mut target = rng.next_f64() * total;
    for (i, p) in probs.iter().enumerate() {
        if target < *p {
            return candidates[i].0;
        }
        target -= p;
    }
    candidates[candidates.len() - 1].0
}

/// The first index of the largest logit, as llama.cpp's greedy sampler picks it.
pub(crate) fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(temperature: f32, top_p: f32, top_k: usize) -> Sampling {
        Sampling {
            temperature,
            top_p,
            top_k,
            ..Sampling::default()
        }
    }

    #[test]
    fn greedy_takes_the_first_maximum() {
        let mut rng = Rng::new(1);
        assert_eq!(
            sample(&[0.0, 3.0, 3.0, 1.0], &params(0.0, 1.0, 0), &mut rng),
            1
        );
    }

    #[test]
    fn top_k_one_and_tiny_top_p_are_greedy() {
        let logits = [0.5, 2.0, 1.9, -1.0];
        for seed in 0..50 {
            let mut rng = Rng::new(seed);
            assert_eq!(sample(&logits, &params(1.5, 1.0, 1), &mut rng), 1);
            assert_eq!(sample(&logits, &params(1.5, 1e-6, 0), &mut rng), 1);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_choices_and_frequencies_follow_the_softmax() {
        let logits = [0.0f32, (3f32).ln(), f32::NEG_INFINITY];
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..4000)
                .map(|_| sample(&logits, &params(1.0, 1.0, 0), &mut rng))
                .collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert_ne!(a, draw(8));
        assert!(!a.contains(&2), "a -inf logit is never drawn");
        let ones = a.iter().filter(|&&t| t == 1).count() as f64 / a.len() as f64;
        assert!((ones - 0.75).abs() < 0.03, "p(1) = {ones}, expected 0.75");
    }

    #[test]
    fn top_p_keeps_the_smallest_set_reaching_it() {
        // Probabilities 0.5, 0.3, 0.2: top_p 0.7 keeps the first two only.
        let logits = [0.5f32.ln(), 0.3f32.ln(), 0.2f32.ln()];
        let mut rng = Rng::new(3);
        let picks: Vec<u32> = (0..2000)
            .map(|_| sample(&logits, &params(1.0, 0.7, 0), &mut rng))
            .collect();
        assert!(!picks.contains(&2));
        assert!(picks.contains(&1));
    }

    #[test]
    fn min_p_drops_tokens_below_its_share_of_the_likeliest() {
        // Probabilities 0.5, 0.3, 0.15, 0.05: min_p 0.2 keeps those at 0.1 or more.
        let logits = [0.5f32.ln(), 0.3f32.ln(), 0.15f32.ln(), 0.05f32.ln()];
        let with_min_p = Sampling {
            min_p: 0.2,
            ..params(1.0, 1.0, 0)
        };
        let mut rng = Rng::new(5);
        let picks: Vec<u32> = (0..4000)
            .map(|_| sample(&logits, &with_min_p, &mut rng))
            .collect();
        assert!(!picks.contains(&3));
        assert!(picks.contains(&2));
        let ones = picks.iter().filter(|&&t| t == 1).count() as f64 / picks.len() as f64;
        assert!(
            (ones - 0.3 / 0.95).abs() < 0.03,
            "kept tokens are renormalised"
        );
    }

    #[test]
    fn the_repetition_penalty_lowers_seen_tokens_whatever_their_sign() {
        let mut logits = [2.0f32, -1.0, 3.0, -0.5];
        let seen: HashSet<u32> = [0, 1, 7].into_iter().collect();
        penalize_repeats(&mut logits, &seen, 2.0);
        assert_eq!(logits, [1.0, -2.0, 3.0, -0.5]);
        // Greedy then takes what was not seen once the penalty makes it likelier.
        let mut logits = [3.0f32, 2.0];
        penalize_repeats(&mut logits, &[0].into_iter().collect(), 2.0);
        assert_eq!(argmax(&logits), 1);
    }
}
