//! A real llama-cpp-python OpenAI-compatible server serving SmolLM2-135M-Instruct, for the tests
//! of the sidecar's `openai` backend (included with `#[path]` like `minilm.rs`).
//!
//! Its includer also includes `smollm2.rs` as `mod smollm2`, which locates the GGUF.
//!
//! Each server runs under a shell that kills it when the test process's end of its stdin pipe
//! closes, so a test binary that exits (or panics, or is killed) never leaves one behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::smollm2::smollm2_gguf;

/// Longest wait for a server to load the model and answer; generous because the machines
/// running the suite are small and busy.
const STARTUP: Duration = Duration::from_secs(240);

fn shoal_home() -> PathBuf {
    std::env::var_os("SHOAL_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is not set")).join(".cache/shoal")
        })
}

/// `$SHOAL_LLAMA_PYTHON`, else `$SHOAL_HOME/venv-llama/bin/python`. Panics (never skips) when
/// llama-cpp-python is not installed.
pub fn llama_python() -> PathBuf {
    let python = std::env::var_os("SHOAL_LLAMA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| shoal_home().join("venv-llama/bin/python"));
    assert!(
        python.is_file(),
        "llama-cpp-python not found at {}; run `bash tools/setup/llama-cpp-python.sh` \
         (or tools/setup/bootstrap.sh), or set SHOAL_LLAMA_PYTHON",
        python.display()
    );
    python
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What a server is started for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `/v1/embeddings`, mean-pooled (SmolLM2's GGUF names no pooling of its own).
    Embedding,
    /// `/v1/completions` and `/v1/chat/completions`.
    Generate,
}

/// A running server; dropping it stops it.
pub struct LlamaServer {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The name it serves the model under.
    pub alias: String,
    child: Child,
    /// The server's stderr, read when it fails to start.
    log: PathBuf,
    /// See [`LlamaServer::exclusive`]. Only the tests that share a server across threads (the
    /// openai crate's) take it; the server crate's includer never does.
    #[allow(dead_code)]
    turn: std::sync::Mutex<()>,
}

impl LlamaServer {
    /// Starts a server for `mode` serving SmolLM2 as `alias`, with `api_key` required when
    /// given, and waits until `/v1/models` answers.
    pub fn start(mode: Mode, alias: &str, api_key: Option<&str>) -> Self {
        let python = llama_python();
        let gguf = smollm2_gguf();
        let port = free_port();
        let mut args: Vec<String> = vec![
            "-m".into(),
            "llama_cpp.server".into(),
            "--model".into(),
            gguf.display().to_string(),
            "--model_alias".into(),
            alias.into(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
            "--n_ctx".into(),
            "2048".into(),
            "--n_threads".into(),
            "1".into(),
            // Its default stops a running stream whenever another request arrives.
            "--interrupt_requests".into(),
            "false".into(),
            "--verbose".into(),
            "false".into(),
        ];
        if mode == Mode::Embedding {
            args.extend(
                [
                    "--embedding",
                    "true",
                    "--kv_overrides",
                    "llama.pooling_type=int:1",
                ]
                .map(String::from),
            );
        }
        if let Some(key) = api_key {
            args.extend(["--api_key".to_owned(), key.to_owned()]);
        }
        let log = std::env::temp_dir().join(format!("shoal-llama-server-{port}.log"));
        // The shell kills the server once its stdin (our pipe) reaches end of file.
        let child = Command::new("sh")
            .arg("-c")
            .arg("\"$@\" & server=$!; cat >/dev/null; kill \"$server\" 2>/dev/null; wait \"$server\"")
            .arg("sh")
            .arg(&python)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("a log file in the temp dir"))
            .spawn()
            .expect("sh starts");
        let mut server = Self {
            url: format!("http://127.0.0.1:{port}"),
            alias: alias.to_owned(),
            child,
            log,
            turn: std::sync::Mutex::new(()),
        };
        server.wait_ready(port, api_key);
        server
    }

    fn wait_ready(&mut self, port: u16, api_key: Option<&str>) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("llama-cpp-python server exited with {status} before it was ready:\n{log}");
            }
            if let Ok((200, _)) = http(port, "GET", "/v1/models", None, api_key) {
                return;
            }
            assert!(
                started.elapsed() < STARTUP,
                "llama-cpp-python server not ready on port {port} after {STARTUP:?}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Held by a test that compares greedy text with the server's own, so that no other test
    /// sharing the server changes its KV cache in between (see [`LlamaServer::json_warm`]). A
    /// test that panicked while holding it does not stop the others.
    #[allow(dead_code)]
    pub fn exclusive(&self) -> std::sync::MutexGuard<'_, ()> {
        self.turn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`LlamaServer::json`] as the server answers a request it has just seen. llama-cpp-python
    /// reuses the KV cache of the prompt it read last and then evaluates only the last prompt
    /// token afresh, so the first request for a prompt and every later one take different float
    /// paths and may break a near-tie differently (seen on an AVX2 build); asking twice gives
    /// the answer of the path the next identical request, the one under test, will take.
    pub fn json_warm(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        self.json(path, body);
        self.json(path, body)
    }

    /// A JSON request straight to the server, bypassing the sidecar, for comparisons.
    pub fn json(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        let (status, text) = http(self.port(), "POST", path, Some(&body.to_string()), None)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// One HTTP/1.1 request with `Connection: close`; returns the status and the body, which the
/// server sends with `Content-Length` for JSON.
fn http(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    api_key: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let body = body.unwrap_or("");
    let auth = api_key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut length = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut text = String::new();
    match length {
        Some(n) => {
            let mut bytes = vec![0; n];
            reader.read_exact(&mut bytes)?;
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        None => {
            reader.read_to_string(&mut text)?;
        }
    }
    Ok((status, text))
}
