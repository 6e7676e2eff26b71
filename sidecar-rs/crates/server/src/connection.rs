//! One client connection: a reader that spawns a task per request and a writer that sends
//! responses in whatever order they finish.

use std::sync::Arc;

use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::calls::generate::Streams;
use crate::error::{ErrorCode, ProtocolError};
use crate::frame::{FrameError, read_frame, write_frame};
use crate::handler::{State, handle};
use crate::response;

/// Finished responses waiting for the writer. Small: when the client stops reading, request
/// tasks block here, hold their in-flight permits, and the reader stops taking new frames.
const WRITE_QUEUE: usize = 64;

/// Limits of one connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub max_frame_bytes: u32,
    pub max_in_flight: usize,
}

/// Serves `stream` until the client closes it, sends an untrustworthy frame, or `shutdown`
/// fires; then waits for its in-flight requests to be answered.
pub(crate) async fn serve(
    stream: UnixStream,
    state: Arc<State>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let (read_half, write_half) = stream.into_split();
    let mut reader = BufReader::new(read_half);
    let (responses, queue) = mpsc::channel::<Vec<u8>>(WRITE_QUEUE);
    let writer = tokio::spawn(write_loop(write_half, queue));
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
    let requests = TaskTracker::new();
    let streams = Arc::new(Streams::default());

    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&in_flight).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let frame = tokio::select! {
            frame = read_frame(&mut reader, limits.max_frame_bytes) => frame,
            () = shutdown.cancelled() => break,
        };
        match frame {
            Ok(Some(body)) => {
                let state = Arc::clone(&state);
                let responses = responses.clone();
                let streams = Arc::clone(&streams);
                requests.spawn(async move {
                    let frame = handle(state, body, &streams, &responses).await;
                    // A failed send means the writer is gone with the client; nothing to do.
                    let _ = responses.send(frame).await;
                    drop(permit);
                });
            }
            Ok(None) => {
                // The client is gone: its sequences would generate for nobody.
                streams.cancel_all();
                break;
            }
            Err(FrameError::TooLarge { len, max }) => {
                tracing::warn!(len, max, "closing a connection after an oversized frame");
                let error = ProtocolError::new(
                    ErrorCode::FrameTooLarge,
                    format!("frame of {len} bytes is larger than the limit of {max} bytes"),
                );
                let _ = responses.send(response::error(0, &error)).await;
                break;
            }
            Err(e) => {
                tracing::debug!(error = %e, "connection ended");
                streams.cancel_all();
                break;
            }
        }
    }

    requests.close();
    requests.wait().await;
    drop(responses);
    let _ = writer.await;
}

async fn write_loop(write_half: OwnedWriteHalf, mut queue: mpsc::Receiver<Vec<u8>>) {
    let mut writer = BufWriter::new(write_half);
    while let Some(frame) = queue.recv().await {
        if write_frame(&mut writer, &frame).await.is_err() {
            return;
        }
        // Coalesce whatever else is ready into the same flush.
        while let Ok(frame) = queue.try_recv() {
            if write_frame(&mut writer, &frame).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}
