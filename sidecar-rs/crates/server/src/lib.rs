//! The Shoal sidecar: serves the models resident on one accelerator over a Unix socket, with
//! length-prefixed MessagePack frames as specified in `docs/sidecar-protocol.md`.
//!
//! `main` parses [`Options`] and calls [`run`]; tests start a [`Sidecar`] in-process.

mod adapters;
mod calls;
mod connection;
mod error;
mod frame;
#[cfg(test)]
mod fuzz;
mod generation;
mod handler;
mod heads;
mod job;
mod msgpack;
mod openai_load;
mod options;
mod otlp_http;
mod registry;
mod request;
mod response;
mod runner;
pub mod telemetry;
mod trace;
mod work;

use std::future::Future;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use shoal_sidecar_candle::CandleRuntime;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use error::{ErrorCode, ProtocolError, ServerError};
pub use options::{BackendKind, ModelArg, Options, SimDevice};

use connection::ConnectionLimits;
use handler::State;
use registry::Registry;
use request::Limits;
use runner::LoadSpec;

/// A sidecar that is bound and has its `--model`s loaded, but is not accepting yet.
pub struct Sidecar {
    listener: UnixListener,
    socket: PathBuf,
    /// Device and inode of the socket file we created, so that shutdown removes only ours.
    socket_id: Option<(u64, u64)>,
    state: Arc<State>,
    connection_limits: ConnectionLimits,
    grace: std::time::Duration,
}

impl Sidecar {
    /// Opens the device, binds the socket (removing a stale one) and preloads every
    /// `--model`. Fails if any of that fails.
    pub async fn start(options: Options) -> Result<Self, ServerError> {
        let runtime = CandleRuntime::open(options.device).map_err(ServerError::Device)?;
        if options.sim_device == SimDevice::Shared {
            shoal_sidecar_sim::share_one_device();
        }
        let listener = bind(&options.socket)?;
        let socket_id = std::fs::metadata(&options.socket)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let state = Arc::new(State {
            registry: Registry::new(runtime, options.model_queue),
            limits: Limits {
                max_batch_items: options.max_batch_items,
            },
            started: Instant::now(),
            device: options.device.to_string(),
            backend: options.backend,
        });
        let sidecar = Self {
            listener,
            socket: options.socket.clone(),
            socket_id,
            state,
            connection_limits: ConnectionLimits {
                max_frame_bytes: options.max_frame_bytes,
                max_in_flight: options.max_in_flight,
            },
            grace: options.shutdown_grace(),
        };
        for model in &options.models {
            let handle = sidecar
                .state
                .registry
                .load(
                    &model.name,
                    LoadSpec::preload(options.backend, model.dir.clone()),
                    1,
                )
                .await
                .map_err(|error| {
                    sidecar.remove_socket();
                    ServerError::Preload {
                        name: model.name.clone(),
                        error,
                    }
                })?;
            tracing::info!(
                model = model.name,
                dir = %model.dir.display(),
                backend = options.backend.as_str(),
                memory_bytes = handle.info.memory_bytes,
                load_us = handle.info.load_us,
                "preloaded a model"
            );
        }
        Ok(sidecar)
    }

    /// The socket path clients connect to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Accepts connections until `shutdown` completes, then stops accepting, lets in-flight
    /// requests finish (up to the grace period), unloads every model and removes the socket.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), ServerError> {
        let stop = CancellationToken::new();
        let connections = TaskTracker::new();
        tracing::info!(socket = %self.socket.display(), "accepting connections");
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        connections.spawn(connection::serve(
                            stream,
                            Arc::clone(&self.state),
                            self.connection_limits,
                            stop.child_token(),
                        ));
                    }
                    Err(e) => {
                        // Typically EMFILE; refusing one client must not end the sidecar.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                },
                () = &mut shutdown => break,
            }
        }
        tracing::info!("shutting down: finishing in-flight requests");
        self.remove_socket();
        stop.cancel();
        connections.close();
        if tokio::time::timeout(self.grace, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_ms = self.grace.as_millis() as u64,
                "in-flight requests did not finish within the grace period"
            );
        } else {
            self.state.registry.unload_all().await;
        }
        tracing::info!("stopped");
        Ok(())
    }

    fn remove_socket(&self) {
        let ours = std::fs::metadata(&self.socket)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if ours.is_some() && ours == self.socket_id {
            let _ = std::fs::remove_file(&self.socket);
        }
    }
}

/// Binds `path`, first removing a socket file nobody accepts on.
fn bind(path: &Path) -> Result<UnixListener, ServerError> {
    let socket_error = |source| ServerError::Socket {
        path: path.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(ServerError::SocketInUse(path.to_owned())),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    tracing::info!(socket = %path.display(), "removing a stale socket");
                    std::fs::remove_file(path).map_err(socket_error)?;
                }
                Err(e) => return Err(socket_error(e)),
            }
        }
        Ok(_) => return Err(ServerError::NotASocket(path.to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(socket_error(e)),
    }
    UnixListener::bind(path).map_err(socket_error)
}

/// Installs the SIGTERM/SIGINT handlers (and, with `exit_on_stdin_eof`, the stdin watcher)
/// now, and returns a future that completes when one of them fires. Installing eagerly means a
/// signal that arrives during preload is kept and acted on as soon as serving starts, instead
/// of killing the process with the default action.
fn shutdown_signal(exit_on_stdin_eof: bool) -> impl Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (stdin_closed_tx, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    if exit_on_stdin_eof {
        // A plain thread rather than tokio's stdin: a blocking read on tokio's pool would keep
        // the runtime from shutting down while stdin is still open.
        let spawned = std::thread::Builder::new()
            .name("stdin-watch".into())
            .spawn(move || {
                let mut sink = [0u8; 4096];
                let mut stdin = std::io::stdin().lock();
                while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
                let _ = stdin_closed_tx.send(());
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot watch stdin; --exit-on-stdin-eof is inactive");
        }
    } else {
        drop(stdin_closed_tx);
    }
    let signals = signal(SignalKind::terminate()).and_then(|term| {
        let int = signal(SignalKind::interrupt())?;
        Ok((term, int))
    });
    async move {
        let stdin_closed = async {
            if stdin_closed.await.is_ok() {
                tracing::info!("stdin closed");
            } else {
                std::future::pending::<()>().await;
            }
        };
        let (mut term, mut int) = match signals {
            Ok(signals) => signals,
            Err(e) => {
                tracing::error!(error = %e, "cannot install signal handlers");
                return stdin_closed.await;
            }
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM"),
            _ = int.recv() => tracing::info!("SIGINT"),
            () = stdin_closed => {}
        }
    }
}

/// Starts the sidecar, writes `ready <socket>` to stdout, and serves until SIGTERM/SIGINT
/// (or stdin EOF with `--exit-on-stdin-eof`).
pub async fn run(options: Options) -> Result<(), ServerError> {
    let shutdown = shutdown_signal(options.exit_on_stdin_eof);
    let sidecar = Sidecar::start(options).await?;
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ready {}", sidecar.socket().display()).map_err(ServerError::Stdout)?;
        stdout.flush().map_err(ServerError::Stdout)?;
    }
    sidecar.serve(shutdown).await
}
