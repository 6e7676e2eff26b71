//! JSON requests to the remote and how its error answers are read.

use std::time::Instant;

use serde::de::DeserializeOwned;

use crate::OpenAiError;
use crate::http::{Http, Response};

/// Most bytes of an error answer read, and most characters of its message kept: enough for
/// any real explanation, too little for a hostile server to flood logs or clients.
const MAX_ERROR_BYTES: usize = 64 * 1024;
const MAX_ERROR_CHARS: usize = 500;

/// POSTs `body` (or GETs when `None`) and parses a 2xx answer of at most `limit` bytes, all
/// within the remote's timeout.
pub(crate) fn call<T: DeserializeOwned>(
    http: &Http,
    path: &str,
    body: Option<&serde_json::Value>,
    limit: usize,
) -> Result<T, OpenAiError> {
    let deadline = Instant::now() + http.timeout;
    let body = body.map(|b| serde_json::to_vec(b).expect("a JSON value serialises"));
    let response = success(
        http,
        path,
        http.send(path, body.as_deref(), "application/json")?,
    )?;
    let bytes = response
        .body
        .with_deadline(deadline)
        .read_limited(limit)
        .map_err(|e| http.io_error(path, &e))?;
    serde_json::from_slice(&bytes).map_err(|e| OpenAiError::malformed(path, e.to_string()))
}

/// `response` when its status is 2xx, else [`OpenAiError::Status`] with the remote's message.
pub(crate) fn success(
    http: &Http,
    path: &str,
    response: Response,
) -> Result<Response, OpenAiError> {
    if (200..300).contains(&response.status) {
        return Ok(response);
    }
    let status = response.status;
    // The explanation is a courtesy: a remote that fails to send it still failed with `status`.
    let body = response
        .body
        .with_deadline(Instant::now() + http.timeout)
        .read_limited(MAX_ERROR_BYTES)
        .unwrap_or_default();
    Err(OpenAiError::Status {
        path: path.to_owned(),
        status,
        message: error_message(&body),
    })
}

/// OpenAI's `{"error": {"message"}}`, FastAPI's `{"detail"}`, or the body's text.
fn error_message(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        let error = v.get("error");
        error
            .and_then(|e| e.get("message"))
            .or(error)
            .or_else(|| v.get("detail"))
            .or_else(|| v.get("message"))
            .map(|m| match m {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
    });
    let message = message.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    let message = message.trim();
    if message.is_empty() {
        return "(no explanation)".to_owned();
    }
    let mut short: String = message.chars().take(MAX_ERROR_CHARS).collect();
    if short.len() < message.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::error_message;

    #[test]
    fn finds_the_message_servers_send() {
        for (body, message) in [
            (
                &br#"{"error":{"message":"model not found","type":"x"}}"#[..],
                "model not found",
            ),
            (br#"{"error":"boom"}"#, "boom"),
            (
                br#"{"detail":[{"msg":"field required"}]}"#,
                r#"[{"msg":"field required"}]"#,
            ),
            (b"Internal Server Error", "Internal Server Error"),
            (b"", "(no explanation)"),
        ] {
            assert_eq!(error_message(body), message);
        }
        let long = "x".repeat(5000);
        assert_eq!(error_message(long.as_bytes()).chars().count(), 501);
    }
}
