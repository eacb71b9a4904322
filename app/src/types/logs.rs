//! One row of the request log (`proxy_logs`): one upstream attempt.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRow {
    pub id: String,
    /// Epoch milliseconds.
    pub timestamp: i64,
    pub request_id: String,
    pub endpoint: String,
    pub provider: String,
    pub connection_id: Option<String>,
    pub model: String,
    /// HTTP status of the attempt; 0 when no response arrived.
    pub status: i32,
    pub latency_ms: i64,
    pub ttfb_ms: Option<i64>,
    pub stream: bool,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub cached_tokens: Option<i64>,
    pub error_kind: Option<String>,
    pub error_message: Option<String>,
    /// The local address the attempt left from (SPEC §R7's egress IP).
    pub egress_ip: Option<String>,
}

/// `GET /api/logs` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogList {
    pub logs: Vec<LogRow>,
}
