//! Server-sent events, as OpenAI-compatible servers stream completions: `data: <json>` lines,
//! events separated by a blank line, the stream ended by `data: [DONE]`.
//!
//! Follows the WHATWG `text/event-stream` rules the servers use (field `data`, one optional
//! space after the colon, several `data` lines joined with `\n`, `:` comments, other fields
//! ignored), except that only `\n` and `\r\n` end lines: no server we target sends a lone `\r`.

use std::io::{self, BufRead};

use crate::http::read_line_or_eof;

/// Longest line, and longest event: one completion chunk is a few hundred bytes, so this is
/// room for a verbose server while keeping a hostile one from growing memory without bound.
const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// The `data` of an event.
    Data(String),
    /// `data: [DONE]`, OpenAI's end-of-stream marker.
    Done,
}

/// Reads events from a body.
pub(crate) struct EventReader<R> {
    reader: R,
    line: Vec<u8>,
}

impl<R: BufRead> EventReader<R> {
    pub(crate) fn new(reader: R) -> Self {
        Self {
            reader,
            line: Vec::new(),
        }
    }

    /// The next event, or `None` when the stream ends (cleanly, between events).
    pub(crate) fn next_event(&mut self) -> io::Result<Option<Event>> {
        let mut data: Option<String> = None;
        loop {
            if !read_line_or_eof(&mut self.reader, MAX_EVENT_BYTES, &mut self.line)? {
                // The spec drops an event that is not followed by a blank line; a server
                // closing right after its last `data` line still meant it, so keep it.
                return Ok(data.map(classify));
            }
            if self.line.is_empty() {
                match data.take() {
                    Some(data) => return Ok(Some(classify(data))),
                    None => continue,
                }
            }
            if self.line[0] == b':' {
                continue;
            }
            let (field, value) = match self.line.iter().position(|&b| b == b':') {
                Some(at) => {
                    let value = &self.line[at + 1..];
                    (&self.line[..at], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (&self.line[..], &[][..]),
            };
            if field != b"data" {
                continue;
            }
            let value = std::str::from_utf8(value).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "an event is not valid UTF-8")
            })?;
            let data = data.get_or_insert_with(String::new);
            if data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("an event is longer than {MAX_EVENT_BYTES} bytes"),
                ));
            }
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(value);
        }
    }
}

fn classify(data: String) -> Event {
    if data == "[DONE]" {
        Event::Done
    } else {
        Event::Data(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &[u8]) -> io::Result<Vec<Event>> {
        let mut reader = EventReader::new(text);
        let mut out = Vec::new();
        while let Some(event) = reader.next_event()? {
            out.push(event);
        }
        Ok(out)
    }

    #[test]
    fn reads_events_as_openai_servers_send_them() {
        let stream = b": ping\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\nid: 3\ndata:{\"b\"\ndata: :2}\n\n\n\ndata: [DONE]\n\n";
        assert_eq!(
            events(stream).unwrap(),
            vec![
                Event::Data("{\"a\":1}".into()),
                Event::Data("{\"b\"\n:2}".into()),
                Event::Done
            ]
        );
        assert_eq!(
            events(b"data: last\n").unwrap(),
            vec![Event::Data("last".into())]
        );
        assert_eq!(events(b"").unwrap(), vec![]);
    }

    #[test]
    fn hostile_streams_are_invalid_data() {
        let long = format!("data: {}\n\n", "x".repeat(MAX_EVENT_BYTES + 1));
        let many = "data: xxxxxxxxxxxxxxxx\n".repeat(MAX_EVENT_BYTES / 16);
        for stream in [long.as_bytes(), many.as_bytes(), b"data: \xff\xfe\n\n"] {
            let error = events(stream).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
        }
        for cut in [&b"data: cut"[..], b"data: a\r"] {
            let error = events(cut).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "{error}");
        }
    }
}
