//! The request queue's protection switch (SPEC §R5): which connections'
//! requests go through their queue, and what waits there.

use app::types::rate_limits::{Pacing, RateLimitList, RateLimitProtectionSet, RateLimitStatus, SetRateLimitProtection};
use std::collections::HashMap;
use tokio::time::Instant;

use super::{ServiceError, changes};
use crate::db::feed::Change;
use crate::{db::connections, resilience::request_queue::protected, state::AppState};

/// Every connection with its switch, whether it is protected now, the
/// requests its queues hold, and its pace.
pub async fn list(state: &AppState) -> Result<RateLimitList, ServiceError> {
    let settings = state.resilience.current();
    let now = Instant::now();
    // Queued, running, and the longest pause of its queues (ms).
    let mut counts: HashMap<String, (u32, u32, u64)> = HashMap::new();
    for (queue, c) in state.admission.queues.snapshot() {
        let entry = counts.entry(queue.connection_id.to_string()).or_default();
        entry.0 += c.queued;
        entry.1 += c.running;
        let paused = c.paused_until.map_or(0, |at| at.saturating_duration_since(now).as_millis());
        entry.2 = entry.2.max(u64::try_from(paused).unwrap_or(u64::MAX));
    }
    let snapshot = state.routing.connections.snapshot();
    let connections = connections::list(&state.db, None)
        .await?
        .into_iter()
        .map(|row| {
            let live = snapshot
                .connection(&row.id)
                .filter(|c| protected(&settings.request_queue, c.limits.protection, c.limits.api_key_auth));
            let (queued, running, paused_ms) = counts.get(&row.id).copied().unwrap_or_default();
            let pacing = live.map(|c| {
                let q = settings.request_queue.for_connection(&c.limits.overrides);
                Pacing {
                    requests_per_minute: q.requests_per_minute,
                    min_time_between_requests_ms: q.min_time_between_requests_ms,
                    concurrent_requests: q.concurrent_requests,
                    paused_for_ms: (paused_ms > 0).then_some(paused_ms),
                }
            });
            RateLimitStatus {
                enabled: live.is_some(),
                pacing,
                active: row.is_active,
                rate_limit_protection: row.rate_limit_protection,
                queued,
                running,
                connection_id: row.id,
                provider: row.provider,
                name: row.name,
            }
        })
        .collect();
    Ok(RateLimitList {
        connections,
        auto_enable_api_key_providers: settings.request_queue.auto_enable_api_key_providers,
    })
}

/// Sets one connection's switch (`None`: follow auto-enable).
pub async fn set(state: &AppState, input: SetRateLimitProtection) -> Result<RateLimitProtectionSet, ServiceError> {
    let id = input.connection_id.trim();
    if id.is_empty() {
        return Err(ServiceError::field("connectionId", "must name a connection"));
    }
    let Some(mut row) = connections::get(&state.db, id).await? else {
        return Err(ServiceError::field("connectionId", "no connection has this id"));
    };
    row.rate_limit_protection = input.enabled;
    row.updated_at = state.clock.now_ms();
    connections::save(&state.db, row).await?;
    changes::changed(state, Change::Connections).await?;
    let settings = state.resilience.current();
    let snapshot = state.routing.connections.snapshot();
    let now_protected = snapshot
        .connection(id)
        .is_some_and(|c| protected(&settings.request_queue, c.limits.protection, c.limits.api_key_auth));
    tracing::info!(connection_id = %id, enabled = ?input.enabled, protected = now_protected, "rate-limit protection set");
    Ok(RateLimitProtectionSet {
        success: true,
        connection_id: id.to_owned(),
        enabled: input.enabled,
        protected: now_protected,
    })
}
