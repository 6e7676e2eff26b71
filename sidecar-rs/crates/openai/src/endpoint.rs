//! The remote's base URL: plain `http://` only, like the sidecar's OTLP client, so the sidecar
//! carries no TLS stack. A remote behind TLS is reached through a local proxy or sidecar mesh.

use std::fmt;

use crate::OpenAiError;

/// `http://host[:port][/prefix]`, with requests going to `<prefix>/v1/...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// Host name or IP address, IPv6 without brackets.
    pub host: String,
    pub port: u16,
    /// Empty, or starting with `/` and not ending with one.
    pub prefix: String,
}

impl Endpoint {
    pub(crate) fn parse(url: &str) -> Result<Self, OpenAiError> {
        let bad = |reason: &str| OpenAiError::config("url", reason.to_owned());
        if url.len() > 2048 {
            return Err(bad("must be at most 2048 bytes"));
        }
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            bad("must start with http:// (TLS is not built in; put a local proxy in front)")
        })?;
        if rest
            .bytes()
            .any(|b| b.is_ascii_control() || b == b' ' || !b.is_ascii())
        {
            return Err(bad("must be printable ASCII without spaces"));
        }
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) {
            return Err(bad("must not have a query or fragment"));
        }
        if authority.contains('@') {
            return Err(bad("must not hold credentials; use `openai.api_key`"));
        }
        let (host, port) = split_host_port(authority).ok_or_else(|| {
            bad("must name a host and optionally a port, as in http://127.0.0.1:8000")
        })?;
        let prefix = path.trim_end_matches('/').to_owned();
        if prefix.ends_with("/v1") {
            return Err(bad(
                "must not end in /v1: the sidecar appends /v1/embeddings and /v1/completions",
            ));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            prefix,
        })
    }

    /// `host:port` as written in a `Host` header and in error messages.
    pub(crate) fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The request target for an API path such as `/v1/embeddings`.
    pub(crate) fn target(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }
}

fn split_host_port(authority: &str) -> Option<(&str, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || (!authority.starts_with('[') && host.contains(':')) {
        return None;
    }
    let port = match port {
        None => 80,
        Some(p) => p.parse::<u16>().ok().filter(|&p| p != 0)?,
    };
    Some((host, port))
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_prefixes() {
        for (url, host, port, prefix, shown) in [
            (
                "http://127.0.0.1:8000",
                "127.0.0.1",
                8000,
                "",
                "http://127.0.0.1:8000",
            ),
            ("http://gpu-1/", "gpu-1", 80, "", "http://gpu-1:80"),
            (
                "http://[::1]:9/llm/",
                "::1",
                9,
                "/llm",
                "http://[::1]:9/llm",
            ),
            ("http://h:1/a/b", "h", 1, "/a/b", "http://h:1/a/b"),
        ] {
            let e = Endpoint::parse(url).unwrap();
            assert_eq!(
                (e.host.as_str(), e.port, e.prefix.as_str()),
                (host, port, prefix)
            );
            assert_eq!(e.to_string(), shown);
        }
        assert_eq!(
            Endpoint::parse("http://h:1/a")
                .unwrap()
                .target("/v1/embeddings"),
            "/a/v1/embeddings"
        );
    }

    #[test]
    fn refuses_what_it_cannot_reach() {
        for (url, needle) in [
            ("https://h", "http://"),
            ("h:80", "http://"),
            ("http://", "host"),
            ("http://:80", "host"),
            ("http://h:0", "host"),
            ("http://h:70000", "host"),
            ("http://h:x", "host"),
            ("http://::1:80", "host"),
            ("http://[::1", "host"),
            ("http://u:p@h", "credentials"),
            ("http://h/a?b", "query"),
            ("http://h/v1", "/v1"),
            ("http://h/x y", "spaces"),
            ("http://h\r\nX: y", "spaces"),
        ] {
            let message = Endpoint::parse(url).unwrap_err().to_string();
            assert!(
                message.contains(needle),
                "{url}: {message:?} lacks {needle:?}"
            );
        }
    }
}
