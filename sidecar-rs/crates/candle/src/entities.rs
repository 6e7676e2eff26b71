//! Token labels to entities, as transformers' token-classification pipeline does with
//! `aggregation_strategy="simple"`
//! (<https://github.com/huggingface/transformers/blob/main/src/transformers/pipelines/token_classification.py>):
//! each token takes its most probable label; a run of tokens whose labels share a type
//! (`B-PER`, `I-PER`, `I-PER`) becomes one entity, a `B-` label always starts a new one; runs
//! labelled `O` are dropped. An entity spans from its first token's start to its last token's
//! end, and its score is the mean of its tokens' winning probabilities.

use shoal_sidecar_core::Entity;

/// The label that marks "no entity".
const OUTSIDE: &str = "O";

/// One non-special token of an input after classification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TaggedToken {
    /// Offsets into the input in Unicode code points, end exclusive.
    pub start: usize,
    pub end: usize,
    /// Index of the winning label.
    pub label: usize,
    /// Its probability.
    pub score: f32,
}

/// `(is_begin, type)` of a label: `B-X` → `(true, X)`, `I-X` → `(false, X)`, and any other
/// label continues a run of itself, as the pipeline's `get_tag` has it.
fn tag(label: &str) -> (bool, &str) {
    if let Some(kind) = label.strip_prefix("B-") {
        (true, kind)
    } else if let Some(kind) = label.strip_prefix("I-") {
        (false, kind)
    } else {
        (false, label)
    }
}

/// The entity type reported for a run that starts with `label`: everything after its first
/// `-`, as the pipeline's `group_sub_entities` splits it.
fn entity_type(label: &str) -> &str {
    label.split_once('-').map_or(label, |(_, kind)| kind)
}

/// Groups `tokens` (in text order) into entities of `text`, whose labels are `labels`.
pub(crate) fn aggregate(text: &str, tokens: &[TaggedToken], labels: &[String]) -> Vec<Entity> {
    // Byte offset of every code point, plus the end, so that a code-point slice is O(1).
    let bytes: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain(std::iter::once(text.len()))
        .collect();
    let slice = |start: usize, end: usize| {
        let last = bytes.len() - 1;
        let (start, end) = (start.min(last), end.min(last));
        text[bytes[start]..bytes[end.max(start)]].to_owned()
    };
    let label = |token: &TaggedToken| labels.get(token.label).map_or("", String::as_str);

    let mut entities = Vec::new();
    let mut flush = |run: &[TaggedToken]| {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return;
        };
        let kind = entity_type(label(first));
        if kind == OUTSIDE {
            return;
        }
        let score = run.iter().map(|t| f64::from(t.score)).sum::<f64>() / run.len() as f64;
        entities.push(Entity {
            label: kind.to_owned(),
            text: slice(first.start, last.end),
            start: first.start,
            end: last.end,
            score: score as f32,
        });
    };
    let mut begin = 0;
    for i in 1..tokens.len() {
        let (is_begin, kind) = tag(label(&tokens[i]));
        let (_, last_kind) = tag(label(&tokens[i - 1]));
        if is_begin || kind != last_kind {
            flush(&tokens[begin..i]);
            begin = i;
        }
    }
    flush(&tokens[begin..]);
    entities
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Vec<String> {
        ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "MISC"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    fn token(start: usize, end: usize, label: usize, score: f32) -> TaggedToken {
        TaggedToken {
            start,
            end,
            label,
            score,
        }
    }

    #[test]
    fn runs_of_one_type_become_entities() {
        //          0123456789012345678901234
        let text = "Jean Dupont à Zürich ok";
        let tokens = [
            token(0, 4, 1, 0.9),    // B-PER
            token(5, 11, 2, 0.7),   // I-PER
            token(12, 13, 0, 0.99), // O
            token(14, 16, 4, 0.6),  // I-LOC starts an entity after O
            token(16, 20, 4, 0.8),  // I-LOC
            token(21, 23, 0, 0.9),  // O
        ];
        let entities = aggregate(text, &tokens, &labels());
        assert_eq!(entities.len(), 2);
        assert_eq!(
            (entities[0].label.as_str(), entities[0].text.as_str()),
            ("PER", "Jean Dupont")
        );
        assert!((entities[0].score - 0.8).abs() < 1e-6);
        assert_eq!(
            (
                entities[1].label.as_str(),
                entities[1].text.as_str(),
                entities[1].start,
                entities[1].end
            ),
            ("LOC", "Zürich", 14, 20)
        );
    }

    #[test]
    fn b_labels_and_type_changes_split_runs() {
        let text = "a b c d e";
        let tokens = [
            token(0, 1, 1, 0.5), // B-PER
            token(2, 3, 1, 0.5), // B-PER: a new entity
            token(4, 5, 4, 0.5), // I-LOC after PER: a new entity
            token(6, 7, 5, 0.5), // MISC: no prefix, its own run
            token(8, 9, 5, 0.5), // MISC continues
        ];
        let got: Vec<(String, String)> = aggregate(text, &tokens, &labels())
            .into_iter()
            .map(|e| (e.label, e.text))
            .collect();
        let want = [("PER", "a"), ("PER", "b"), ("LOC", "c"), ("MISC", "d e")];
        assert_eq!(
            got,
            want.map(|(l, t)| (l.to_owned(), t.to_owned())).to_vec()
        );
    }

    #[test]
    fn nothing_in_gives_nothing_out_and_offsets_never_panic() {
        assert!(aggregate("", &[], &labels()).is_empty());
        let only_outside = [token(0, 2, 0, 0.9), token(3, 5, 0, 0.9)];
        assert!(aggregate("ab cd", &only_outside, &labels()).is_empty());
        // Offsets past the text (never produced by a tokenizer) are clamped, not a panic.
        let wild = [token(3, 40, 1, 0.5)];
        assert_eq!(aggregate("abcd", &wild, &labels())[0].text, "d");
    }
}
