//! The request log as the API and dashboard read it, connections named.

use app::types::{LogList, LogRow, LogSearch};
use std::collections::HashMap;

use super::ServiceError;
use crate::{
    db::{connections, logs as repo},
    state::AppState,
};

/// Default and largest page size of `GET /api/logs`.
pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1000;

pub async fn list(state: &AppState, filter: repo::LogFilter) -> Result<LogList, ServiceError> {
    let names: HashMap<String, String> =
        connections::list(&state.db, None).await?.into_iter().map(|c| (c.id, c.name)).collect();
    let limit = filter.limit;
    let records = repo::list(&state.db, &filter).await?;
    let older =
        (u64::try_from(records.len()).unwrap_or(u64::MAX) >= limit).then(|| records.last().map(|r| r.id)).flatten();
    let logs = records
        .into_iter()
        .map(|r| LogRow {
            id: r.id.to_string(),
            timestamp: r.created_at,
            request_id: r.request_id,
            endpoint: r.endpoint,
            provider: r.provider,
            connection_name: r.connection_id.as_ref().and_then(|id| names.get(id).cloned()),
            connection_id: r.connection_id,
            model: r.model,
            status: r.status,
            latency_ms: r.latency_ms,
            ttfb_ms: r.ttfb_ms,
            stream: r.stream,
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            cached_tokens: r.cached_tokens,
            error_kind: r.error_kind,
            error_message: r.error_message,
            egress_ip: r.egress_ip,
            refused: r.refused,
            wait_ms: r.wait_ms,
        })
        .collect();
    Ok(LogList { logs, generated_at: state.clock.now_ms(), older })
}

/// The Logs page's search: `limit` rows at most, newest first.
pub async fn search(state: &AppState, s: LogSearch, limit: u64) -> Result<LogList, ServiceError> {
    let connection_ids = match s.connection.as_deref() {
        None => None,
        Some(text) => {
            let text = text.to_lowercase();
            let all = connections::list(&state.db, None).await?;
            Some(all.into_iter().filter(|c| c.name.to_lowercase().contains(&text)).map(|c| c.id).collect())
        }
    };
    let filter = repo::LogFilter {
        limit,
        since: s.window_ms().map(|ms| state.clock.now_ms() - ms),
        provider_contains: s.provider,
        model_contains: s.model,
        connection_ids,
        status_class: s.status,
        before_id: s.before,
        request_id: s.request,
        ..Default::default()
    };
    list(state, filter).await
}
