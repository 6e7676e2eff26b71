//! A minimal blocking HTTP/1.1 client for the OTLP exporter.
//!
//! The SDK's batch span processor runs exports on its own thread and drives them with a
//! blocking executor, so a plain `std::net` request is all it needs. Shipping this instead of
//! reqwest removes hyper, tower, url/IDNA and their ~40 crates from the sidecar; the price is
//! that only `http://` endpoints work, which suits the usual local collector or agent. The
//! sidecar refuses `https://` endpoints at start with a message saying so.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use opentelemetry_http::{HttpClient, HttpError};

/// Responses to an export are tiny; anything larger is not an OTLP collector talking.
const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;

/// Sends each request on a fresh connection with `Connection: close`.
#[derive(Debug, Clone)]
pub(crate) struct PlainHttpClient {
    timeout: Duration,
}

impl PlainHttpClient {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

#[async_trait::async_trait]
impl HttpClient for PlainHttpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        send(&request, self.timeout)
    }
}

fn error(message: impl Into<String>) -> HttpError {
    message.into().into()
}

fn send(request: &Request<Bytes>, timeout: Duration) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri();
    if uri.scheme_str() != Some("http") {
        return Err(error(format!(
            "{uri}: only http:// OTLP endpoints are supported"
        )));
    }
    let host = uri.host().ok_or_else(|| error(format!("{uri}: no host")))?;
    // `Uri::host` keeps the brackets of an IPv6 literal, which name resolution does not take.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let mut last_error = None;
    let mut stream = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_error = Some(e),
        }
    }
    let mut stream = match (stream, last_error) {
        (Some(s), _) => s,
        (None, Some(e)) => return Err(e.into()),
        (None, None) => return Err(error(format!("{host}: no addresses"))),
    };
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;

    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let authority = uri.authority().map_or(host, |a| a.as_str());
    let mut head = format!(
        "{} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        request.method(),
        request.body().len()
    );
    for (name, value) in request.headers() {
        if name == http::header::HOST
            || name == http::header::CONNECTION
            || name == http::header::CONTENT_LENGTH
        {
            continue;
        }
        let value = value
            .to_str()
            .map_err(|_| error(format!("header {name} is not visible ASCII")))?;
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(request.body())?;
    stream.flush()?;

    read_response(BufReader::new(stream.take(MAX_RESPONSE_BYTES)))
}

fn read_response<R: BufRead>(mut reader: R) -> Result<Response<Bytes>, HttpError> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| error(format!("bad HTTP status line {:?}", line.trim_end())))?;

    let mut builder = Response::builder().status(status);
    let mut content_length = None;
    let mut chunked = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(error("connection closed inside the response headers"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(error(format!("bad HTTP header {header:?}")));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(
                value
                    .parse::<u64>()
                    .map_err(|_| error(format!("bad Content-Length {value:?}")))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
        builder = builder.header(name.trim(), value);
    }

    let mut body = Vec::new();
    if chunked {
        read_chunked(&mut reader, &mut body)?;
    } else if let Some(len) = content_length {
        reader.take(len).read_to_end(&mut body)?;
        if body.len() as u64 != len {
            return Err(error("connection closed inside the response body"));
        }
    } else {
        reader.read_to_end(&mut body)?;
    }
    Ok(builder.body(Bytes::from(body))?)
}

fn read_chunked<R: BufRead>(reader: &mut R, body: &mut Vec<u8>) -> Result<(), HttpError> {
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let size = line.trim_end().split(';').next().unwrap_or("");
        let size = u64::from_str_radix(size.trim(), 16)
            .map_err(|_| error(format!("bad chunk size {:?}", line.trim_end())))?;
        if size == 0 {
            // Trailers, then the final empty line.
            loop {
                line.clear();
                if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                    return Ok(());
                }
            }
        }
        let before = body.len();
        reader.by_ref().take(size).read_to_end(body)?;
        if (body.len() - before) as u64 != size {
            return Err(error("connection closed inside a chunk"));
        }
        line.clear();
        reader.read_line(&mut line)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_chunked_and_close_delimited_responses() {
        let r = read_response(&b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra"[..]).unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.body().as_ref(), b"{}");

        let r = read_response(
            &b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"[..],
        )
        .unwrap();
        assert_eq!(r.status(), 400);
        assert_eq!(r.body().as_ref(), b"abcde");

        let r = read_response(&b"HTTP/1.0 204 No Content\r\n\r\nrest"[..]).unwrap();
        assert_eq!(r.status(), 204);
        assert_eq!(r.body().as_ref(), b"rest");

        assert!(read_response(&b"nonsense\r\n\r\n"[..]).is_err());
        assert!(read_response(&b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"[..]).is_err());
    }

    #[test]
    fn posts_to_a_real_listener() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let mut body = [0u8; 5];
            reader.read_exact(&mut body).unwrap();
            let mut stream = stream;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            (head, body)
        });
        let request = Request::post(format!("http://{addr}/v1/traces"))
            .header("content-type", "application/json")
            .body(Bytes::from_static(b"hello"))
            .unwrap();
        let response = send(&request, Duration::from_secs(5)).unwrap();
        assert_eq!(response.status(), 200);
        let (head, body) = server.join().unwrap();
        assert!(head.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{head}");
        assert!(
            head.contains("content-type: application/json\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Length: 5\r\n"), "{head}");
        assert_eq!(&body, b"hello");

        let https = Request::post("https://collector:4318/v1/traces")
            .body(Bytes::new())
            .unwrap();
        assert!(send(&https, Duration::from_secs(1)).is_err());
    }
}
