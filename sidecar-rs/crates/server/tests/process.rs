//! The process contract: ready line, stale and live sockets, stdin EOF, SIGTERM, JSON logs.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;

const BINARY: &str = env!("CARGO_BIN_EXE_shoal-sidecar");

struct Process {
    child: Child,
    stdout: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

fn spawn(args: &[&str], env: &[(&str, &str)]) -> Process {
    let mut command = Command::new(BINARY);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "RUST_LOG",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().expect("the sidecar binary starts");
    let (lines, stdout) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    Process {
        child,
        stdout,
        stderr,
    }
}

impl Process {
    fn ready_line(&self) -> String {
        self.stdout
            .recv_timeout(PATIENCE)
            .expect("the sidecar prints a line on stdout")
    }

    fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for exit; returns the status and everything written to stderr.
    fn wait(mut self, within: Duration) -> (ExitStatus, String) {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, self.stderr.join().unwrap());
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "sidecar still running after {within:?}; stderr: {}",
                    self.stderr.join().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn assert_json_lines(stderr: &str) {
    let mut lines = 0;
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stderr line is not JSON ({e}): {line}"));
        assert!(value.get("level").is_some(), "{line}");
        lines += 1;
    }
    assert!(lines > 0, "the sidecar logged nothing");
}

fn model_arg() -> String {
    format!("minilm={}", minilm_dir().display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_in_flight_requests_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let socket_arg = socket.to_str().unwrap();
    let process = spawn(&["--socket", socket_arg, "--model", &model_arg()], &[]);
    assert_eq!(process.ready_line(), format!("ready {socket_arg}"));

    let mut client = Client::connect(&socket).await;
    let inputs = strs(&vec!["a ".repeat(254); 24]);
    client
        .send(&req(
            1,
            "embed",
            &[("model", V::from("minilm")), ("inputs", inputs)],
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    process.terminate();
    let response = client.recv().await;
    assert_ok(&response, 1);
    assert_eq!(get(&response, "count").as_u64(), Some(24));
    let compute_us = get(&response, "compute_us").as_u64().unwrap();
    assert!(
        compute_us > 300_000,
        "the batch ({compute_us} µs) should still have been running when SIGTERM arrived"
    );
    assert!(
        client.try_recv().await.is_none(),
        "connection closed after draining"
    );

    let (status, stderr) = tokio::task::spawn_blocking(move || process.wait(PATIENCE))
        .await
        .unwrap();
    assert!(status.success(), "exit status {status}; stderr: {stderr}");
    assert!(!socket.exists(), "socket removed at exit");
    assert_json_lines(&stderr);
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(stderr.contains("preloaded a model"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_sockets_are_replaced_and_live_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let socket_arg = socket.to_str().unwrap();
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists(), "a stale socket file is left behind");

    let first = spawn(&["--socket", socket_arg], &[]);
    assert_eq!(first.ready_line(), format!("ready {socket_arg}"));
    assert_ok(
        &Client::connect(&socket)
            .await
            .call(&req(1, "health", &[]))
            .await,
        1,
    );

    let second = spawn(&["--socket", socket_arg], &[]);
    let (status, stderr) = second.wait(PATIENCE);
    assert!(!status.success());
    assert!(stderr.contains("live socket"), "{stderr}");
    // The refused sidecar must not have removed the live one's socket.
    assert_ok(
        &Client::connect(&socket)
            .await
            .call(&req(2, "health", &[]))
            .await,
        2,
    );

    first.terminate();
    let (status, stderr) = first.wait(PATIENCE);
    assert!(status.success(), "{stderr}");

    let regular = dir.path().join("not-a-socket");
    std::fs::write(&regular, "precious").unwrap();
    let third = spawn(&["--socket", regular.to_str().unwrap()], &[]);
    let (status, stderr) = third.wait(PATIENCE);
    assert!(!status.success());
    assert!(stderr.contains("not a socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&regular).unwrap(), "precious");
}

#[test]
fn exits_when_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let mut process = spawn(
        &["--socket", socket.to_str().unwrap(), "--exit-on-stdin-eof"],
        &[],
    );
    assert!(process.ready_line().starts_with("ready "));
    drop(process.child.stdin.take());
    let (status, stderr) = process.wait(Duration::from_secs(20));
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("stdin closed"), "{stderr}");
    assert!(!Path::new(&socket).exists());
}

#[test]
fn a_model_that_fails_to_load_fails_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let process = spawn(
        &[
            "--socket",
            socket.to_str().unwrap(),
            "--model",
            "broken=/nonexistent/model",
        ],
        &[],
    );
    let (status, stderr) = process.wait(PATIENCE);
    assert!(!status.success());
    assert!(stderr.contains("preloading model `broken`"), "{stderr}");
    assert!(!socket.exists(), "no socket left behind by a failed start");

    let bad_device = spawn(
        &["--socket", socket.to_str().unwrap(), "--device", "tpu"],
        &[],
    );
    let (status, stderr) = bad_device.wait(PATIENCE);
    assert!(!status.success());
    assert!(stderr.contains("cpu"), "{stderr}");
}
