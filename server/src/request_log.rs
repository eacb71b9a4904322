//! Write-behind request log. The proxy hands each attempt's row to a
//! bounded channel (never awaiting the database); one task batches rows
//! into `proxy_logs`, prunes to the retention bound, and acknowledges
//! flushes (used at shutdown and by tests). When the channel is full, rows
//! are dropped and counted rather than slowing requests down. The rows it
//! writes are also counted in the traffic rollup (`traffic`).

use sea_orm::{DatabaseConnection, NotSet};
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};
use tokio::{
    sync::{
        Notify,
        mpsc::{self, error::TryRecvError},
        oneshot,
    },
    time::{Interval, MissedTickBehavior},
};

use crate::{
    db::{self, entities::proxy_log},
    traffic::Traffic,
};

/// Rows buffered before new ones are dropped (a few linger periods at
/// tens of thousands of requests per second).
const CHANNEL_CAPACITY: usize = 16_384;
/// Most rows written in one transaction.
const BATCH_MAX: usize = 4096;
/// How long a batch waits for more rows before it is written.
const LINGER: std::time::Duration = std::time::Duration::from_millis(200);
/// Empty ticks after which the writer sleeps until the next row.
const QUIET_TICKS: u32 = 5;
/// Prune after this many rows were written since the last prune.
const PRUNE_EVERY: u64 = 1000;

/// One upstream attempt, as the proxy fills it in: the `proxy_logs` row
/// itself (`id` is assigned by the database).
pub type AttemptRecord = proxy_log::Model;

/// The row of a client request before any upstream is known.
pub fn request_row(request_id: &str, endpoint: &str, stream: bool) -> AttemptRecord {
    AttemptRecord {
        created_at: crate::db::now_ms(),
        request_id: request_id.to_owned(),
        endpoint: endpoint.to_owned(),
        stream,
        ..AttemptRecord::default()
    }
}

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
    /// Starts the writer task; every row it stores is also counted in `traffic`.
    pub fn spawn(db: DatabaseConnection, retention_rows: u64, traffic: Arc<Traffic>) -> Self {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let flush_now = Arc::new(Notify::new());
        #[expect(
            clippy::disallowed_methods,
            reason = "the log writer lives as long as the process, off the request path"
        )]
        tokio::spawn(writer(Writer { db, retention_rows, traffic }, rx, flush_now.clone()));
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

/// Batches rows into the database. While rows keep coming it collects
/// them on a timer, so queuing a row wakes nobody (the proxy thread that
/// queues it is about to answer its client); only after a quiet spell does
/// it sleep until the next row, which wakes it once.
/// Where the writer puts rows.
struct Writer {
    db: DatabaseConnection,
    retention_rows: u64,
    traffic: Arc<Traffic>,
}

async fn writer(w: Writer, mut rx: mpsc::Receiver<Msg>, flush_now: Arc<Notify>) {
    let mut since_prune = 0u64;
    let mut quiet_ticks = 0u32;
    let mut tick = tokio::time::interval(LINGER);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let first = if quiet_ticks >= QUIET_TICKS {
            let Some(first) = rx.recv().await else { return };
            quiet_ticks = 0;
            tick.reset();
            // A row arriving alone: let more gather before paying a
            // database round trip.
            if matches!(first, Msg::Row(_)) {
                linger(&mut tick, &flush_now).await;
            }
            first
        } else {
            linger(&mut tick, &flush_now).await;
            match rx.try_recv() {
                Ok(first) => first,
                Err(TryRecvError::Empty) => {
                    quiet_ticks += 1;
                    continue;
                }
                Err(TryRecvError::Disconnected) => return,
            }
        };
        let mut rows = Vec::new();
        let mut acks = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Row(r) => rows.push(*r),
                Msg::Flush(ack) => acks.push(ack),
            }
            next = if rows.len() < BATCH_MAX { rx.try_recv().ok() } else { None };
        }
        since_prune += rows.len() as u64;
        w.traffic.add(&rows);
        if let Err(e) = db::logs::insert_batch(&w.db, rows.into_iter().map(to_active).collect()).await {
            tracing::error!(error = %e, "writing request log rows failed");
        }
        if since_prune >= PRUNE_EVERY {
            since_prune = 0;
            if let Err(e) = db::logs::prune(&w.db, w.retention_rows).await {
                tracing::error!(error = %e, "pruning request log failed");
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

/// Until the next tick, or sooner when someone waits on a flush.
async fn linger(tick: &mut Interval, flush_now: &Notify) {
    tokio::select! {
        _ = tick.tick() => {}
        _ = flush_now.notified() => {}
    }
}

fn to_active(r: AttemptRecord) -> proxy_log::ActiveModel {
    let mut row = proxy_log::ActiveModel::from(r);
    row.id = NotSet;
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::logs::{LogFilter, list};

    async fn sink() -> (LogSink, DatabaseConnection, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db = db::connect(&format!("sqlite://{}", dir.path().join("logs.db").display())).await.unwrap();
        (LogSink::spawn(db.clone(), 1000, Arc::default()), db, dir)
    }

    fn row(request_id: &str) -> AttemptRecord {
        AttemptRecord { request_id: request_id.into(), ..AttemptRecord::default() }
    }

    async fn stored(db: &DatabaseConnection) -> Vec<String> {
        let all = list(db, &LogFilter { limit: 100, ..Default::default() }).await.unwrap();
        all.into_iter().rev().map(|r| r.request_id).collect()
    }

    #[tokio::test]
    async fn a_flush_writes_everything_queued_whether_the_writer_ticks_or_sleeps() {
        let (sink, db, _dir) = sink().await;
        sink.record(row("ticking"));
        sink.flush().await;
        assert_eq!(stored(&db).await, ["ticking"]);
        // A quiet spell in virtual time (the database, driven by its own
        // thread, is not touched meanwhile): the writer sees its empty
        // ticks, then waits for a row instead.
        tokio::time::pause();
        for _ in 0..=QUIET_TICKS {
            tokio::time::advance(LINGER).await;
            tokio::task::yield_now().await;
        }
        tokio::time::resume();
        sink.record(row("quiet-1"));
        sink.record(row("quiet-2"));
        sink.flush().await;
        assert_eq!(stored(&db).await, ["ticking", "quiet-1", "quiet-2"]);
    }

    #[tokio::test]
    async fn rows_reach_the_database_without_a_flush() {
        let (sink, db, _dir) = sink().await;
        sink.record(row("first"));
        // Write-behind has no completion signal by design: wait (bounded)
        // until the row shows up.
        let deadline = tokio::time::Instant::now() + LINGER * 20;
        while stored(&db).await.is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "the row was never written");
            tokio::time::sleep(LINGER / 4).await;
        }
        assert_eq!(stored(&db).await, ["first"]);
    }
}
