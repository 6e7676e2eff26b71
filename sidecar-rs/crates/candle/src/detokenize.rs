//! Token ids back to text, one token at a time. A token is a run of bytes that need not end on
//! a character boundary (byte-level BPE splits emoji and CJK across tokens), so the stream
//! keeps an incomplete character until the bytes that finish it arrive.

/// How a vocabulary spells the bytes of its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenSpelling {
    /// GPT-2 byte-level BPE: each byte is one printable character (`Ġ` is a space).
    ByteLevel,
    /// SentencePiece: `▁` is a space and `<0xNN>` is one raw byte.
    SentencePiece,
}

/// GPT-2's `bytes_to_unicode`, inverted: the printable bytes stand for themselves and the
/// others were shifted to U+0100 onwards, in byte order.
fn byte_level_char_to_byte(c: char) -> Option<u8> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let code = c as u32;
    if code < 256 {
        return printable(code).then_some(code as u8);
    }
    (0u32..256)
        .filter(|&b| !printable(b))
        .nth((code - 256) as usize)
        .map(|b| b as u8)
}

/// The bytes `token` stands for. A character outside the spelling's alphabet (an added token
/// written as plain text) stands for its own UTF-8.
pub(crate) fn token_bytes(token: &str, spelling: TokenSpelling) -> Vec<u8> {
    match spelling {
        TokenSpelling::ByteLevel => {
            let mut out = Vec::with_capacity(token.len());
            for c in token.chars() {
                match byte_level_char_to_byte(c) {
                    Some(b) => out.push(b),
                    None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                }
            }
            out
        }
        TokenSpelling::SentencePiece => {
            if let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>'))
                && hex.len() == 2
                && let Ok(b) = u8::from_str_radix(hex, 16)
            {
                return vec![b];
            }
            token.replace('\u{2581}', " ").into_bytes()
        }
    }
}

/// Bytes in, whole characters out.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Appends `bytes` and returns every character now complete. Bytes that can never form a
    /// character become U+FFFD, as `String::from_utf8_lossy` would write them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The first `valid_up_to` bytes always parse.
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// What is left when the sequence ends: an unfinished character becomes U+FFFD.
    pub(crate) fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_spelling_round_trips_every_byte() {
        assert_eq!(token_bytes("Ġhello", TokenSpelling::ByteLevel), b" hello");
        assert_eq!(token_bytes("Ċ", TokenSpelling::ByteLevel), b"\n");
        // "é" is C3 A9, spelled as the characters for those two bytes.
        assert_eq!(token_bytes("Ã©", TokenSpelling::ByteLevel), "é".as_bytes());
        let all: Vec<u8> = (0u32..256)
            .map(|b| {
                let c = (0u32..0x200)
                    .filter_map(char::from_u32)
                    .find(|&c| byte_level_char_to_byte(c) == Some(b as u8))
                    .expect("every byte has a character");
                token_bytes(&c.to_string(), TokenSpelling::ByteLevel)[0]
            })
            .collect();
        assert_eq!(all, (0u8..=255).collect::<Vec<_>>());
    }

    #[test]
    fn sentencepiece_spelling() {
        assert_eq!(token_bytes("▁the", TokenSpelling::SentencePiece), b" the");
        assert_eq!(token_bytes("<0x0A>", TokenSpelling::SentencePiece), b"\n");
        assert_eq!(
            token_bytes("<0xZZ>", TokenSpelling::SentencePiece),
            b"<0xZZ>"
        );
    }

    #[test]
    fn characters_split_across_tokens_come_out_whole() {
        let mut s = Utf8Stream::default();
        let smile = "😀".as_bytes();
        assert_eq!(s.push(&[b'a', smile[0]]), "a");
        assert_eq!(s.push(&smile[1..3]), "");
        assert_eq!(s.push(&[smile[3], b'b']), "😀b");
        assert_eq!(s.push(&[0xff, b'c']), "\u{fffd}c");
        assert_eq!(s.push(&smile[..2]), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }
}
