use crate::BackendError;

/// One input of a batch: a text, or the ids its text encodes to in the model's vocabulary,
/// without the special tokens (`[CLS]`, `[SEP]`) the model puts around every input, which are
/// added as they are to a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A text, tokenised by the model's tokenizer.
    Text(String),
    /// Token ids, used as they are.
    Ids(Vec<u32>),
}

impl Input {
    /// The text, or `None` for token ids.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Input::Text(text) => Some(text),
            Input::Ids(_) => None,
        }
    }
}

/// Checks input `index`'s token ids against a vocabulary of `vocab` ids.
///
/// # Errors
///
/// [`BackendError::UnknownTokenId`] naming the first id at or above `vocab`.
pub fn check_token_ids(index: usize, ids: &[u32], vocab: usize) -> Result<(), BackendError> {
    match ids.iter().position(|&id| id as usize >= vocab) {
        Some(position) => Err(BackendError::UnknownTokenId {
            index,
            position,
            id: ids[position],
            vocab,
        }),
        None => Ok(()),
    }
}

impl From<&str> for Input {
    fn from(text: &str) -> Self {
        Input::Text(text.to_owned())
    }
}

impl From<String> for Input {
    fn from(text: String) -> Self {
        Input::Text(text)
    }
}

/// Inputs for one call to [`crate::Backend::embed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedBatch {
    /// Inputs to embed, in the order their rows must come back.
    pub inputs: Vec<Input>,
    /// When `true`, inputs longer than the model's limit are cut to it; when `false`, such an
    /// input fails the whole batch with [`crate::BackendError::InputTooLong`].
    pub truncate: bool,
}

/// Rows produced by [`crate::Backend::embed`].
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// Width of each row.
    pub dim: usize,
    /// `count() * dim` values, row-major, pooled and (when the model asks for it) L2-normalised.
    pub values: Vec<f32>,
    /// Tokens per input after truncation, special tokens included.
    pub tokens: Vec<u32>,
    /// Whether each input was cut to the model's limit.
    pub truncated: Vec<bool>,
}

impl Embeddings {
    /// Number of rows.
    pub fn count(&self) -> usize {
        self.tokens.len()
    }

    /// Total tokens over all rows, as counted for stats and spans.
    pub fn total_tokens(&self) -> u64 {
        self.tokens.iter().map(|&t| u64::from(t)).sum()
    }

    /// Row `index`, or `None` past the end.
    pub fn row(&self, index: usize) -> Option<&[f32]> {
        let start = index.checked_mul(self.dim)?;
        self.values.get(start..start.checked_add(self.dim)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_are_checked_against_the_vocabulary() {
        assert_eq!(check_token_ids(0, &[0, 4], 5), Ok(()));
        assert_eq!(
            check_token_ids(2, &[1, 5, 9], 5),
            Err(BackendError::UnknownTokenId {
                index: 2,
                position: 1,
                id: 5,
                vocab: 5
            })
        );
    }

    #[test]
    fn rows_are_row_major() {
        let e = Embeddings {
            dim: 2,
            values: vec![1.0, 2.0, 3.0, 4.0],
            tokens: vec![3, 5],
            truncated: vec![false, true],
        };
        assert_eq!(e.count(), 2);
        assert_eq!(e.total_tokens(), 8);
        assert_eq!(e.row(1), Some(&[3.0, 4.0][..]));
        assert_eq!(e.row(2), None);
    }
}
