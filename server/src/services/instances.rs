//! Instances on one database know each other: each stores a heartbeat row
//! every [`HEARTBEAT`] (its version, when it started, whether it has
//! caught up with the others), and Health lists them. An instance that
//! stops cleanly leaves the list; one killed stays, shown silent once
//! three heartbeats are missed, until it is forgotten an hour later.
//! Only on a shared database (Postgres): on SQLite there is one instance.

use app::types::monitoring::{FORGET_AFTER_MS, HEARTBEAT_MS, InstanceInfo, SILENT_AFTER_MS};
use std::{sync::Arc, time::Duration};

use crate::{
    db::{self, entities::gateway_instance},
    state::AppState,
};

/// How often an instance stores its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_millis(HEARTBEAT_MS);

/// Starts this instance's heartbeat (Postgres only); it ends when the
/// gateway's state is dropped.
pub fn spawn_heartbeat(state: &Arc<AppState>) {
    if !db::feed::shared(&state.db) {
        return;
    }
    let (weak, started_at) = (Arc::downgrade(state), state.clock.now_ms());
    let mut caught_up = state.store.caught_up.subscribe();
    #[expect(clippy::disallowed_methods, reason = "the heartbeat lives as long as the gateway, off the request path")]
    tokio::spawn(async move {
        let mut beats = tokio::time::interval(HEARTBEAT);
        loop {
            // A beat on time, and one as soon as the instance has caught up (or fallen behind).
            tokio::select! {
                _ = beats.tick() => {}
                changed = caught_up.changed() => if changed.is_err() { return },
            }
            let Some(state) = weak.upgrade() else { return };
            let now = state.clock.now_ms();
            let row = gateway_instance::Model {
                id: state.store.instance.to_string(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                started_at,
                last_seen_at: now,
                caught_up: *state.store.caught_up.borrow(),
            };
            let forget_before = now.saturating_sub_unsigned(FORGET_AFTER_MS);
            if let Err(e) = db::instances::beat(&state.db, row, forget_before).await {
                tracing::warn!(error = %e, "storing this instance's heartbeat failed");
            }
            count_live(&state, now).await;
        }
    });
}

/// Counts the instances alive on the database (this one at least), so
/// the request queues split their pace among them.
async fn count_live(state: &AppState, now: i64) {
    let silent_before = now.saturating_sub_unsigned(SILENT_AFTER_MS);
    match db::instances::list(&state.db).await {
        Ok(rows) => {
            let live = rows.iter().filter(|r| r.last_seen_at >= silent_before).count();
            let live = u32::try_from(live).unwrap_or(u32::MAX).max(1);
            state.store.live_instances.store(live, std::sync::atomic::Ordering::Relaxed);
        }
        Err(e) => tracing::warn!(error = %e, "counting the live instances failed"),
    }
}

/// The instances Health lists (none on SQLite).
pub async fn list(state: &AppState) -> Vec<InstanceInfo> {
    if !db::feed::shared(&state.db) {
        return Vec::new();
    }
    let rows = db::instances::list(&state.db).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "reading the instance list failed");
        Vec::new()
    });
    let now = state.clock.now_ms();
    rows.into_iter()
        .map(|r| {
            let ago = u64::try_from(now - r.last_seen_at).unwrap_or(0);
            InstanceInfo {
                name: r.id.chars().take(8).collect(),
                this: *r.id == *state.store.instance,
                version: r.version,
                started_at: r.started_at,
                last_seen_ms_ago: ago,
                silent: ago > SILENT_AFTER_MS,
                caught_up: r.caught_up,
            }
        })
        .collect()
}

/// A clean stop: this instance leaves the list and gives back any shared
/// concurrency slot it still holds.
pub async fn leave(state: &AppState) {
    if !db::feed::shared(&state.db) {
        return;
    }
    let instance = &state.store.instance;
    if let Err(e) = db::slots::give_back_all(&state.db, instance).await {
        tracing::warn!(error = %e, "giving back this instance's shared slots failed");
    }
    if let Err(e) = db::instances::remove(&state.db, instance).await {
        tracing::warn!(error = %e, "removing this instance from the list failed");
    }
}
