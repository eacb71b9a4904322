//! Write-behind persistence of the resilience engine, the session
//! affinity table and API key use: they send each breaker,
//! connection-health, pin or key-use change down a channel and never
//! wait; this task keeps only the latest change per breaker / connection /
//! pin / key and writes them. `flush` waits
//! until everything sent before it is stored (shutdown, tests).

use sea_orm::DatabaseConnection;
use std::collections::HashMap;
use tokio::sync::{mpsc, oneshot};

use crate::{
    db::{affinity, resilience as repo},
    resilience::{breaker::Breaker, connection_health::ConnectionHealth},
    routing::affinity::{Pin, PinKey},
};

/// A state change the write-behind writer persists.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Breaker(String, Breaker),
    Connection(String, ConnectionHealth),
    /// A pin made, moved or touched (`Some`), or dropped (`None`).
    Pin(PinKey, Option<Pin>),
    /// An API key was used at (epoch ms).
    KeyUsed(String, i64),
}

#[derive(Clone)]
pub struct ResilienceStore {
    flush_tx: mpsc::Sender<oneshot::Sender<()>>,
}

impl ResilienceStore {
    /// Starts the writer; the engine sends its changes to the returned sender.
    pub fn spawn(db: DatabaseConnection) -> (Self, mpsc::UnboundedSender<Change>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (flush_tx, flush_rx) = mpsc::channel(16);
        #[expect(
            clippy::disallowed_methods,
            reason = "the state writer lives as long as the process, off the request path"
        )]
        tokio::spawn(writer(db, rx, flush_rx));
        (Self { flush_tx }, tx)
    }

    /// Waits until every change sent before this call is stored.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.flush_tx.send(ack).await.is_ok() {
            let _ = done.await;
        }
    }
}

async fn writer(
    db: DatabaseConnection,
    mut changes: mpsc::UnboundedReceiver<Change>,
    mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
) {
    loop {
        let mut acks = Vec::new();
        let first = tokio::select! {
            c = changes.recv() => match c { Some(c) => Some(c), None => break },
            a = flushes.recv() => match a { Some(a) => { acks.push(a); None } None => break },
        };
        // Coalesce: only the newest state of each breaker/connection counts.
        let mut breakers: HashMap<String, Breaker> = HashMap::new();
        let mut health: HashMap<String, ConnectionHealth> = HashMap::new();
        let mut pins: HashMap<PinKey, Option<Pin>> = HashMap::new();
        let mut key_uses: HashMap<String, i64> = HashMap::new();
        for change in first.into_iter().chain(std::iter::from_fn(|| changes.try_recv().ok())) {
            match change {
                Change::Breaker(p, b) => {
                    breakers.insert(p, b);
                }
                Change::Connection(id, h) => {
                    health.insert(id, h);
                }
                Change::Pin(key, pin) => {
                    pins.insert(key, pin);
                }
                Change::KeyUsed(id, at) => {
                    key_uses.insert(id, at);
                }
            }
        }
        for (provider, b) in &breakers {
            if let Err(e) = repo::save_breaker(&db, provider, b).await {
                tracing::error!(error = %e, provider, "storing a circuit breaker failed");
            }
        }
        for (id, h) in &health {
            if let Err(e) = repo::save_health(&db, id, h).await {
                tracing::error!(error = %e, connection_id = %id, "storing connection health failed");
            }
        }
        for (key, pin) in &pins {
            let (session, provider) = (key.session.hex(), key.provider);
            let stored = match pin {
                Some(pin) => affinity::save(&db, &session, provider, pin).await,
                None => affinity::delete(&db, &session, provider).await,
            };
            if let Err(e) = stored {
                tracing::error!(error = %e, provider, "storing a session affinity pin failed");
            }
        }
        for (id, at) in &key_uses {
            if let Err(e) = crate::db::api_keys::touch(&db, id, *at).await {
                tracing::error!(error = %e, key_id = %id, "storing an API key's last use failed");
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}
