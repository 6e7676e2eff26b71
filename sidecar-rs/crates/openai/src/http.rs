//! A minimal blocking HTTP/1.1 client: one request per connection, `Content-Length`, chunked
//! or close-delimited bodies, and a read timeout that bounds every wait.
//!
//! Written here rather than taken from a crate because streaming generation needs two things
//! the small blocking clients do not offer: an *idle* timeout (the longest silence between two
//! reads, not a deadline for the whole answer, which a long generation legitimately exceeds)
//! and aborting a blocked read from another thread, which is how a `cancel` drops the
//! connection at once instead of after the remote's next token.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::OpenAiError;
use crate::endpoint::Endpoint;

/// Longest status or header line, and longest chunk-size line.
const MAX_LINE_BYTES: usize = 16 * 1024;
/// Most header lines in one response.
const MAX_HEADERS: usize = 128;

/// Where requests go and how long they may wait.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    pub endpoint: Endpoint,
    pub api_key: Option<String>,
    pub timeout: Duration,
}

/// A response whose head has been read; the body is read on demand.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Body,
}

/// Closes a connection from another thread, failing any read blocked on it.
#[derive(Debug)]
pub(crate) struct Abort(TcpStream);

impl Abort {
    pub(crate) fn abort(&self) {
        // The connection may already be closed, which is what we wanted anyway.
        let _ = self.0.shutdown(Shutdown::Both);
    }
}

impl Http {
    fn timeout_ms(&self) -> u64 {
        u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)
    }

    /// Maps an I/O error on this remote's connection to the crate's error.
    pub(crate) fn io_error(&self, path: &str, e: &io::Error) -> OpenAiError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => OpenAiError::Timeout {
                endpoint: self.endpoint.authority(),
                timeout_ms: self.timeout_ms(),
            },
            io::ErrorKind::InvalidData => OpenAiError::malformed(path, e.to_string()),
            io::ErrorKind::UnexpectedEof => {
                OpenAiError::malformed(path, "the connection closed in the middle of the answer")
            }
            _ => OpenAiError::Io {
                endpoint: self.endpoint.authority(),
                reason: e.to_string(),
            },
        }
    }

    /// Opens a connection; [`Connection::abort_handle`] can close it from another thread
    /// from now on, even while [`Connection::send`] waits for the answer.
    pub(crate) fn connect(&self) -> Result<Connection<'_>, OpenAiError> {
        let endpoint = self.endpoint.authority();
        let refused = |reason: String| OpenAiError::Connect {
            endpoint: endpoint.clone(),
            reason,
        };
        let addrs = (self.endpoint.host.as_str(), self.endpoint.port)
            .to_socket_addrs()
            .map_err(|e| refused(e.to_string()))?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.timeout) {
                Ok(stream) => {
                    let setup = stream
                        .set_read_timeout(Some(self.timeout))
                        .and_then(|()| stream.set_write_timeout(Some(self.timeout)))
                        .and_then(|()| stream.set_nodelay(true));
                    setup.map_err(|e| refused(e.to_string()))?;
                    return Ok(Connection { http: self, stream });
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return Err(OpenAiError::Timeout {
                        endpoint,
                        timeout_ms: self.timeout_ms(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(refused(last.map_or_else(
            || "the host name resolved to no address".to_owned(),
            |e| e.to_string(),
        )))
    }

    /// Connects, sends one request and reads the response head. A JSON `body` makes it a
    /// POST, else a GET.
    pub(crate) fn send(
        &self,
        path: &str,
        body: Option<&[u8]>,
        accept: &str,
    ) -> Result<Response, OpenAiError> {
        self.connect()?.send(path, body, accept)
    }
}

/// An open connection that has not sent its request yet.
pub(crate) struct Connection<'a> {
    http: &'a Http,
    stream: TcpStream,
}

impl Connection<'_> {
    pub(crate) fn abort_handle(&self) -> Result<Abort, OpenAiError> {
        self.stream
            .try_clone()
            .map(Abort)
            .map_err(|e| self.http.io_error("", &e))
    }

    /// Sends one request and reads the response head; see [`Http::send`].
    pub(crate) fn send(
        mut self,
        path: &str,
        body: Option<&[u8]>,
        accept: &str,
    ) -> Result<Response, OpenAiError> {
        let http = self.http;
        let method = if body.is_some() { "POST" } else { "GET" };
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: shoal-sidecar/{}\r\n\
             Accept: {accept}\r\nConnection: close\r\n",
            http.endpoint.target(path),
            http.endpoint.authority(),
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(body) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        if let Some(key) = &http.api_key {
            head.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        head.push_str("\r\n");
        let written = self
            .stream
            .write_all(head.as_bytes())
            .and_then(|()| self.stream.write_all(body.unwrap_or_default()))
            .and_then(|()| self.stream.flush());
        written.map_err(|e| http.io_error(path, &e))?;
        let mut reader = BufReader::new(self.stream);
        let (status, content_type, framing) =
            read_head(&mut reader).map_err(|e| http.io_error(path, &e))?;
        Ok(Response {
            status,
            content_type,
            body: Body {
                reader,
                framing,
                deadline: None,
            },
        })
    }
}

/// How the end of the body is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    /// `Transfer-Encoding: chunked`; `first` until the first size line is read, `left` bytes
    /// of the current chunk still to read.
    Chunked {
        first: bool,
        left: u64,
    },
    /// Until the remote closes the connection.
    Close,
    Done,
}

/// A response body as a plain reader; framing errors come out as `InvalidData` and a body cut
/// short as `UnexpectedEof`.
pub(crate) struct Body {
    reader: BufReader<TcpStream>,
    framing: Framing,
    deadline: Option<Instant>,
}

impl Body {
    /// Fails every read after `deadline` with `TimedOut`, so a remote that trickles bytes
    /// cannot hold a non-streaming request past its timeout.
    pub(crate) fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The whole body, failing with `InvalidData` past `limit` bytes.
    pub(crate) fn read_limited(mut self, limit: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = self.read(&mut chunk)?;
            if n == 0 {
                return Ok(out);
            }
            if out.len() + n > limit {
                return Err(invalid(format!("the answer is larger than {limit} bytes")));
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(deadline) = self.deadline
            && Instant::now() >= deadline
        {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        self.reader.read(buf)
    }
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

fn cut_short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "body cut short")
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.framing {
                Framing::Done => return Ok(0),
                Framing::Close => return self.read_raw(buf),
                Framing::Length(0) => {
                    self.framing = Framing::Done;
                    return Ok(0);
                }
                Framing::Length(left) => {
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let n = self.read_raw(&mut buf[..want])?;
                    if n == 0 {
                        return Err(cut_short());
                    }
                    self.framing = Framing::Length(left - n as u64);
                    return Ok(n);
                }
                Framing::Chunked { first, left: 0 } => {
                    if !first && !read_line(&mut self.reader, MAX_LINE_BYTES)?.is_empty() {
                        return Err(invalid("a chunk is longer than its size says"));
                    }
                    let size = chunk_size(&read_line(&mut self.reader, MAX_LINE_BYTES)?)?;
                    if size == 0 {
                        skip_trailers(&mut self.reader)?;
                        self.framing = Framing::Done;
                        return Ok(0);
                    }
                    self.framing = Framing::Chunked {
                        first: false,
                        left: size,
                    };
                }
                Framing::Chunked { left, .. } => {
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let n = self.read_raw(&mut buf[..want])?;
                    if n == 0 {
                        return Err(cut_short());
                    }
                    self.framing = Framing::Chunked {
                        first: false,
                        left: left - n as u64,
                    };
                    return Ok(n);
                }
            }
        }
    }
}

/// One line without its `\n` or `\r\n`; `InvalidData` past `max` bytes, `UnexpectedEof` when
/// the stream ends before a line ends.
pub(crate) fn read_line(reader: &mut impl BufRead, max: usize) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    if read_line_or_eof(reader, max, &mut line)? {
        Ok(line)
    } else {
        Err(cut_short())
    }
}

/// Like [`read_line`] into `line`, but a clean end of stream before any byte is `Ok(false)`.
pub(crate) fn read_line_or_eof(
    reader: &mut impl BufRead,
    max: usize,
    line: &mut Vec<u8>,
) -> io::Result<bool> {
    line.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return if line.is_empty() {
                Ok(false)
            } else {
                Err(cut_short())
            };
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > max + 2 {
            return Err(invalid(format!("a line is longer than {max} bytes")));
        }
        line.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.len() > max {
                return Err(invalid(format!("a line is longer than {max} bytes")));
            }
            return Ok(true);
        }
    }
}

fn chunk_size(line: &[u8]) -> io::Result<u64> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = std::str::from_utf8(digits)
        .map_err(|_| invalid("a chunk size is not ASCII"))?
        .trim();
    if digits.is_empty() || digits.len() > 15 {
        return Err(invalid(format!(
            "bad chunk size `{}`",
            digits.escape_debug()
        )));
    }
    u64::from_str_radix(digits, 16)
        .map_err(|_| invalid(format!("bad chunk size `{}`", digits.escape_debug())))
}

fn skip_trailers(reader: &mut impl BufRead) -> io::Result<()> {
    for _ in 0..MAX_HEADERS {
        if read_line(reader, MAX_LINE_BYTES)?.is_empty() {
            return Ok(());
        }
    }
    Err(invalid("too many trailer lines"))
}

type Head = (u16, Option<String>, Framing);

fn read_head(reader: &mut impl BufRead) -> io::Result<Head> {
    let status_line = read_line(reader, MAX_LINE_BYTES)?;
    let status_line = String::from_utf8_lossy(&status_line);
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let status = parts.next().unwrap_or_default();
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || status.len() != 3 {
        return Err(invalid(format!(
            "not an HTTP/1.x status line: `{}`",
            status_line
                .chars()
                .take(80)
                .collect::<String>()
                .escape_debug()
        )));
    }
    let status: u16 = status
        .parse()
        .ok()
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| invalid(format!("bad status `{}`", status.escape_debug())))?;
    let mut length = None;
    let mut chunked = false;
    let mut content_type = None;
    for _ in 0..MAX_HEADERS {
        let line = read_line(reader, MAX_LINE_BYTES)?;
        if line.is_empty() {
            let framing = if status == 204 || status == 304 {
                Framing::Length(0)
            } else if chunked {
                Framing::Chunked {
                    first: true,
                    left: 0,
                }
            } else {
                length.map_or(Framing::Close, Framing::Length)
            };
            return Ok((status, content_type, framing));
        }
        let line = String::from_utf8_lossy(&line);
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid("a header line has no colon"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: u64 = value
                .parse()
                .map_err(|_| invalid(format!("bad Content-Length `{}`", value.escape_debug())))?;
            if length.is_some_and(|l| l != n) {
                return Err(invalid("conflicting Content-Length headers"));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(invalid(format!(
                    "unsupported Transfer-Encoding `{}`",
                    value.escape_debug()
                )));
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = Some(value.to_ascii_lowercase());
        }
    }
    Err(invalid(format!("more than {MAX_HEADERS} header lines")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-shot server that answers the first request with `answer` as raw bytes, so every
    /// framing a real server might send (and some no real server should) can be replayed.
    fn serve(answer: &'static [u8]) -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            while !read_line(&mut reader, 65536).unwrap().is_empty() {}
            let _ = stream.write_all(answer);
        });
        Http {
            endpoint: Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            api_key: None,
            timeout: Duration::from_secs(30),
        }
    }

    fn body_of(answer: &'static [u8]) -> Result<Vec<u8>, OpenAiError> {
        let http = serve(answer);
        let response = http.send("/x", None, "*/*")?;
        response
            .body
            .read_limited(1024)
            .map_err(|e| http.io_error("/x", &e))
    }

    #[test]
    fn reads_every_framing() {
        for (answer, body) in [
            (&b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"[..], &b"hello"[..]),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2;x=y\r\nlo\r\n0\r\nT: 1\r\n\r\n",
                b"hello",
            ),
            (b"HTTP/1.0 200 OK\r\n\r\nhello", b"hello"),
            (b"HTTP/1.1 204 No Content\r\n\r\n", b""),
        ] {
            let answer: &'static [u8] = answer;
            assert_eq!(body_of(answer).unwrap(), body);
        }
    }

    #[test]
    fn hostile_framing_is_a_typed_error() {
        for (answer, needle) in [
            (
                &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
                "not an HTTP/1.x status line",
            ),
            (b"HTTP/1.1 999 Nope\r\n\r\n", "bad status"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello",
                "closed in the middle",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                "bad Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "conflicting",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                "unsupported Transfer-Encoding",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "bad chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
                "bad chunk size",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
                "longer than its size",
            ),
            (b"HTTP/1.1 200 OK\r\nBroken header\r\n\r\n", "no colon"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n",
                "closed in the middle",
            ),
            (b"", "closed in the middle"),
        ] {
            let message = body_of(answer).unwrap_err().to_string();
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
    }

    #[test]
    fn bodies_and_lines_are_bounded() {
        let big: &'static [u8] = Box::leak(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n{}",
                "x".repeat(2000)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let message = body_of(big).unwrap_err().to_string();
        assert!(message.contains("larger than 1024 bytes"), "{message}");
        let long: &'static [u8] = Box::leak(
            format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "y".repeat(20_000))
                .into_bytes()
                .into_boxed_slice(),
        );
        let message = body_of(long).unwrap_err().to_string();
        assert!(message.contains("longer than 16384 bytes"), "{message}");
    }

    #[test]
    fn refused_connections_and_silence_are_typed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let http = Http {
            endpoint: Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            api_key: None,
            timeout: Duration::from_secs(5),
        };
        let error = http.send("/x", None, "*/*").err().unwrap();
        assert!(matches!(error, OpenAiError::Connect { .. }), "{error}");

        // Accepts and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let http = Http {
            endpoint: Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            api_key: None,
            timeout: Duration::from_millis(200),
        };
        let error = http.send("/x", None, "*/*").err().unwrap();
        assert!(
            matches!(
                error,
                OpenAiError::Timeout {
                    timeout_ms: 200,
                    ..
                }
            ),
            "{error}"
        );
        drop(listener);
    }

    #[test]
    fn abort_unblocks_a_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                .unwrap();
            // Holds the connection open without sending a byte until the client hangs up.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).is_ok_and(|n| n > 0) {}
        });
        let http = Http {
            endpoint: Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
            api_key: None,
            timeout: Duration::from_secs(60),
        };
        let connection = http.connect().unwrap();
        let abort = connection.abort_handle().unwrap();
        let mut response = connection.send("/x", None, "*/*").unwrap();
        let started = Instant::now();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            abort.abort();
        });
        let mut buf = [0u8; 16];
        let read = response.body.read(&mut buf);
        assert!(
            read.is_err(),
            "a cut chunked body is an error, got {read:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "abort did not unblock the read"
        );
        server.join().unwrap();
    }
}
