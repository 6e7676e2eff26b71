//! Input-size guards shared by every runtime that tokenises text.

/// Bytes of input text tokenised per allowed token. The tokenizer's working memory is tens of
/// bytes per input byte, so a multi-megabyte input would cost gigabytes to learn that only its
/// first few hundred tokens count. Real text needs 1–10 bytes per token (30 for a run of
/// `[UNK]` emoji), so cutting the text at this many bytes per token leaves the kept tokens
/// untouched; only an input that starts with tens of kilobytes of whitespace could tokenise
/// differently, and such an input is reported as truncated.
pub const INPUT_BYTES_PER_TOKEN: usize = 128;

/// The longest prefix of `s` that is at most `max` bytes and ends on a character boundary.
pub fn prefix_at_char_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::prefix_at_char_boundary;

    #[test]
    fn prefixes_end_on_char_boundaries() {
        assert_eq!(prefix_at_char_boundary("héllo", 10), "héllo");
        assert_eq!(prefix_at_char_boundary("héllo", 2), "h");
        assert_eq!(prefix_at_char_boundary("héllo", 3), "hé");
        assert_eq!(prefix_at_char_boundary("😀", 3), "");
    }
}
