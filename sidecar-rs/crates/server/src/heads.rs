//! Answers `score`, `classify` and `extract`: the task-head batches, run on the model's
//! thread like `embed`, written as the protocol's responses.

use opentelemetry::Context;
use serde::Serialize;
use shoal_sidecar_core::{EmbedBatch, Input, PairBatch};

use crate::calls::batch;
use crate::error::{ErrorCode, ProtocolError};
use crate::registry::Registry;
use crate::request::HeadInputs;
use crate::response;
use crate::work::{Answer, Work};

#[derive(Serialize)]
struct Scored<'a> {
    count: u64,
    scores: &'a serde_bytes::Bytes,
    tokens: &'a [u32],
    truncated: &'a [bool],
    queue_us: u64,
    compute_us: u64,
}

#[derive(Serialize)]
struct Classified<'a> {
    count: u64,
    labels: &'a [String],
    probabilities: &'a serde_bytes::Bytes,
    tokens: &'a [u32],
    truncated: &'a [bool],
    queue_us: u64,
    compute_us: u64,
}

#[derive(Serialize)]
struct WireEntity<'a> {
    label: &'a str,
    text: &'a str,
    start: u64,
    end: u64,
    score: f32,
}

#[derive(Serialize)]
struct Extracted<'a> {
    count: u64,
    entities: Vec<Vec<WireEntity<'a>>>,
    tokens: &'a [u32],
    truncated: &'a [bool],
    queue_us: u64,
    compute_us: u64,
}

fn owned(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs one task-head request on `model` and writes its response frame.
pub(crate) async fn answer(
    registry: &Registry,
    id: u64,
    model: &str,
    inputs: HeadInputs<'_>,
    truncate: bool,
    parents: Vec<Context>,
) -> Result<Vec<u8>, ProtocolError> {
    let work = match &inputs {
        HeadInputs::Pairs { queries, documents } => Work::Score(PairBatch {
            queries: owned(queries),
            documents: owned(documents),
            truncate,
        }),
        HeadInputs::Classify(texts) => Work::Classify(EmbedBatch {
            inputs: texts.iter().map(|&text| Input::from(text)).collect(),
            truncate,
        }),
        HeadInputs::Extract(texts) => Work::Extract(EmbedBatch {
            inputs: texts.iter().map(|&text| Input::from(text)).collect(),
            truncate,
        }),
    };
    let (done, labels) = batch::run(registry, model, work, parents).await?;
    let (queue_us, compute_us) = (done.queue_us, done.compute_us);
    let count = done.answer.count() as u64;
    Ok(match &done.answer {
        Answer::Scores {
            scores,
            tokens,
            truncated,
        } => response::ok(
            id,
            &Scored {
                count,
                scores: serde_bytes::Bytes::new(scores),
                tokens,
                truncated,
                queue_us,
                compute_us,
            },
        ),
        Answer::Probabilities {
            probabilities,
            tokens,
            truncated,
        } => response::ok(
            id,
            &Classified {
                count,
                labels: &labels,
                probabilities: serde_bytes::Bytes::new(probabilities),
                tokens,
                truncated,
                queue_us,
                compute_us,
            },
        ),
        Answer::Entities {
            entities,
            tokens,
            truncated,
        } => response::ok(
            id,
            &Extracted {
                count,
                entities: entities
                    .iter()
                    .map(|row| {
                        row.iter()
                            .map(|e| WireEntity {
                                label: &e.label,
                                text: &e.text,
                                start: e.start as u64,
                                end: e.end as u64,
                                score: e.score,
                            })
                            .collect()
                    })
                    .collect(),
                tokens,
                truncated,
                queue_us,
                compute_us,
            },
        ),
        Answer::Embeddings { .. } => {
            return Err(ProtocolError::new(
                ErrorCode::Internal,
                format!("a `{}` batch answered with embeddings", inputs.op_name()),
            ));
        }
    })
}
