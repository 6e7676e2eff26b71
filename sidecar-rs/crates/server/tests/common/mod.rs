//! An in-process sidecar on a temporary socket and a raw-frame client for the tests.
// Each test binary compiles this module and uses a different subset of it.
#![allow(dead_code)]

#[path = "../../../../test-support/minilm.rs"]
mod minilm;
pub use minilm::minilm_dir;
#[path = "../../../../test-support/fixtures.rs"]
pub mod fixtures;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use rmpv::Value as V;
use shoal_sidecar::{ModelArg, Options, ServerError, Sidecar};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Upper bound on any single wait, so that a hang fails the test instead of stalling CI.
pub const PATIENCE: Duration = Duration::from_secs(120);

pub struct TestSidecar {
    pub socket: PathBuf,
    _dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), ServerError>>>,
}

impl TestSidecar {
    /// Starts a sidecar with `models` (name → MiniLM) preloaded.
    pub async fn start(models: &[&str]) -> Self {
        Self::start_with(models, |_| {}).await
    }

    pub async fn start_with(models: &[&str], tweak: impl FnOnce(&mut Options)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sidecar.sock");
        let mut options = Options::new(&socket);
        options.models = models
            .iter()
            .map(|name| ModelArg {
                name: (*name).to_owned(),
                dir: minilm_dir(),
            })
            .collect();
        tweak(&mut options);
        let sidecar = Sidecar::start(options).await.expect("sidecar starts");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(sidecar.serve(async {
            let _ = stopped.await;
        }));
        Self {
            socket,
            _dir: dir,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.socket).await
    }

    /// Stops the sidecar and checks it shut down cleanly.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(PATIENCE, self.task.take().unwrap())
            .await
            .expect("sidecar stops in time")
            .expect("serve task did not panic")
            .expect("serve returned Ok");
        assert!(!self.socket.exists(), "socket file removed at shutdown");
    }
}

/// A request map from `id`, `op` and extra fields.
pub fn req(id: u64, op: &str, fields: &[(&str, V)]) -> V {
    let mut entries = vec![(V::from("id"), V::from(id)), (V::from("op"), V::from(op))];
    entries.extend(fields.iter().map(|(k, v)| (V::from(*k), v.clone())));
    V::Map(entries)
}

pub fn strs<S: AsRef<str>>(items: &[S]) -> V {
    V::Array(items.iter().map(|s| V::from(s.as_ref())).collect())
}

pub fn encode(value: &V) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value).unwrap();
    out
}

/// `value[key]`, panicking with the whole map when absent.
pub fn get<'a>(value: &'a V, key: &str) -> &'a V {
    value
        .as_map()
        .unwrap_or_else(|| panic!("not a map: {value}"))
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no `{key}` in {value}"))
}

pub fn id_of(value: &V) -> u64 {
    get(value, "id").as_u64().expect("id is a uint")
}

/// Asserts `response` is an `ok: true` response for `id`.
pub fn assert_ok(response: &V, id: u64) {
    assert_eq!(id_of(response), id, "{response}");
    assert_eq!(get(response, "ok").as_bool(), Some(true), "{response}");
}

/// Asserts `response` is an error with `code` for `id`; returns the message.
pub fn assert_error(response: &V, id: u64, code: &str) -> String {
    assert_eq!(id_of(response), id, "{response}");
    assert_eq!(get(response, "ok").as_bool(), Some(false), "{response}");
    let error = get(response, "error");
    assert_eq!(get(error, "code").as_str(), Some(code), "{response}");
    let keys: Vec<_> = response
        .as_map()
        .unwrap()
        .iter()
        .filter_map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        keys.len(),
        3,
        "an error has id, ok and error only: {response}"
    );
    get(error, "message").as_str().unwrap().to_owned()
}

/// Embedding rows decoded from the `embeddings` bin.
pub fn rows(response: &V) -> Vec<Vec<f32>> {
    let dim = get(response, "dim").as_u64().unwrap() as usize;
    let count = get(response, "count").as_u64().unwrap() as usize;
    let V::Binary(bytes) = get(response, "embeddings") else {
        panic!("embeddings is not bin: {response}");
    };
    assert_eq!(bytes.len(), count * dim * 4);
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect::<Vec<_>>()
        .chunks(dim)
        .map(<[f32]>::to_vec)
        .collect()
}

pub fn norm(row: &[f32]) -> f64 {
    row.iter()
        .map(|x| f64::from(*x).powi(2))
        .sum::<f64>()
        .sqrt()
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    dot / (norm(a) * norm(b))
}

pub struct Client {
    pub reader: OwnedReadHalf,
    pub writer: OwnedWriteHalf,
}

impl Client {
    pub async fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket).await.expect("connects");
        let (reader, writer) = stream.into_split();
        Self { reader, writer }
    }

    pub async fn send(&mut self, value: &V) {
        self.send_body(&encode(value)).await;
    }

    pub async fn send_body(&mut self, body: &[u8]) {
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        self.writer.write_all(&frame).await.expect("writes");
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.expect("writes");
    }

    /// The next response frame, whatever its id.
    pub async fn recv(&mut self) -> V {
        tokio::time::timeout(PATIENCE, self.try_recv())
            .await
            .expect("a response within PATIENCE")
            .expect("a frame, not end of stream")
    }

    /// The next frame, or `None` at end of stream.
    pub async fn try_recv(&mut self) -> Option<V> {
        let mut prefix = [0u8; 4];
        match self.reader.read_exact(&mut prefix).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => panic!("read failed: {e}"),
        }
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        self.reader.read_exact(&mut body).await.expect("whole body");
        let mut slice = &body[..];
        let value = rmpv::decode::read_value(&mut slice).expect("response is MessagePack");
        assert!(slice.is_empty(), "one value per frame");
        assert!(value.is_map(), "responses are maps");
        Some(value)
    }

    pub async fn call(&mut self, value: &V) -> V {
        self.send(value).await;
        self.recv().await
    }
}
