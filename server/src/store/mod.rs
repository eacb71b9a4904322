//! The store seam: everything the gateway writes behind its requests.
//!
//! Two families, each with its own policy when the database falls behind:
//!
//! * **live state** ([`state`]): breakers, connection health, session
//!   affinity pins, API keys' last use. Each producer (the engine, the pin
//!   table, the key registry) owns its change type and leaves changes in
//!   its own outbox ([`crate::outbox`]), which keeps the newest per key:
//!   bounded by the number of keys, never dropped;
//! * **the request log** ([`log`]) and the traffic rollup it feeds
//!   ([`traffic`]): a bounded ring; when full, the oldest row goes and is
//!   counted (Health shows the count).
//!
//! The store imports the producers, never the reverse: a producer sees
//! only its outbox. That is the seam a shared store stands behind when
//! several instances use one Postgres — the same outboxes feed a change
//! feed, and what other instances changed is applied to the producers'
//! live state from here. Leases write through (`services::leases`): they
//! are rare and must be durable before they are granted.

pub mod attempt;
pub mod log;
pub mod state;
pub mod traffic;

use sea_orm::DatabaseConnection;
use std::sync::Arc;

use crate::resilience::clock::Clock;

pub use attempt::AttemptRecord;
pub use log::LogSink;
pub use state::Outboxes;

/// The writers behind the requests.
pub struct Store {
    /// The request log (and, as it stores rows, the traffic rollup).
    pub logs: LogSink,
    /// Traffic over the last day, for Health's charts (fed by `logs`).
    pub traffic: Arc<traffic::Traffic>,
    /// Breakers, connection health, pins and key uses.
    pub state: state::StateWriter,
    /// This process's name on the change feed between instances sharing
    /// one Postgres (random per start; see `services::changes`).
    pub instance: Arc<str>,
    /// Whether this instance has read what the others changed: true on
    /// SQLite; on Postgres from the change feed's first catch-up read
    /// until its listener loses its connection (readiness, `GET /api/ready`).
    pub caught_up: tokio::sync::watch::Sender<bool>,
    /// How many changes of other instances this one has applied.
    pub applied: tokio::sync::watch::Sender<u64>,
    /// How many instances share the database and are alive, this one
    /// included (1 on SQLite): the request queues split their pace by it.
    pub live_instances: std::sync::atomic::AtomicU32,
}

impl Store {
    /// Starts both writers; the producers of live state put their changes
    /// in the returned outboxes. `traffic` is the rollup, already seeded.
    pub fn spawn(
        db: &DatabaseConnection,
        log_retention_rows: u64,
        traffic: traffic::Traffic,
        clock: Arc<dyn Clock>,
    ) -> (Self, Outboxes) {
        let traffic = Arc::new(traffic);
        let instance: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
        let (state, outboxes) = state::StateWriter::spawn(db.clone(), clock, instance.clone());
        let logs = LogSink::spawn(db.clone(), log_retention_rows, traffic.clone());
        let caught_up = tokio::sync::watch::Sender::new(!crate::db::feed::shared(db));
        let applied = tokio::sync::watch::Sender::new(0);
        let live_instances = std::sync::atomic::AtomicU32::new(1);
        (Self { logs, traffic, state, instance, caught_up, applied, live_instances }, outboxes)
    }

    /// Waits until everything queued before this call is stored.
    pub async fn flush(&self) {
        self.logs.flush().await;
        self.state.flush().await;
    }
}
