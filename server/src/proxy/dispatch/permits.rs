//! Waiting for concurrency slots (SPEC §R4), the async edge of
//! [`crate::resilience::concurrency`]. An attempt on a connection at its
//! `maxConcurrent` (or a model at its `modelConcurrency` cap) waits in that
//! gate's queue — at most [`SEMAPHORE_QUEUE`] waiting, at most
//! [`SEMAPHORE_WAIT`] — and then fails with `SEMAPHORE_QUEUE_FULL` /
//! `SEMAPHORE_TIMEOUT`. A fail-open gate (quota-share, for combo requests)
//! is dropped instead: the request goes on without that slot.
//!
//! A refusal here is the gateway's own: it never reaches the engine, so it
//! never trips a breaker, cools a connection or locks a model.

use std::{pin::pin, time::Duration};
use tokio::time::Instant;

use super::shared_slots::{self, Shared, SharedSlot};
use crate::{
    resilience::concurrency::{Concurrency, GateKey, Limit, Permit, QueueTicket},
    routing::registry::LiveConnection,
};

/// Longest wait for a slot.
pub const SEMAPHORE_WAIT: Duration = Duration::from_secs(30);
/// Requests waiting for one gate at most.
pub const SEMAPHORE_QUEUE: u32 = 20;

/// Which limits a request takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requester {
    /// A request for one model: every cap is a hard limit.
    Direct,
    /// A combo request: the account cap is the quota-share semaphore
    /// (fail-open) when `quotaShareConcurrencyLimit` is on, and not taken
    /// when it is off; model caps stay hard limits.
    Combo { quota_share: bool },
}

/// The limits of an attempt on `conn` for the upstream `model`, in
/// locking order (the global cap first, when set); empty (and free) for a
/// connection without caps.
pub fn limits(conc: &Concurrency, global: u64, conn: &LiveConnection, model: &str, who: Requester) -> Vec<Limit> {
    let mut limits = Vec::new();
    if let Some(cap) = u32::try_from(global).ok().filter(|c| *c > 0) {
        limits.push(conc.limit(GateKey::global(), cap, false));
    }
    let account = match who {
        Requester::Direct => Some(false),
        Requester::Combo { quota_share: true } => Some(true),
        Requester::Combo { quota_share: false } => None,
    };
    if let (Some(cap), Some(fail_open)) = (conn.limits.max_concurrent, account) {
        limits.push(conc.limit(GateKey::account(&conn.id), cap, fail_open));
    }
    if let Some(&cap) = conn.limits.overrides.model_concurrency.get(model) {
        limits.push(conc.limit(GateKey::model(&conn.id, model), cap, false));
    }
    limits
}

/// Why no slot was had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `SEMAPHORE_QUEUE_FULL`: the gate's queue already held its maximum.
    QueueFull(GateKey),
    /// `SEMAPHORE_TIMEOUT`: no slot freed within the wait.
    Timeout(GateKey),
}

impl Refused {
    pub fn message(&self) -> String {
        match self {
            Self::QueueFull(key) => format!("Semaphore queue full ({SEMAPHORE_QUEUE}) for {key}"),
            Self::Timeout(key) => format!("Semaphore timeout after {}ms for {key}", SEMAPHORE_WAIT.as_millis()),
        }
    }
}

/// An attempt's slots: this instance's count and, with several instances
/// on one Postgres, the shared slots; each given back on drop.
#[derive(Default)]
pub struct Held {
    _shared: Vec<SharedSlot>,
    _local: Permit,
}

/// Takes this instance's slot at every limit (all at once) without
/// waiting; on refusal, the index of the first full gate. All a single
/// instance needs, and no future: the request path stays synchronous here.
pub fn acquire_here(limits: &[Limit]) -> Result<Held, usize> {
    Ok(Held { _shared: Vec::new(), _local: Concurrency::try_acquire(limits)? })
}

/// Adds the shared slots of `limits` to `held` (several instances on one
/// Postgres); on refusal this instance's slots are given back too, and
/// the index of the first full gate is the answer.
pub async fn share(held: Held, limits: &[Limit], shared: Shared<'_>) -> Result<Held, usize> {
    if limits.is_empty() {
        return Ok(held);
    }
    match shared.take(limits).await {
        Ok(slots) => Ok(Held { _shared: slots, ..held }),
        Err(full) => {
            held._local.withdraw();
            Err(full)
        }
    }
}

/// [`acquire_here`], then [`share`] on a shared database.
async fn acquire(limits: &[Limit], shared: Option<Shared<'_>>) -> Result<Held, usize> {
    let held = acquire_here(limits)?;
    match shared {
        // Boxed: the database's future is large.
        Some(shared) => Box::pin(share(held, limits, shared)).await,
        None => Ok(held),
    }
}

/// Waits until every limit has a slot (all at once), dropping fail-open
/// limits whose queue is full or whose wait ran out.
pub async fn wait(mut limits: Vec<Limit>, shared: Option<Shared<'_>>) -> Result<Held, Refused> {
    let deadline = Instant::now() + SEMAPHORE_WAIT;
    // A shared slot may come free without a word (its instance died).
    let recheck = if shared.is_some() { shared_slots::RECHECK } else { SEMAPHORE_WAIT };
    let mut ticket: Option<QueueTicket> = None;
    loop {
        let full = match acquire(&limits, shared).await {
            Ok(held) => return Ok(held),
            Err(full) => full,
        };
        let gate = limits[full].gate.clone();
        if !ticket.as_ref().is_some_and(|t| std::sync::Arc::ptr_eq(t.gate(), &gate)) {
            drop(ticket.take());
            ticket = match gate.enqueue(SEMAPHORE_QUEUE) {
                Some(t) => Some(t),
                None => {
                    give_up(&mut limits, full, Refused::QueueFull)?;
                    continue;
                }
            };
        }
        let mut freed = pin!(gate.freed());
        freed.as_mut().enable();
        if let Ok(held) = acquire(&limits, shared).await {
            return Ok(held);
        }
        let woken = tokio::time::timeout_at(deadline.min(Instant::now() + recheck), freed).await.is_ok();
        if !woken && Instant::now() >= deadline {
            // Out of time: only the hard limits may still stop the request.
            limits.retain(|l| !l.fail_open);
            return acquire(&limits, shared).await.map_err(|i| Refused::Timeout(limits[i].key.clone()));
        }
    }
}

/// Drops the fail-open limit at `full`, or refuses for a hard one.
fn give_up(limits: &mut Vec<Limit>, full: usize, why: fn(GateKey) -> Refused) -> Result<(), Refused> {
    if limits[full].fail_open {
        tracing::debug!(gate = %limits[full].key, "quota-share queue full; going on without a slot");
        limits.remove(full);
        Ok(())
    } else {
        Err(why(limits[full].key.clone()))
    }
}

#[cfg(test)]
mod tests;
