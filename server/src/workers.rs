//! `omniroute serve`: one single-threaded runtime per worker thread, each
//! accepting on its own listener socket bound to the same address
//! (`SO_REUSEPORT`; the kernel spreads connections across them).
//!
//! Why not one multi-threaded runtime: there a request, the task driving
//! its upstream connection and the task writing its response often sit on
//! different threads, and every hand-over wakes a sleeping thread — on a
//! lightly loaded VM that wake-up costs more than the gateway's own work.
//! Here a connection's whole life (client request, upstream call from
//! the thread's own connection pool, streamed answer) stays on one
//! thread; the shared state (registries, engine, settings) is lock-free
//! or sharded as before. The main thread runs a small runtime of its own
//! for the background writers (request log, resilience state) and the
//! shutdown sequence.

use anyhow::{Context, bail};
use std::{
    net::{SocketAddr, ToSocketAddrs},
    sync::Arc,
    thread::JoinHandle,
};
use tokio::{
    net::{TcpListener, TcpSocket},
    sync::{mpsc, watch},
};

use crate::{config::Config, state::AppState};

/// Pending connections a listener queues before the kernel refuses more.
const BACKLOG: u32 = 1024;

/// Builds the state, serves on `config.workers` threads until SIGINT or
/// SIGTERM, then shuts down gracefully (see [`crate::serve`]).
pub fn serve(config: Config) -> anyhow::Result<()> {
    let main_rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let addr = resolve(&config.host, config.port)?;
    let workers = if cfg!(unix) { config.workers } else { 1 };
    let fd_limit = crate::listener::raise_fd_limit();
    let state = main_rt.block_on(crate::build_state(config))?;
    let budget = state.clients.capacity.budget;
    tracing::debug!(
        fd_limit,
        max_connections = budget.max,
        reserved = budget.reserved,
        per_client = budget.per_client,
        "client connection budget"
    );
    // A port held by anything — another gateway included — is refused
    // before the shared sockets are bound: SO_REUSEPORT alone would let a
    // second instance silently split the traffic with the first.
    drop(std::net::TcpListener::bind(addr).with_context(|| format!("binding {addr}"))?);

    let (stop_tx, stop_rx) = watch::channel(false);
    let (release_tx, release_rx) = watch::channel(false);
    let (served_tx, mut served_rx) = mpsc::channel::<()>(1);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let threads = (0..workers)
        .map(|i| {
            let worker = Worker {
                state: state.clone(),
                stop: stop_rx.clone(),
                release: release_rx.clone(),
                served: served_tx.clone(),
                ready: ready_tx.clone(),
            };
            std::thread::Builder::new()
                .name(format!("omniroute-worker-{i}"))
                .spawn(move || worker.run(addr, workers > 1))
                .context("starting a worker thread")
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    drop((served_tx, ready_tx));
    let bound = (0..workers).try_for_each(|_| ready_rx.recv().unwrap_or_else(|_| Err("a worker exited".into())));
    if let Err(e) = bound {
        let _ = stop_tx.send(true);
        let _ = release_tx.send(true);
        join(threads);
        bail!("binding {addr}: {e}");
    }
    // Under the binary's target, as before the workers: the one line an
    // operator (and the e2e harness) waits for stays on when the library's
    // own logs are turned down (`OMNIROUTE_LOG=info,server=warn`).
    tracing::info!(target: "omniroute", address = %addr, workers, "OmniRoute listening; dashboard at http://{addr}/");

    main_rt.block_on(async {
        crate::services::quotas::spawn_refresher(&state);
        tokio::select! {
            _ = crate::shutdown_signal() => {}
            _ = crate::memory::return_freed_memory() => {}
        }
        tracing::info!("shutting down: no new connections; waiting for in-flight requests");
        let _ = stop_tx.send(true);
        // Every worker drops its sender once its connections are done.
        while served_rx.recv().await.is_some() {}
        // The workers' runtimes stay up until the flush is done: database
        // connections opened on them are driven by them.
        crate::flush(&state).await;
    });
    let _ = release_tx.send(true);
    join(threads);
    Ok(())
}

/// What one worker thread holds.
struct Worker {
    state: Arc<AppState>,
    stop: watch::Receiver<bool>,
    release: watch::Receiver<bool>,
    /// Dropped when this worker's connections are done.
    served: mpsc::Sender<()>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
}

impl Worker {
    fn run(mut self, addr: SocketAddr, shared: bool) {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = self.ready.send(Err(e.to_string()));
                return;
            }
        };
        rt.block_on(async move {
            let listener = match bind(addr, shared) {
                Ok(l) => l,
                Err(e) => {
                    let _ = self.ready.send(Err(e.to_string()));
                    return;
                }
            };
            let _ = self.ready.send(Ok(()));
            if let Err(e) = crate::serve_until_stopped(&self.state, listener, self.stop).await {
                tracing::error!(error = %e, "a worker stopped serving");
            }
            drop(self.served);
            let _ = self.release.wait_for(|r| *r).await;
        });
    }
}

/// A listener on `addr`; `shared` lets every worker bind the same address.
fn bind(addr: SocketAddr, shared: bool) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    #[cfg(unix)]
    socket.set_reuseport(shared)?;
    #[cfg(not(unix))]
    let _ = shared;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// The first address `host:port` resolves to.
fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {host}"))?
        .next()
        .with_context(|| format!("{host} resolves to no address"))
}

fn join(threads: Vec<JoinHandle<()>>) {
    for t in threads {
        if t.join().is_err() {
            tracing::error!("a worker thread panicked");
        }
    }
}
