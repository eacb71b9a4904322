//! Concurrency limits across instances (SPEC §R4 with several gateways on
//! one Postgres): `maxConcurrent`, model concurrency and
//! `globalConcurrentRequests` are counted in shared slot rows
//! (`db::slots`), so the cap holds for the instances together, exactly.
//!
//! An attempt first takes this instance's slots (the in-memory gates of
//! [`crate::resilience::concurrency`], which also hold its line of
//! waiters), then one shared row per gate. A row is held by an instance,
//! not by a lease with a timer: it is free again when its instance stops
//! sending heartbeats, so a killed instance's slots return within
//! `SILENT_AFTER_MS` without any renewal per request. Giving a slot back
//! tells the other instances in the same round trip; their waiters try at
//! once, and look again every [`RECHECK`] for slots freed by a death.
//!
//! The cost is one round trip to the database when an attempt on a
//! limited gate starts (one more, off the request's path, when it ends);
//! gates without a cap cost nothing. If the database cannot be asked, the
//! attempt goes on under this instance's own count rather than failing.

use app::types::monitoring::SILENT_AFTER_MS;
use sea_orm::{DatabaseConnection, DbErr};
use std::{sync::Arc, time::Duration};

use crate::{
    db::{self, feed},
    resilience::{
        clock::Clock,
        concurrency::{Gate, Limit},
    },
    state::AppState,
};

/// How often a waiter looks again without being woken.
pub const RECHECK: Duration = Duration::from_secs(1);

/// Where shared slots are counted: the database, as this instance.
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    db: &'a DatabaseConnection,
    instance: &'a Arc<str>,
    clock: &'a dyn Clock,
}

impl<'a> Shared<'a> {
    /// On a shared database only (none on SQLite).
    pub fn of(state: &'a AppState) -> Option<Self> {
        feed::shared(&state.db).then(|| Self {
            db: &state.db,
            instance: &state.store.instance,
            clock: state.clock.as_ref(),
        })
    }

    /// Takes a shared slot at every gate of `limits`, or none: then the
    /// index of the first full gate.
    pub async fn take(self, limits: &[Limit]) -> Result<Vec<SharedSlot>, usize> {
        let now = self.clock.now_ms();
        let silent_before = now.saturating_sub_unsigned(SILENT_AFTER_MS);
        let mut held = Vec::with_capacity(limits.len());
        for (i, limit) in limits.iter().enumerate() {
            let gate = limit.key.to_string();
            match self.take_one(limit, &gate, now, silent_before).await {
                Ok(Some(slot)) => held.push(SharedSlot {
                    db: self.db.clone(),
                    instance: self.instance.clone(),
                    gate: limit.gate.clone(),
                    name: gate,
                    slot,
                }),
                Ok(None) => return Err(i),
                Err(e) => {
                    tracing::warn!(error = %e, gate, "counting a shared concurrency slot failed; this instance's own count holds");
                }
            }
        }
        Ok(held)
    }

    async fn take_one(self, limit: &Limit, gate: &str, now: i64, silent_before: i64) -> Result<Option<i32>, DbErr> {
        let take = || db::slots::take(self.db, gate, limit.cap, self.instance, now, silent_before);
        if limit.gate.shared_rows() >= limit.cap {
            return take().await;
        }
        // The gate's first use here, or a raised cap: its rows are made first.
        db::slots::provide(self.db, gate, limit.cap).await?;
        limit.gate.provided_shared_rows(limit.cap);
        take().await
    }
}

/// One shared slot, given back when dropped.
pub struct SharedSlot {
    db: DatabaseConnection,
    instance: Arc<str>,
    gate: Arc<Gate>,
    name: String,
    slot: i32,
}

impl Drop for SharedSlot {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (db, instance, gate, name, slot) =
            (self.db.clone(), self.instance.clone(), self.gate.clone(), std::mem::take(&mut self.name), self.slot);
        runtime.spawn(async move {
            if let Err(e) = db::slots::give_back(&db, &name, slot, &instance).await {
                tracing::warn!(error = %e, gate = name, "giving a shared concurrency slot back failed; it frees when this instance stops");
            }
            // The other instances were told; this one's waiters are woken here.
            gate.wake();
        });
    }
}
