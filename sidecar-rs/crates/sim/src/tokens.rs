//! Token counts when no tokenizer is at hand.

/// Bytes of UTF-8 text per estimated token: the usual rule of thumb for English under WordPiece
/// and BPE vocabularies (MiniLM's tokenizer gives 3.5–5 on ordinary prose).
pub const ESTIMATED_BYTES_PER_TOKEN: usize = 4;

/// Special tokens an encoder adds to every input (`[CLS]` and `[SEP]`).
pub const ESTIMATED_SPECIAL_TOKENS: usize = 2;

/// Estimated tokens of `text`, special tokens included, before truncation:
/// `2 + ceil(bytes / 4)`.
pub fn estimate_tokens(text: &str) -> usize {
    ESTIMATED_SPECIAL_TOKENS + text.len().div_ceil(ESTIMATED_BYTES_PER_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::estimate_tokens;

    #[test]
    fn estimates_count_special_tokens_and_round_up() {
        assert_eq!(estimate_tokens(""), 2);
        assert_eq!(estimate_tokens("a"), 3);
        assert_eq!(estimate_tokens("abcd"), 3);
        assert_eq!(estimate_tokens("hello world"), 5);
    }
}
