//! Accepting client connections. axum's `serve` has no header-read, body
//! or idle timeout and no bound on open connections, so a few thousand
//! silent sockets could take every file descriptor. This loop:
//!
//! * admits at most [`Capacity`] connections at once — one beyond that gets
//!   a fast `503` with `Retry-After` and is closed, instead of starving
//!   everyone;
//! * cuts a client that is slow to send its request head, pauses inside
//!   its body, or sits idle between keep-alive requests ([`watched`],
//!   [`body`]);
//! * tells HTTP/1.1 from HTTP/2 by the first bytes ([`sniff`]) and serves
//!   each with hyper's builder for that version, so an HTTP/1.1
//!   connection keeps an 8 KB read buffer and no HTTP/2 state;
//! * on shutdown stops accepting, lets in-flight requests finish within
//!   the grace period (idle and half-sent connections close at once or at
//!   their timeout, never later than the grace), and at its end tells
//!   open streams to finish with their protocol's error event (so their
//!   log rows are written) before the rest is dropped.

pub mod body;
mod capacity;
mod shutdown;
mod sniff;
pub mod watched;

use axum::{Router, body::Body, extract::ConnectInfo};
use hyper::{
    body::Incoming,
    server::conn::{http1, http2},
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    service::TowerToHyperService,
};
use std::{net::SocketAddr, pin::Pin, sync::Arc, time::Duration};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::watch,
    task::JoinSet,
};
use tower::ServiceExt;

pub use capacity::{Budget, Capacity, raise_fd_limit};
pub use shutdown::Shutdown;

use crate::config::ClientLimits;
use watched::{Activity, Timeouts, Watched};

/// After the grace period, how long open streams get to write their
/// error event before their connections are dropped.
const FINAL_FLUSH: Duration = Duration::from_secs(1);

/// The client side of the gateway: its connection budget and limits, and
/// the shutdown grace its open streams wait for.
pub struct Clients {
    pub capacity: Capacity,
    pub shutdown: Shutdown,
    pub limits: ClientLimits,
    /// How long in-flight requests may finish after the listener stops.
    pub grace: Duration,
}

impl Clients {
    /// `behind_proxy`: every connection comes from the trusted proxy.
    pub fn new(limits: ClientLimits, behind_proxy: bool, grace: Duration) -> Self {
        let budget = Budget::of(&limits, behind_proxy);
        Self { capacity: Capacity::new(budget), shutdown: Shutdown::default(), limits, grace }
    }
}

/// Serves `app` on `listener` until `stop` turns true, then shuts down as
/// the module explains.
pub async fn serve_until_stopped(
    app: Router,
    clients: &Clients,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let limits = clients.limits;
    let (closing_tx, closing) = watch::channel(false);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = until_true(&mut stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let _ = tcp.set_nodelay(true);
                    match clients.capacity.admit(peer.ip()) {
                        Ok(slot) => {
                            connections.spawn(serve_connection(tcp, peer, app.clone(), limits, closing.clone(), slot));
                        }
                        Err(full) => {
                            connections.spawn(capacity::refuse(tcp, full));
                        }
                    }
                }
                // Out of descriptors, or a connection reset before it was
                // accepted: keep serving the ones there are.
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a client connection failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    tracing::debug!(open = connections.len(), "no new connections; waiting for in-flight requests");
    let _ = closing_tx.send(true);
    let grace = clients.grace;
    if tokio::time::timeout(grace, drain(&mut connections)).await.is_err() {
        let open = connections.len();
        tracing::warn!(grace_ms = grace.as_millis() as u64, open, "grace period over; ending open streams");
        clients.shutdown.grace_over();
        let _ = tokio::time::timeout(FINAL_FLUSH, drain(&mut connections)).await;
        connections.shutdown().await;
    }
    Ok(())
}

/// One client connection, HTTP/1.1 or HTTP/2, until it ends, times out,
/// or (after `closing`) finishes its in-flight requests.
async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: ClientLimits,
    mut closing: watch::Receiver<bool>,
    slot: capacity::Slot,
) {
    let activity = Arc::new(Activity::default());
    let timeouts = Timeouts { head: limits.header_read_timeout, idle: limits.keepalive_timeout };
    let socket = Watched::new(tcp, activity.clone(), timeouts);
    // Before a request is in flight there is nothing to finish on shutdown.
    let (version, io) = tokio::select! {
        sniffed = sniff::sniff(socket) => match sniffed {
            Ok(sniffed) => sniffed,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "client connection ended before its first request");
                return;
            }
        },
        _ = until_true(&mut closing) => return,
    };
    let watched = activity.clone();
    let reserved = slot.reserved;
    let service = tower::service_fn(move |req: http::Request<Incoming>| {
        let in_flight = activity.begin();
        let refused = reserved && capacity::is_inference(req.method(), req.uri().path());
        let mut req = req.map(|b| Body::new(body::TimedBody::new(b, limits.body_read_timeout, limits.body_deadline)));
        req.extensions_mut().insert(ConnectInfo(peer));
        let app = app.clone();
        async move {
            // A reserved slot serves the operator's side only.
            let resp = if refused { capacity::refused_on_reserve() } else { app.oneshot(req).await? };
            Ok::<_, std::convert::Infallible>(resp.map(|b| Body::new(body::Tracked::new(b, in_flight))))
        }
    });
    let (io, service) = (TokioIo::new(io), TowerToHyperService::new(service));
    let served = Served { peer, watched, closing };
    match version {
        sniff::Version::Http1 => {
            // The socket keeps the time itself (`watched`).
            let conn = http1::Builder::new().header_read_timeout(None).serve_connection(io, service);
            served.until_closed(conn, http1::Connection::graceful_shutdown).await;
        }
        // Rare (agents speak HTTP/1.1): its larger state is boxed, so it
        // does not size every HTTP/1 connection's task.
        sniff::Version::Http2 => {
            let conn = http2::Builder::new(TokioExecutor::new()).serve_connection(io, service);
            Box::pin(served.until_closed(conn, http2::Connection::graceful_shutdown)).await;
        }
    }
}

/// What a served connection needs to end well.
struct Served {
    peer: SocketAddr,
    watched: Arc<Activity>,
    closing: watch::Receiver<bool>,
}

impl Served {
    /// Drives `conn` until it ends, or — once the gateway is closing —
    /// until its in-flight requests have finished (`graceful` tells it to
    /// take no more).
    async fn until_closed<C, E>(mut self, conn: C, graceful: fn(Pin<&mut C>))
    where
        C: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let peer = self.peer;
        tokio::pin!(conn);
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(%peer, error = %e, "client connection ended");
                }
            }
            _ = until_true(&mut self.closing) => {
                // Nothing in flight: nothing to finish (a half-sent head or a
                // socket that never spoke would otherwise wait for its timeout).
                if self.watched.is_idle() {
                    return;
                }
                graceful(conn.as_mut());
                // Only the connection from here on: its in-flight requests finish.
                if let Err(e) = conn.as_mut().await {
                    tracing::debug!(%peer, error = %e, "client connection ended during shutdown");
                }
            }
        }
    }
}

/// Resolves once `flag` is true (or its sender is gone).
async fn until_true(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|v| *v).await;
}

async fn drain(connections: &mut JoinSet<()>) {
    while connections.join_next().await.is_some() {}
}
