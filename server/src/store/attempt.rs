//! One row of the request log as the proxy fills it in: a plain record,
//! turned into the `proxy_logs` row only by the store's writer.

use super::traffic::Sample;
use crate::db::entities::proxy_log;

/// One upstream attempt, or a client request refused before any upstream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttemptRecord {
    /// Epoch ms.
    pub created_at: i64,
    pub request_id: String,
    pub endpoint: String,
    pub provider: String,
    pub connection_id: Option<String>,
    pub model: String,
    /// The HTTP status answered (0: no answer, the transport failed).
    pub status: i32,
    pub latency_ms: i64,
    pub ttfb_ms: Option<i64>,
    pub stream: bool,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub cached_tokens: Option<i64>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    pub egress_ip: Option<String>,
    /// The gateway answered without calling any upstream.
    pub refused: bool,
    /// How long the gateway itself held the request before this row's
    /// attempt (or its refusal): request queue, concurrency slot,
    /// cooldown and combo waits.
    pub wait_ms: i64,
    /// The client key the request came with.
    pub key_id: Option<String>,
}

impl AttemptRecord {
    /// The row of a client request before any upstream is known.
    pub fn request(request_id: &str, endpoint: &str, stream: bool, now: i64) -> Self {
        Self {
            created_at: now,
            request_id: request_id.to_owned(),
            endpoint: endpoint.to_owned(),
            stream,
            ..Self::default()
        }
    }

    /// What the traffic rollup counts of it. A request the gateway refused
    /// itself (breaker open, every connection cooling, queue full…) counts
    /// for its provider under no connection — the client got that answer —
    /// unless it was refused before its provider was known.
    pub fn sample(&self) -> Option<Sample<'_>> {
        let connection_id = if self.refused { "" } else { self.connection_id.as_deref()? };
        if self.provider.is_empty() {
            return None;
        }
        Some(
            Sample::new(&self.provider, connection_id, self.created_at, self.status, self.latency())
                .waited(self.wait_ms)
                .spent(self.prompt_tokens, self.completion_tokens, self.cached_tokens),
        )
    }

    /// The latency the charts show: a stream's time to its first byte.
    fn latency(&self) -> i64 {
        if self.stream { self.ttfb_ms.unwrap_or(self.latency_ms) } else { self.latency_ms }
    }

    /// The row to insert (`id` is assigned by the database).
    pub fn into_row(self) -> proxy_log::Model {
        proxy_log::Model {
            id: 0,
            created_at: self.created_at,
            request_id: self.request_id,
            endpoint: self.endpoint,
            provider: self.provider,
            connection_id: self.connection_id,
            model: self.model,
            status: self.status,
            latency_ms: self.latency_ms,
            ttfb_ms: self.ttfb_ms,
            stream: self.stream,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cached_tokens: self.cached_tokens,
            error_kind: self.error_kind,
            error_message: self.error_message,
            egress_ip: self.egress_ip,
            refused: self.refused,
            wait_ms: self.wait_ms,
            key_id: self.key_id,
        }
    }
}
