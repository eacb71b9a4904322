//! Write-behind request log. The proxy hands each attempt's row to a
//! bounded ring (never awaiting the database); one task batches rows into
//! `proxy_logs`, prunes to the retention bound, and acknowledges flushes
//! (used at shutdown and by tests). The rows it writes are also counted
//! in the traffic rollup ([`super::traffic`]).
//!
//! When the ring is full — the database fell behind by
//! [`RING_CAPACITY`] rows — the oldest row is dropped to make room, and
//! counted ([`LogSink::dropped`], shown on Health): requests never slow
//! down for their log, and what is kept is the most recent traffic.

use crossbeam_queue::ArrayQueue;
use sea_orm::DatabaseConnection;
use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU64, Ordering},
};
use tokio::{
    sync::{
        Notify,
        mpsc::{self, error::TryRecvError},
        oneshot,
    },
    time::{Interval, MissedTickBehavior},
};

use super::{attempt::AttemptRecord, traffic::Traffic};
use crate::db;

/// Rows buffered before the oldest are dropped (a few linger periods at
/// tens of thousands of requests per second).
pub const RING_CAPACITY: usize = 16_384;
/// Most rows written in one transaction.
const BATCH_MAX: usize = 4096;
/// How long a batch waits for more rows before it is written.
const LINGER: std::time::Duration = std::time::Duration::from_millis(200);
/// Empty ticks after which the writer sleeps until the next row.
const QUIET_TICKS: u32 = 5;
/// Prune after this many rows were written since the last prune.
const PRUNE_EVERY: u64 = 1000;

/// What the proxy and the writer share.
struct Ring {
    rows: ArrayQueue<Box<AttemptRecord>>,
    dropped: AtomicU64,
    /// The writer waits for a row: the next one wakes it.
    sleeping: AtomicBool,
    /// Wakes a sleeping writer, or cuts its linger short for a flush.
    wake: Notify,
}

#[derive(Clone)]
pub struct LogSink {
    ring: Arc<Ring>,
    flushes: mpsc::Sender<oneshot::Sender<()>>,
}

impl LogSink {
    /// Starts the writer task; every row it stores is also counted in `traffic`.
    pub fn spawn(db: DatabaseConnection, retention_rows: u64, traffic: Arc<Traffic>) -> Self {
        Self::with_capacity(db, retention_rows, traffic, RING_CAPACITY)
    }

    fn with_capacity(db: DatabaseConnection, retention_rows: u64, traffic: Arc<Traffic>, capacity: usize) -> Self {
        let ring = Arc::new(Ring {
            rows: ArrayQueue::new(capacity),
            dropped: AtomicU64::new(0),
            sleeping: AtomicBool::new(false),
            wake: Notify::new(),
        });
        let (flushes, flush_rx) = mpsc::channel(16);
        let writer = Writer {
            db,
            retention_rows,
            traffic,
            ring: ring.clone(),
            flushes: flush_rx,
            acks: Vec::new(),
            since_prune: 0,
        };
        #[expect(
            clippy::disallowed_methods,
            reason = "the log writer lives as long as the process, off the request path"
        )]
        tokio::spawn(writer.run());
        Self { ring, flushes }
    }

    /// Queues a row without waiting; when the ring is full its oldest row
    /// makes room and is counted as dropped.
    pub fn record(&self, row: AttemptRecord) {
        if self.ring.rows.force_push(Box::new(row)).is_some() {
            let n = self.ring.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped = n, "request log queue full; oldest rows dropped");
            }
        }
        if self.ring.sleeping.load(Ordering::SeqCst) && self.ring.sleeping.swap(false, Ordering::SeqCst) {
            self.ring.wake.notify_one();
        }
    }

    /// Rows dropped since start because the database fell behind.
    pub fn dropped(&self) -> u64 {
        self.ring.dropped.load(Ordering::Relaxed)
    }

    /// Waits until every row queued before this call is in the database.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.flushes.send(ack).await.is_ok() {
            self.ring.wake.notify_one();
            let _ = done.await;
        }
    }
}

/// Batches rows into the database. While rows keep coming it collects
/// them on a timer, so queuing a row wakes nobody (the proxy thread that
/// queues it is about to answer its client); only after a quiet spell does
/// it sleep until the next row, which wakes it once.
struct Writer {
    db: DatabaseConnection,
    retention_rows: u64,
    traffic: Arc<Traffic>,
    ring: Arc<Ring>,
    flushes: mpsc::Receiver<oneshot::Sender<()>>,
    /// Flushes waiting for the next write.
    acks: Vec<oneshot::Sender<()>>,
    since_prune: u64,
}

impl Writer {
    async fn run(mut self) {
        let mut quiet_ticks = 0u32;
        let mut tick = tokio::time::interval(LINGER);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            if quiet_ticks >= QUIET_TICKS {
                let open = self.sleep().await;
                quiet_ticks = 0;
                tick.reset();
                // A row arriving alone: let more gather before paying a
                // database round trip.
                if open && self.acks.is_empty() {
                    self.linger(&mut tick).await;
                }
            } else {
                self.linger(&mut tick).await;
            }
            let open = self.take_flushes();
            if self.ring.rows.is_empty() && self.acks.is_empty() && open {
                quiet_ticks += 1;
                continue;
            }
            self.write().await;
            if !open {
                return;
            }
        }
    }

    /// Waits for a row or a flush.
    async fn sleep(&mut self) -> bool {
        self.ring.sleeping.store(true, Ordering::SeqCst);
        let mut open = true;
        if self.ring.rows.is_empty() && self.flushes.is_empty() {
            tokio::select! {
                _ = self.ring.wake.notified() => {}
                ack = self.flushes.recv() => match ack {
                    Some(ack) => self.acks.push(ack),
                    None => open = false,
                },
            }
        }
        self.ring.sleeping.store(false, Ordering::SeqCst);
        open
    }

    /// Until the next tick, or sooner when someone waits on a flush.
    async fn linger(&self, tick: &mut Interval) {
        tokio::select! {
            _ = tick.tick() => {}
            _ = self.ring.wake.notified() => {}
        }
    }

    /// Takes the flushes asked for so far; whether a sink is still open.
    fn take_flushes(&mut self) -> bool {
        loop {
            match self.flushes.try_recv() {
                Ok(ack) => self.acks.push(ack),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// Writes a batch — everything queued, when someone waits on a flush —
    /// then acknowledges the flushes.
    async fn write(&mut self) {
        loop {
            let rows: Vec<AttemptRecord> =
                std::iter::from_fn(|| self.ring.rows.pop()).take(BATCH_MAX).map(|r| *r).collect();
            let full = rows.len() == BATCH_MAX;
            self.store(rows).await;
            if !full || self.acks.is_empty() {
                break;
            }
        }
        for ack in self.acks.drain(..) {
            let _ = ack.send(());
        }
    }

    async fn store(&mut self, rows: Vec<AttemptRecord>) {
        if rows.is_empty() {
            return;
        }
        self.since_prune += rows.len() as u64;
        self.traffic.add(rows.iter().filter_map(AttemptRecord::sample));
        if let Err(e) = db::logs::insert_batch(&self.db, rows.into_iter().map(AttemptRecord::into_row).collect()).await
        {
            tracing::error!(error = %e, "writing request log rows failed");
        }
        if self.since_prune >= PRUNE_EVERY {
            self.since_prune = 0;
            if let Err(e) = db::logs::prune(&self.db, self.retention_rows).await {
                tracing::error!(error = %e, "pruning request log failed");
            }
        }
    }
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
    async fn a_full_ring_drops_its_oldest_rows_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::connect(&format!("sqlite://{}", dir.path().join("logs.db").display())).await.unwrap();
        let sink = LogSink::with_capacity(db.clone(), 1000, Arc::default(), 2);
        // The writer (on this test's thread) cannot run before the next await.
        for id in ["oldest", "middle", "newest"] {
            sink.record(row(id));
        }
        assert_eq!(sink.dropped(), 1);
        sink.flush().await;
        assert_eq!(stored(&db).await, ["middle", "newest"]);
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
