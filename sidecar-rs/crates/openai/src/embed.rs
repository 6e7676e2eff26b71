//! `POST /v1/embeddings`: one request per batch, rows checked against the batch before they
//! are trusted.

use serde::Deserialize;
use serde_json::json;
use shoal_sidecar_core::text::{INPUT_BYTES_PER_TOKEN, prefix_at_char_boundary};
use shoal_sidecar_core::{BackendError, EmbedBatch, Embeddings, Input};

use crate::OpenAiError;
use crate::api;
use crate::http::Http;

pub(crate) const PATH: &str = "/v1/embeddings";
/// Widest embedding accepted from a remote.
const MAX_DIM: usize = 65_536;
/// JSON bytes allowed per float in an answer (`-0.012345678901234567,` is 22), plus slack for
/// the envelope; a remote sending more is not sending what was asked.
const BYTES_PER_FLOAT: usize = 32;
const ENVELOPE_BYTES: usize = 1024 * 1024;

#[derive(Deserialize)]
struct EmbeddingList {
    data: Vec<Row>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Row {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
}

/// Inputs as sent: cut at the byte guard every backend applies, and whether each was cut.
pub(crate) fn guard_inputs(
    batch: &EmbedBatch,
    max_input_tokens: usize,
) -> Result<(Vec<&str>, Vec<bool>), BackendError> {
    let max_bytes = max_input_tokens.saturating_mul(INPUT_BYTES_PER_TOKEN);
    let mut kept = Vec::with_capacity(batch.inputs.len());
    let mut cut = Vec::with_capacity(batch.inputs.len());
    for (index, input) in batch.inputs.iter().enumerate() {
        // The upstream's vocabulary is its own business: it is sent text, never ids.
        let Input::Text(input) = input else {
            return Err(BackendError::Unsupported(format!(
                "input {index} is token ids; models served by an OpenAI-compatible upstream \
                 take text"
            )));
        };
        let prefix = prefix_at_char_boundary(input, max_bytes);
        if prefix.len() < input.len() && !batch.truncate {
            return Err(BackendError::InputTooLong {
                index,
                max: max_input_tokens,
            });
        }
        cut.push(prefix.len() < input.len());
        kept.push(prefix);
    }
    Ok((kept, cut))
}

/// Embeds `inputs`; `dim` is the width every row must have, or `None` to learn it (the load
/// probe).
pub(crate) fn embed(
    http: &Http,
    model: &str,
    inputs: &[&str],
    dim: Option<usize>,
) -> Result<(usize, Vec<f32>, Option<u64>), OpenAiError> {
    let limit = ENVELOPE_BYTES
        + inputs
            .len()
            .saturating_mul(dim.unwrap_or(MAX_DIM))
            .saturating_mul(BYTES_PER_FLOAT);
    let body = json!({ "model": model, "input": inputs, "encoding_format": "float" });
    let list: EmbeddingList = api::call(http, PATH, Some(&body), limit)?;
    let (dim, values) = rows_in_order(list.data, inputs.len(), dim)?;
    Ok((dim, values, list.usage.and_then(|u| u.prompt_tokens)))
}

fn rows_in_order(
    rows: Vec<Row>,
    count: usize,
    dim: Option<usize>,
) -> Result<(usize, Vec<f32>), OpenAiError> {
    let bad = |reason: String| OpenAiError::malformed(PATH, reason);
    if rows.len() != count {
        return Err(bad(format!("{} embeddings for {count} inputs", rows.len())));
    }
    let dim = match dim {
        Some(dim) => dim,
        None => rows.first().map_or(0, |r| r.embedding.len()),
    };
    if !(1..=MAX_DIM).contains(&dim) {
        return Err(bad(format!(
            "embedding width {dim} is not in 1..={MAX_DIM}"
        )));
    }
    let mut values = vec![0f32; count * dim];
    let mut seen = vec![false; count];
    for (position, row) in rows.into_iter().enumerate() {
        // OpenAI names each row's input; a server that leaves `index` out answers in order.
        let index = row.index.unwrap_or(position);
        if index >= count || seen[index] {
            return Err(bad(format!(
                "row index {index} is out of range or repeated"
            )));
        }
        seen[index] = true;
        if row.embedding.len() != dim {
            return Err(bad(format!(
                "row {index} has {} values, expected {dim}",
                row.embedding.len()
            )));
        }
        if row.embedding.iter().any(|v| !v.is_finite()) {
            return Err(bad(format!("row {index} holds a value that is not finite")));
        }
        values[index * dim..(index + 1) * dim].copy_from_slice(&row.embedding);
    }
    Ok((dim, values))
}

/// The estimate used where a remote reports no usage, as the simulated backend estimates.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    2 + text.len().div_ceil(4) as u64
}

/// Tokens per input: the remote reports only a batch total, so the total is split in
/// proportion to each input's estimate (exact for a batch of one, and always summing to the
/// remote's count); without a total, the estimates themselves.
pub(crate) fn tokens_per_input(inputs: &[&str], total: Option<u64>) -> Vec<u32> {
    let estimates: Vec<u64> = inputs.iter().map(|s| estimate_tokens(s)).collect();
    let Some(total) = total else {
        return estimates
            .iter()
            .map(|&e| u32::try_from(e).unwrap_or(u32::MAX))
            .collect();
    };
    let sum: u128 = estimates.iter().map(|&e| u128::from(e)).sum();
    let mut before = 0u128;
    let mut cumulative = 0u128;
    estimates
        .iter()
        .map(|&e| {
            cumulative += u128::from(e);
            let upto = u128::from(total) * cumulative / sum.max(1);
            let share = upto - before;
            before = upto;
            u32::try_from(share).unwrap_or(u32::MAX)
        })
        .collect()
}

/// Runs `batch` as one remote request.
pub(crate) fn run(
    http: &Http,
    model: &str,
    dim: usize,
    max_input_tokens: usize,
    batch: &EmbedBatch,
) -> Result<Embeddings, BackendError> {
    if batch.inputs.is_empty() {
        return Err(BackendError::EmptyBatch);
    }
    let (inputs, truncated) = guard_inputs(batch, max_input_tokens)?;
    let (dim, values, total) = embed(http, model, &inputs, Some(dim))
        .map_err(|e| BackendError::Inference(format!("remote {}: {e}", http.endpoint)))?;
    Ok(Embeddings {
        dim,
        values,
        tokens: tokens_per_input(&inputs, total),
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index: Option<usize>, embedding: Vec<f32>) -> Row {
        Row { index, embedding }
    }

    #[test]
    fn rows_come_back_in_input_order() {
        let rows = vec![row(Some(1), vec![3.0, 4.0]), row(Some(0), vec![1.0, 2.0])];
        assert_eq!(
            rows_in_order(rows, 2, None).unwrap(),
            (2, vec![1.0, 2.0, 3.0, 4.0])
        );
        let rows = vec![row(None, vec![1.0]), row(None, vec![2.0])];
        assert_eq!(
            rows_in_order(rows, 2, Some(1)).unwrap(),
            (1, vec![1.0, 2.0])
        );
    }

    #[test]
    fn rows_that_do_not_fit_the_batch_are_malformed() {
        let cases: Vec<(Vec<Row>, usize, Option<usize>, &str)> = vec![
            (
                vec![row(None, vec![1.0])],
                2,
                None,
                "1 embeddings for 2 inputs",
            ),
            (vec![row(None, vec![])], 1, None, "width 0"),
            (
                vec![row(Some(0), vec![1.0]), row(Some(0), vec![1.0])],
                2,
                None,
                "repeated",
            ),
            (vec![row(Some(7), vec![1.0])], 1, None, "out of range"),
            (vec![row(None, vec![1.0, 2.0])], 1, Some(3), "expected 3"),
            (vec![row(None, vec![f32::INFINITY])], 1, None, "not finite"),
        ];
        for (rows, count, dim, needle) in cases {
            let message = rows_in_order(rows, count, dim).unwrap_err().to_string();
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
    }

    #[test]
    fn token_shares_sum_to_the_remote_total() {
        let inputs = ["a", "a much longer input than the first", "mid size"];
        let shares = tokens_per_input(&inputs, Some(23));
        assert_eq!(shares.iter().map(|&t| u64::from(t)).sum::<u64>(), 23);
        assert!(shares[1] > shares[0] && shares[1] > shares[2], "{shares:?}");
        assert_eq!(tokens_per_input(&["x"], Some(5)), vec![5]);
        assert_eq!(tokens_per_input(&["abcde"], None), vec![4]);
    }

    #[test]
    fn token_ids_are_refused() {
        let batch = EmbedBatch {
            inputs: vec!["a".into(), Input::Ids(vec![1, 2])],
            truncate: true,
        };
        let err = guard_inputs(&batch, 2).unwrap_err();
        assert!(
            matches!(&err, BackendError::Unsupported(m) if m.starts_with("input 1 is token ids")),
            "{err}"
        );
    }

    #[test]
    fn inputs_are_cut_at_the_byte_guard() {
        let long = "é".repeat(300);
        let batch = EmbedBatch {
            inputs: vec!["short".into(), long.clone().into()],
            truncate: true,
        };
        let (kept, cut) = guard_inputs(&batch, 2).unwrap();
        assert_eq!(kept[0], "short");
        assert_eq!(kept[1].len(), 256);
        assert_eq!(cut, vec![false, true]);
        let batch = EmbedBatch {
            inputs: vec!["short".into(), long.into()],
            truncate: false,
        };
        assert_eq!(
            guard_inputs(&batch, 2).unwrap_err(),
            BackendError::InputTooLong { index: 1, max: 2 }
        );
    }
}
