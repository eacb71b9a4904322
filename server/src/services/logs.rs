//! The request log as the API and dashboard read it.

use app::types::{LogList, LogRow};

use super::ServiceError;
use crate::{db::logs as repo, state::AppState};

/// Default and largest page size of `GET /api/logs`.
pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1000;

pub async fn list(state: &AppState, filter: repo::LogFilter) -> Result<LogList, ServiceError> {
    let logs = repo::list(&state.db, &filter)
        .await?
        .into_iter()
        .map(|r| LogRow {
            id: r.id.to_string(),
            timestamp: r.created_at,
            request_id: r.request_id,
            endpoint: r.endpoint,
            provider: r.provider,
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
        })
        .collect();
    Ok(LogList { logs })
}
