//! Write-behind request log. The proxy hands each attempt's row to a
//! bounded channel (never awaiting the database); one task batches rows
//! into `proxy_logs`, prunes to the retention bound, and acknowledges
//! flushes (used at shutdown and by tests). When the channel is full, rows
//! are dropped and counted rather than slowing requests down.

use sea_orm::{DatabaseConnection, NotSet};
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::db::{self, entities::proxy_log};

/// Rows buffered before new ones are dropped (a few linger periods at
/// tens of thousands of requests per second).
const CHANNEL_CAPACITY: usize = 16_384;
/// Most rows written in one transaction.
const BATCH_MAX: usize = 4096;
/// How long a batch waits for more rows before it is written.
const LINGER: std::time::Duration = std::time::Duration::from_millis(200);
/// Prune after this many rows were written since the last prune.
const PRUNE_EVERY: u64 = 1000;

/// One upstream attempt, as the proxy fills it in: the `proxy_logs` row
/// itself (`id` is assigned by the database).
pub type AttemptRecord = proxy_log::Model;

enum Msg {
    Row(Box<AttemptRecord>),
    Flush(oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct LogSink {
    tx: mpsc::Sender<Msg>,
    dropped: Arc<AtomicU64>,
    /// Cuts the writer's linger short when someone waits on a flush.
    flush_now: Arc<Notify>,
}

impl LogSink {
    /// Starts the writer task.
    pub fn spawn(db: DatabaseConnection, retention_rows: u64) -> Self {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let flush_now = Arc::new(Notify::new());
        tokio::spawn(writer(db, rx, retention_rows, flush_now.clone()));
        Self { tx, dropped: Arc::new(AtomicU64::new(0)), flush_now }
    }

    /// Queues a row without waiting; drops it when the queue is full.
    pub fn record(&self, row: AttemptRecord) {
        if self.tx.try_send(Msg::Row(Box::new(row))).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped = n, "request log queue full; rows dropped");
            }
        }
    }

    /// Waits until every row queued before this call is in the database.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Flush(ack)).await.is_ok() {
            self.flush_now.notify_one();
            let _ = done.await;
        }
    }
}

async fn writer(db: DatabaseConnection, mut rx: mpsc::Receiver<Msg>, retention_rows: u64, flush_now: Arc<Notify>) {
    let mut since_prune = 0u64;
    while let Some(first) = rx.recv().await {
        // A row arriving alone: let more gather before paying a database
        // round trip. While this task sleeps, queuing a row wakes nobody.
        if matches!(first, Msg::Row(_)) && rx.is_empty() {
            tokio::select! {
                _ = tokio::time::sleep(LINGER) => {}
                _ = flush_now.notified() => {}
            }
        }
        let mut rows = Vec::new();
        let mut acks = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Row(r) => rows.push(to_active(*r)),
                Msg::Flush(ack) => acks.push(ack),
            }
            next = if rows.len() < BATCH_MAX { rx.try_recv().ok() } else { None };
        }
        since_prune += rows.len() as u64;
        if let Err(e) = db::logs::insert_batch(&db, rows).await {
            tracing::error!(error = %e, "writing request log rows failed");
        }
        if since_prune >= PRUNE_EVERY {
            since_prune = 0;
            if let Err(e) = db::logs::prune(&db, retention_rows).await {
                tracing::error!(error = %e, "pruning request log failed");
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

fn to_active(r: AttemptRecord) -> proxy_log::ActiveModel {
    let mut row = proxy_log::ActiveModel::from(r);
    row.id = NotSet;
    row
}
