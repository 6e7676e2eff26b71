//! Deterministic stand-ins for embeddings.

/// FNV-1a, 64-bit: tiny, stable across platforms and Rust releases (unlike `DefaultHasher`),
/// which keeps pseudo-embeddings identical between sidecar versions.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A unit-norm vector of `dim` values determined by `text` alone: SplitMix64 seeded with the
/// FNV-1a hash of the UTF-8 bytes, each value uniform in [-1, 1), then L2-normalised. Equal texts
/// get equal vectors and different texts almost surely nearly orthogonal ones, so a caller can
/// check that every answer was routed back to the input it belongs to.
pub fn pseudo_embedding(text: &str, dim: usize) -> Vec<f32> {
    seeded_unit_vector(fnv1a(text.as_bytes()), dim)
}

/// [`pseudo_embedding`] for a token-id input: seeded with the FNV-1a hash of its ids as
/// little-endian `u32`s.
pub fn pseudo_embedding_of_ids(ids: &[u32], dim: usize) -> Vec<f32> {
    let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
    seeded_unit_vector(fnv1a(&bytes), dim)
}

fn seeded_unit_vector(seed: u64, dim: usize) -> Vec<f32> {
    let mut state = seed;
    let mut values: Vec<f64> = (0..dim)
        .map(|_| {
            // The top 53 bits as a double in [0, 1), mapped to [-1, 1).
            let unit = (splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64;
            unit * 2.0 - 1.0
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f64>().sqrt();
    if norm > 0.0 {
        values.iter_mut().for_each(|v| *v /= norm);
    }
    values.into_iter().map(|v| v as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn vectors_are_deterministic_unit_norm_and_distinct() {
        let a = pseudo_embedding("hello", 384);
        assert_eq!(a, pseudo_embedding("hello", 384));
        assert_eq!(a.len(), 384);
        let norm: f64 = a.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        let b = pseudo_embedding("hello!", 384);
        let dot: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
        assert!(
            dot.abs() < 0.3,
            "unrelated texts should be nearly orthogonal: {dot}"
        );
        assert_eq!(pseudo_embedding("", 1).len(), 1);
    }
}
