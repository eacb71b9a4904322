//! The request queue's protection switch (SPEC §R5): which connections'
//! requests go through their queue, and what waits there.

use app::types::rate_limits::{RateLimitList, RateLimitProtectionSet, RateLimitStatus, SetRateLimitProtection};
use std::collections::HashMap;

use super::ServiceError;
use crate::{db::connections, resilience::request_queue::protected, state::AppState};

/// Every connection with its switch, whether it is protected now, and
/// the requests its queues hold.
pub async fn list(state: &AppState) -> Result<RateLimitList, ServiceError> {
    let settings = state.resilience.current();
    let mut counts: HashMap<String, (u32, u32)> = HashMap::new();
    for (queue, c) in state.admission.queues.snapshot() {
        let entry = counts.entry(queue.connection_id.to_string()).or_default();
        entry.0 += c.queued;
        entry.1 += c.running;
    }
    let snapshot = state.routing.connections.snapshot();
    let connections = connections::list(&state.db, None)
        .await?
        .into_iter()
        .map(|row| {
            let live = snapshot.connection(&row.id);
            let (queued, running) = counts.get(&row.id).copied().unwrap_or_default();
            RateLimitStatus {
                enabled: live
                    .is_some_and(|c| protected(&settings.request_queue, c.limits.protection, c.limits.api_key_auth)),
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
    state.routing.connections.reload(&state.db, &state.auth.secrets).await?;
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
