//! Spans reach an OTLP/HTTP collector, under the trace contexts the request carried.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

const BINARY: &str = env!("CARGO_BIN_EXE_shoal-sidecar");

struct Export {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// A collector on a random port that records every POST and answers 200.
fn collector() -> (u16, mpsc::Receiver<Export>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut content_type = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap();
                match name.to_ascii_lowercase().as_str() {
                    "content-type" => content_type = value.trim().to_owned(),
                    "content-length" => length = value.trim().parse().unwrap(),
                    _ => {}
                }
            }
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            );
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let _ = tx.send(Export {
                path,
                content_type,
                body,
            });
        }
    });
    (port, rx)
}

fn spawn(socket: &str, env: &[(&str, String)]) -> Child {
    let mut command = Command::new(BINARY);
    command
        .args([
            "--socket",
            socket,
            "--model",
            &format!("minilm={}", minilm_dir().display()),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_SERVICE_NAME",
    ] {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim_end(), format!("ready {socket}"));
    child
}

fn terminate_and_wait(mut child: Child) {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return;
        }
        assert!(Instant::now() < deadline, "sidecar did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const A: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const B: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const C: &str = "00-11111111111111111111111111111111-2222222222222222-01";

/// Every span in OTLP/JSON exports received within `wait`, with its resource's service name.
fn json_spans(
    exports: &mpsc::Receiver<Export>,
    want: usize,
    wait: Duration,
) -> Vec<(String, serde_json::Value)> {
    let deadline = Instant::now() + wait;
    let mut spans = Vec::new();
    while spans.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(export) = exports.recv_timeout(left) else {
            break;
        };
        assert_eq!(export.path, "/v1/traces");
        assert_eq!(export.content_type, "application/json");
        let body: serde_json::Value = serde_json::from_slice(&export.body).unwrap();
        for rs in body["resourceSpans"].as_array().unwrap() {
            let service = rs["resource"]["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == "service.name")
                .map(|a| a["value"]["stringValue"].as_str().unwrap().to_owned())
                .unwrap_or_default();
            for ss in rs["scopeSpans"].as_array().unwrap() {
                for span in ss["spans"].as_array().unwrap() {
                    spans.push((service.clone(), span.clone()));
                }
            }
        }
    }
    spans
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embed_spans_are_exported_as_json_under_each_distinct_parent() {
    let (port, exports) = collector();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let child = spawn(
        socket.to_str().unwrap(),
        &[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("http://127.0.0.1:{port}"),
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".into()),
            ("OTEL_SERVICE_NAME", "sidecar-under-test".into()),
        ],
    );
    let mut client = Client::connect(&socket).await;
    let response = client
        .call(&req(
            1,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", strs(&["one", "two", "three"])),
                ("traceparents", strs(&[A, B, A])),
                ("traceparent", V::from(C)),
            ],
        ))
        .await;
    assert_ok(&response, 1);

    let spans =
        tokio::task::spawn_blocking(move || json_spans(&exports, 3, Duration::from_secs(10)))
            .await
            .unwrap();
    let mut embeds: Vec<_> = spans
        .iter()
        .filter(|(_, s)| s["name"] == "sidecar.embed")
        .collect();
    assert_eq!(embeds.len(), 3, "one span per distinct parent: {spans:?}");
    embeds.sort_by_key(|(_, s)| s["traceId"].as_str().unwrap().to_owned());
    let expected = [
        ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"),
        ("11111111111111111111111111111111", "2222222222222222"),
        ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"),
    ];
    let start = &embeds[0].1["startTimeUnixNano"];
    for ((service, span), (trace, parent)) in embeds.iter().zip(expected) {
        assert_eq!(service, "sidecar-under-test");
        assert_eq!(span["traceId"].as_str().unwrap().to_lowercase(), trace);
        assert_eq!(
            span["parentSpanId"].as_str().unwrap().to_lowercase(),
            parent
        );
        assert_eq!(
            &span["startTimeUnixNano"], start,
            "same timing under every parent"
        );
        let attribute = |key: &str| {
            span["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == key)
                .map(|a| a["value"].clone())
                .unwrap_or_else(|| panic!("no attribute {key}: {span}"))
        };
        assert_eq!(attribute("shoal.model")["stringValue"], "minilm");
        assert_eq!(
            attribute("shoal.batch_size")["intValue"]
                .to_string()
                .trim_matches('"'),
            "3"
        );
        let tokens: u64 = attribute("shoal.tokens")["intValue"]
            .to_string()
            .trim_matches('"')
            .parse()
            .unwrap();
        assert!(tokens >= 9, "{tokens}");
    }
    drop(client);
    terminate_and_wait(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_spans_are_flushed_at_shutdown_over_protobuf() {
    let (port, exports) = collector();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let child = spawn(
        socket.to_str().unwrap(),
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("http://127.0.0.1:{port}/v1/traces"),
            ),
            // Long enough that only the shutdown flush can deliver the span in time.
            ("SHOAL_SIDECAR_OTLP_DELAY_MS", "600000".into()),
        ],
    );
    let mut client = Client::connect(&socket).await;
    let response = client
        .call(&req(
            1,
            "embed",
            &[
                ("model", V::from("minilm")),
                ("inputs", strs(&["flush me"])),
                ("traceparents", strs(&[A])),
            ],
        ))
        .await;
    assert_ok(&response, 1);
    assert!(
        exports.recv_timeout(Duration::from_millis(500)).is_err(),
        "nothing is exported before the schedule delay"
    );
    drop(client);
    tokio::task::spawn_blocking(move || terminate_and_wait(child))
        .await
        .unwrap();
    let export = exports
        .recv_timeout(Duration::from_secs(10))
        .expect("the span is flushed at shutdown");
    assert_eq!(export.content_type, "application/x-protobuf");
    let trace_id: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&A[3 + 2 * i..5 + 2 * i], 16).unwrap())
        .collect();
    assert!(
        export.body.windows(16).any(|w| w == trace_id.as_slice()),
        "the protobuf export carries the request's trace id"
    );
    assert!(
        export.body.windows(13).any(|w| w == b"sidecar.embed"),
        "the protobuf export carries the span name"
    );
}
