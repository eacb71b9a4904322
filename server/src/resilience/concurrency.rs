//! Concurrency limits (SPEC §R4): a connection's `maxConcurrent` and its
//! `rateLimitOverrides.modelConcurrency` caps, held by a request from its
//! attempt's first byte to its last.
//!
//! Why one composite lock, and why all-or-none: a request that needs two
//! gates (its account and its model) and took them one by one would sit on
//! the first while it waits for the second — a request for another model
//! of the same account would then wait behind a slot nobody uses, and two
//! requests taking the same gates in different orders could wait for each
//! other forever. Here the gates of one attempt are always locked in one
//! order (level, then name: account before model) and taken together or
//! not at all ([`admit`]); a request that cannot have all of them holds
//! none while it waits, so no request ever waits holding a slot.
//!
//! The gates' counters are per process and per connection row; each gate
//! has its own small mutex (held for a few instructions, never across an
//! await), so requests to different connections never meet.

use dashmap::DashMap;
use parking_lot::Mutex;
use std::{
    fmt,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
};
use tokio::sync::Notify;

/// Where a limit applies, in locking order. The original's provider level
/// has no setting here (SPEC §S); it would sort after the global one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Every request: `requestQueue.globalConcurrentRequests`.
    Global,
    /// One connection (one upstream account): `maxConcurrent`.
    Account,
    /// One upstream model on one connection: `modelConcurrency`.
    Model,
}

/// The identity of one gate.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GateKey {
    pub level: Level,
    pub connection_id: Arc<str>,
    /// The exact upstream model id (model level only).
    pub model: Option<Arc<str>>,
}

impl GateKey {
    /// The one gate every request passes when a global limit is set.
    pub fn global() -> Self {
        Self { level: Level::Global, connection_id: "".into(), model: None }
    }

    pub fn account(connection_id: &str) -> Self {
        Self { level: Level::Account, connection_id: connection_id.into(), model: None }
    }

    pub fn model(connection_id: &str, model: &str) -> Self {
        Self { level: Level::Model, connection_id: connection_id.into(), model: Some(model.into()) }
    }
}

/// As errors and the health report name it: `qsglobal` for the global
/// gate, `qsconn:<connectionId>` for the account,
/// `qsconn:<connectionId>:model:<model>` for a model.
impl fmt::Display for GateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.level == Level::Global {
            return write!(f, "qsglobal");
        }
        write!(f, "qsconn:{}", self.connection_id)?;
        match &self.model {
            Some(m) => write!(f, ":model:{m}"),
            None => Ok(()),
        }
    }
}

/// A gate's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests holding a slot.
    pub running: u32,
    /// Requests waiting for this gate.
    pub queued: u32,
    /// The cap last asked for (the connection's current setting).
    pub limit: u32,
}

/// Whether requests holding `counts` leave room under `caps` for one more
/// at every gate: all-or-none, so the answer on refusal is the first full
/// gate, in locking order.
pub fn admit(counts: &[Counts], caps: &[u32]) -> Result<(), usize> {
    match counts.iter().zip(caps).position(|(c, cap)| c.running >= *cap) {
        Some(full) => Err(full),
        None => Ok(()),
    }
}

pub struct Gate {
    counts: Mutex<Counts>,
    /// Woken whenever a slot is given back (here or, with shared slots, on
    /// another instance).
    freed: Notify,
    /// How many shared slot rows this instance knows the database holds
    /// for the gate (several instances on one Postgres); none made yet: 0.
    shared_rows: AtomicU32,
}

impl Gate {
    pub fn shared_rows(&self) -> u32 {
        self.shared_rows.load(Ordering::Relaxed)
    }

    /// The database now holds at least `rows` shared slot rows for the gate.
    pub fn provided_shared_rows(&self, rows: u32) {
        self.shared_rows.fetch_max(rows, Ordering::Relaxed);
    }

    /// Wakes the gate's waiters: a slot came free.
    pub fn wake(&self) {
        self.freed.notify_waiters();
    }

    fn release(&self) {
        let mut c = self.counts.lock();
        c.running = c.running.saturating_sub(1);
    }

    pub fn counts(&self) -> Counts {
        *self.counts.lock()
    }

    /// A future that completes at the next release; register it (enable)
    /// before re-checking, so a release in between is not missed.
    pub fn freed(&self) -> tokio::sync::futures::Notified<'_> {
        self.freed.notified()
    }

    /// Joins the gate's queue, unless `max_queued` already wait there.
    pub fn enqueue(self: &Arc<Self>, max_queued: u32) -> Option<QueueTicket> {
        let mut c = self.counts.lock();
        if c.queued >= max_queued {
            return None;
        }
        c.queued += 1;
        Some(QueueTicket(self.clone()))
    }
}

/// A place in a gate's queue, given back on drop (also when the waiting
/// client goes away).
pub struct QueueTicket(Arc<Gate>);

impl QueueTicket {
    pub fn gate(&self) -> &Arc<Gate> {
        &self.0
    }
}

impl Drop for QueueTicket {
    fn drop(&mut self) {
        let mut c = self.0.counts.lock();
        c.queued = c.queued.saturating_sub(1);
    }
}

/// One limit an attempt must pass.
#[derive(Clone)]
pub struct Limit {
    pub key: GateKey,
    pub gate: Arc<Gate>,
    pub cap: u32,
    /// Quota-share (§R4): when no slot frees in time, the request goes on
    /// without this one instead of failing.
    pub fail_open: bool,
}

/// Slots held together; each is given back exactly once, on drop.
#[derive(Default)]
#[must_use = "dropping a permit gives its slots back"]
pub struct Permit {
    gates: Vec<Arc<Gate>>,
}

impl Permit {
    /// Gives the slots back without waking the gates' waiters: for a
    /// permit taken and dropped at once because another instance holds the
    /// shared slots (waking them would only send them to be refused too).
    pub fn withdraw(mut self) {
        for gate in self.gates.drain(..) {
            gate.release();
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        for gate in self.gates.drain(..) {
            gate.release();
            gate.wake();
        }
    }
}

/// Every gate with a configured cap, by key.
#[derive(Default)]
pub struct Concurrency {
    gates: DashMap<GateKey, Arc<Gate>>,
}

impl Concurrency {
    /// The limit of `key` at `cap` (a gate is made on first use).
    pub fn limit(&self, key: GateKey, cap: u32, fail_open: bool) -> Limit {
        let gate = match self.gates.get(&key) {
            Some(g) => g.clone(),
            None => self
                .gates
                .entry(key.clone())
                .or_insert_with(|| {
                    Arc::new(Gate { counts: Mutex::default(), freed: Notify::new(), shared_rows: AtomicU32::new(0) })
                })
                .clone(),
        };
        Limit { key, gate, cap, fail_open }
    }

    /// Takes a slot at every gate of `limits` (sorted into locking order)
    /// or none; on refusal, the index of the first full gate.
    pub fn try_acquire(limits: &[Limit]) -> Result<Permit, usize> {
        if limits.is_empty() {
            // A connection without caps: nothing to lock.
            return Ok(Permit::default());
        }
        debug_assert!(limits.is_sorted_by(|a, b| a.key < b.key), "limits come in locking order");
        let mut held: Vec<_> = limits.iter().map(|l| l.gate.counts.lock()).collect();
        for (c, l) in held.iter_mut().zip(limits) {
            c.limit = l.cap;
        }
        let counts: Vec<Counts> = held.iter().map(|c| **c).collect();
        let caps: Vec<u32> = limits.iter().map(|l| l.cap).collect();
        admit(&counts, &caps)?;
        for c in &mut held {
            c.running += 1;
        }
        drop(held);
        Ok(Permit { gates: limits.iter().map(|l| l.gate.clone()).collect() })
    }

    /// Wakes the waiters of the gate named `name` (as [`GateKey`] shows
    /// it): another instance gave one of its shared slots back.
    pub fn wake(&self, name: &str) {
        for gate in self.gates.iter().filter(|g| g.key().to_string() == name) {
            gate.value().wake();
        }
    }

    /// Every gate with its counters, for the health report.
    pub fn snapshot(&self) -> Vec<(GateKey, Counts)> {
        self.gates.iter().map(|e| (e.key().clone(), e.value().counts())).collect()
    }
}

#[cfg(test)]
mod tests;
