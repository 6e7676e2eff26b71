//! What a checkpoint's `config.json` says its model is for: the head named in
//! `architectures`, the labels of `id2label` and, for sequence classification, the activation
//! `problem_type` implies (as transformers' text-classification pipeline chooses it).

use std::collections::BTreeMap;

use shoal_sidecar_core::ModelFamily;

use crate::LoadError;

/// Most labels a head may declare; far above any real classifier, low enough that a hostile
/// config cannot make the loader allocate a huge label table.
const MAX_LABELS: usize = 65_536;

/// How sequence-classification logits become probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// One softmax over the labels (`single_label_classification`, the default).
    Softmax,
    /// An independent sigmoid per label: one label (a cross-encoder's relevance logit), or
    /// `multi_label_classification`.
    Sigmoid,
}

/// The model's task head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// No task head: a sentence-embedding encoder.
    Embedding,
    /// `*ForSequenceClassification`: one row of label probabilities per input.
    Sequence {
        /// `id2label`, in id order.
        labels: Vec<String>,
        /// How logits become probabilities.
        activation: Activation,
    },
    /// `*ForTokenClassification`: labels per token, aggregated into entities.
    Tokens {
        /// `id2label`, in id order.
        labels: Vec<String>,
    },
}

impl Task {
    /// Reads the task from `config.json`.
    pub fn detect(config: &serde_json::Value) -> Result<Self, LoadError> {
        let architectures: Vec<&str> = config
            .get("architectures")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let has = |suffix: &str| architectures.iter().any(|a| a.ends_with(suffix));
        if has("ForSequenceClassification") {
            let labels = labels(config)?;
            let problem_type = config.get("problem_type").and_then(|v| v.as_str());
            let activation = match problem_type {
                Some("multi_label_classification") => Activation::Sigmoid,
                _ if labels.len() == 1 => Activation::Sigmoid,
                None | Some("single_label_classification") => Activation::Softmax,
                Some(other) => {
                    return Err(LoadError::Unsupported(format!(
                        "problem_type `{}` with {} labels",
                        other.escape_debug(),
                        labels.len()
                    )));
                }
            };
            Ok(Task::Sequence { labels, activation })
        } else if has("ForTokenClassification") {
            Ok(Task::Tokens {
                labels: labels(config)?,
            })
        } else {
            Ok(Task::Embedding)
        }
    }

    /// The protocol family: a one-label sequence classifier is a cross-encoder (`rerank`).
    pub fn family(&self) -> ModelFamily {
        match self {
            Task::Embedding => ModelFamily::Embedding,
            Task::Sequence { labels, .. } if labels.len() == 1 => ModelFamily::Rerank,
            Task::Sequence { .. } => ModelFamily::Classify,
            Task::Tokens { .. } => ModelFamily::Extract,
        }
    }

    /// The head's labels in id order; empty for an embedding model.
    pub fn labels(&self) -> &[String] {
        match self {
            Task::Embedding => &[],
            Task::Sequence { labels, .. } | Task::Tokens { labels } => labels,
        }
    }
}

/// `id2label` in id order. Its keys must be exactly `0..n`; `num_labels`, when also present,
/// must equal `n`. Without `id2label`, transformers' default applies: `num_labels` (2 when
/// absent) labels called `LABEL_<id>`.
fn labels(config: &serde_json::Value) -> Result<Vec<String>, LoadError> {
    let bad = |why: String| LoadError::Unsupported(format!("config.json: {why}"));
    let num_labels = match config.get("num_labels") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(format!("`num_labels` must be a positive integer, got {v}")))?,
        ),
    };
    let labels: Vec<String> = match config.get("id2label") {
        None | Some(serde_json::Value::Null) => {
            let n = num_labels.unwrap_or(2);
            if n > MAX_LABELS {
                return Err(bad(format!("{n} labels, more than {MAX_LABELS}")));
            }
            (0..n).map(|i| format!("LABEL_{i}")).collect()
        }
        Some(serde_json::Value::Object(map)) => {
            if map.len() > MAX_LABELS {
                return Err(bad(format!("{} labels, more than {MAX_LABELS}", map.len())));
            }
            let mut by_id = BTreeMap::new();
            for (key, value) in map {
                let id: usize = key.parse().map_err(|_| {
                    bad(format!(
                        "`id2label` key `{}` is not an id",
                        key.escape_debug()
                    ))
                })?;
                let label = value
                    .as_str()
                    .ok_or_else(|| bad(format!("`id2label[{id}]` must be a string")))?;
                by_id.insert(id, label.to_owned());
            }
            if by_id.keys().copied().ne(0..by_id.len()) {
                return Err(bad(format!(
                    "`id2label` ids must be 0..{}, got {:?}",
                    by_id.len(),
                    by_id.keys().collect::<Vec<_>>()
                )));
            }
            if let Some(n) = num_labels
                && n != by_id.len()
            {
                return Err(bad(format!(
                    "`num_labels` is {n} but `id2label` has {} labels",
                    by_id.len()
                )));
            }
            by_id.into_values().collect()
        }
        Some(other) => return Err(bad(format!("`id2label` must be a map, got {other}"))),
    };
    if labels.is_empty() {
        return Err(bad("a classification head needs at least one label".into()));
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_head_follows_architectures_and_labels() {
        let embedding = json!({"architectures": ["BertModel"]});
        assert_eq!(Task::detect(&embedding).unwrap(), Task::Embedding);
        // cross-encoder/ms-marco-MiniLM-L-6-v2's config.json.
        let rerank = json!({
            "architectures": ["BertForSequenceClassification"],
            "id2label": {"0": "LABEL_0"},
            "label2id": {"LABEL_0": 0},
        });
        let task = Task::detect(&rerank).unwrap();
        assert_eq!(task.family(), ModelFamily::Rerank);
        assert!(matches!(
            task,
            Task::Sequence {
                activation: Activation::Sigmoid,
                ..
            }
        ));
        // dslim/bert-base-NER's labels.
        let ner = json!({
            "architectures": ["BertForTokenClassification"],
            "id2label": {"0": "O", "1": "B-MISC", "2": "I-MISC", "3": "B-PER", "4": "I-PER",
                         "5": "B-ORG", "6": "I-ORG", "7": "B-LOC", "8": "I-LOC"},
        });
        let task = Task::detect(&ner).unwrap();
        assert_eq!(task.family(), ModelFamily::Extract);
        assert_eq!(task.labels()[3], "B-PER");
        let multi = json!({
            "architectures": ["BertForSequenceClassification"],
            "id2label": {"1": "b", "0": "a", "2": "c"},
            "problem_type": "multi_label_classification",
        });
        let task = Task::detect(&multi).unwrap();
        assert_eq!(task.family(), ModelFamily::Classify);
        assert_eq!(task.labels(), ["a", "b", "c"]);
        assert!(matches!(
            task,
            Task::Sequence {
                activation: Activation::Sigmoid,
                ..
            }
        ));
        let defaulted = json!({"architectures": ["BertForSequenceClassification"]});
        assert_eq!(
            Task::detect(&defaulted).unwrap().labels(),
            ["LABEL_0", "LABEL_1"]
        );
    }

    #[test]
    fn inconsistent_labels_are_refused() {
        let cases = [
            (
                json!({"architectures": ["BertForTokenClassification"], "id2label": {"0": "O", "2": "B-PER"}}),
                "ids must be 0..2",
            ),
            (
                json!({"architectures": ["BertForTokenClassification"], "id2label": {"zero": "O"}}),
                "is not an id",
            ),
            (
                json!({"architectures": ["BertForTokenClassification"], "id2label": {"0": 1}}),
                "must be a string",
            ),
            (
                json!({"architectures": ["BertForSequenceClassification"], "id2label": {"0": "a"}, "num_labels": 3}),
                "`num_labels` is 3",
            ),
            (
                json!({"architectures": ["BertForSequenceClassification"], "num_labels": 0}),
                "at least one label",
            ),
            (
                json!({"architectures": ["BertForSequenceClassification"], "num_labels": 1_000_000}),
                "more than",
            ),
            (
                json!({"architectures": ["BertForSequenceClassification"], "num_labels": 3, "problem_type": "regression"}),
                "problem_type `regression`",
            ),
        ];
        for (config, needle) in cases {
            let err = Task::detect(&config).unwrap_err().to_string();
            assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        }
    }
}
