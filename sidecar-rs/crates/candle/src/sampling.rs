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
///
/// Tokens are considered from the likeliest down (ties by lower id), but only as far as the
/// draw needs: a vocabulary of 50k entries is never sorted whole, because top-p, min-p and the
/// draw itself almost always stop within the first few dozen tokens.
pub(crate) fn sample(logits: &[f32], params: &Sampling, rng: &mut Rng) -> u32 {
    if params.temperature <= 0.0 {
        return argmax(logits);
    }
    let candidates: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .map(|(i, &l)| (i as u32, l))
        .collect();
    if candidates.is_empty() {
        return argmax(logits);
    }
    let mut ranked = Ranked::new(candidates);
    if params.top_k > 0 {
        ranked.truncate(params.top_k);
    }
    let temperature = f64::from(params.temperature);
    let max = f64::from(ranked.get(0).1);
    let weight = |logit: f32| ((f64::from(logit) - max) / temperature).exp();
    let total: f64 = ranked.all().iter().map(|&(_, l)| weight(l)).sum();
    // The kept tokens are the longest prefix within both cuts: top-p keeps up to the first
    // whose cumulative probability reaches it, min-p those at least `min_p` times the
    // likeliest (the likeliest always stays).
    let floor = total.recip() * f64::from(params.min_p);
    let mut kept = Vec::new();
    let mut cumulative = 0.0;
    while kept.len() < ranked.len() {
        let (id, logit) = ranked.get(kept.len());
        let p = weight(logit) / total;
        if !kept.is_empty() && p < floor {
            break;
        }
        kept.push((id, p));
        cumulative += p;
        if params.top_p < 1.0 && cumulative >= f64::from(params.top_p) {
            break;
        }
        if params.top_p >= 1.0 && params.min_p <= 0.0 {
            // Nothing is cut: draw now, ranking further only while the draw needs it.
            return draw(&mut ranked, kept, weight, total, rng);
        }
    }
    let kept_total: f64 = kept.iter().map(|&(_, p)| p).sum();
    let mut target = rng.next_f64() * kept_total;
    for &(id, p) in &kept {
        if target < p {
            return id;
        }
        target -= p;
    }
    kept[kept.len() - 1].0
}

/// Draws from every candidate in rank order, extending `kept` (the ranked prefix with its
/// probabilities) only as far as the draw reaches.
fn draw(
    ranked: &mut Ranked,
    mut kept: Vec<(u32, f64)>,
    weight: impl Fn(f32) -> f64,
    total: f64,
    rng: &mut Rng,
) -> u32 {
    let mut target = rng.next_f64();
    let mut index = 0;
    loop {
        if index == kept.len() {
            if kept.len() == ranked.len() {
                return kept[kept.len() - 1].0;
            }
            let (id, logit) = ranked.get(index);
            kept.push((id, weight(logit) / total));
        }
        let (id, p) = kept[index];
        if target < p {
            return id;
        }
        target -= p;
        index += 1;
    }
}

/// Candidates ranked by logit (descending, ties by lower id) on demand: the first `sorted` are
/// in rank order, the rest unordered but each ranked below them.
struct Ranked {
    candidates: Vec<(u32, f32)>,
    sorted: usize,
}

impl Ranked {
    /// How many more are ranked each time the ranked prefix runs out.
    const CHUNK: usize = 64;

    fn new(candidates: Vec<(u32, f32)>) -> Self {
        Self {
            candidates,
            sorted: 0,
        }
    }

    fn by_logit(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
        b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
    }

    fn len(&self) -> usize {
        self.candidates.len()
    }

    fn all(&self) -> &[(u32, f32)] {
        &self.candidates
    }

    /// Keeps only the `k` best.
    fn truncate(&mut self, k: usize) {
        if k < self.candidates.len() {
            self.candidates
                .select_nth_unstable_by(k - 1, Self::by_logit);
            self.candidates.truncate(k);
        }
    }

    /// The candidate of rank `index` (0 is the likeliest).
    fn get(&mut self, index: usize) -> (u32, f32) {
        if index >= self.sorted {
            let end = (index + 1)
                .max(self.sorted * 2)
                .max(Self::CHUNK)
                .min(self.len());
            let rest = &mut self.candidates[self.sorted..];
            let wanted = end - self.sorted;
            if wanted < rest.len() {
                rest.select_nth_unstable_by(wanted - 1, Self::by_logit);
            }
            rest[..wanted].sort_unstable_by(Self::by_logit);
            self.sorted = end;
        }
        self.candidates[index]
    }
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

    /// What `sample` computes, written the plain way: every candidate sorted, then cut.
    fn sample_by_full_sort(logits: &[f32], params: &Sampling, rng: &mut Rng) -> u32 {
        let mut candidates: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .map(|(i, &l)| (i as u32, l))
            .collect();
        candidates.sort_by(Ranked::by_logit);
        if params.top_k > 0 {
            candidates.truncate(params.top_k);
        }
        let max = f64::from(candidates[0].1);
        let weights: Vec<f64> = candidates
            .iter()
            .map(|&(_, l)| ((f64::from(l) - max) / f64::from(params.temperature)).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut keep = 0;
        let mut cumulative = 0.0;
        for w in &weights {
            if keep > 0 && w / total < f64::from(params.min_p) / total {
                break;
            }
            keep += 1;
            cumulative += w / total;
            if params.top_p < 1.0 && cumulative >= f64::from(params.top_p) {
                break;
            }
        }
        let kept_total: f64 = weights[..keep].iter().map(|w| w / total).sum();
        let mut target = rng.next_f64()
            * if keep == weights.len() && params.top_p >= 1.0 && params.min_p <= 0.0 {
                1.0
            } else {
                kept_total
            };
        for i in 0..keep {
            let p = weights[i] / total;
            if target < p {
                return candidates[i].0;
            }
            target -= p;
        }
        candidates[keep - 1].0
    }

    #[test]
    fn ranking_only_what_the_draw_needs_picks_what_a_full_sort_picks() {
        // A vocabulary-sized spread of logits, many of them tied, so ranks and ties matter.
        let mut state = Rng::new(11);
        let logits: Vec<f32> = (0..50_000)
            .map(|_| ((state.next_f64() * 24.0).floor() / 2.0) as f32)
            .collect();
        let settings = [
            params(1.0, 1.0, 0),
            params(0.7, 1.0, 0),
            params(2.5, 1.0, 0),
            params(1.0, 0.9, 0),
            params(1.0, 0.999, 40),
            params(1.0, 1.0, 5),
            Sampling {
                min_p: 0.05,
                ..params(1.0, 1.0, 0)
            },
            Sampling {
                min_p: 0.01,
                ..params(1.3, 0.95, 100)
            },
        ];
        for setting in &settings {
            let (mut lazy, mut full) = (Rng::new(42), Rng::new(42));
            for draw in 0..300 {
                assert_eq!(
                    sample(&logits, setting, &mut lazy),
                    sample_by_full_sort(&logits, setting, &mut full),
                    "draw {draw} with {setting:?}"
                );
            }
        }
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
