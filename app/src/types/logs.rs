//! One row of the request log (`proxy_logs`): one upstream attempt, or a
//! request the gateway refused itself.

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
    /// The connection's name (`None`: no connection, or deleted since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_name: Option<String>,
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
    /// The gateway answered without calling any upstream (breaker open,
    /// every connection cooling, queue full, bad key, unknown model, …);
    /// `errorKind` holds the code the client got.
    #[serde(default)]
    pub refused: bool,
    /// How long the gateway itself held the request before this attempt
    /// (request queue, concurrency slot, cooldown and combo waits), ms.
    #[serde(default)]
    pub wait_ms: i64,
}

/// `GET /api/logs` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogList {
    pub logs: Vec<LogRow>,
    /// Epoch ms of the answer: relative times count from it (so the server
    /// and the browser render the same text).
    #[serde(default)]
    pub generated_at: i64,
    /// The `before` cursor of the next (older) page, when there may be one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older: Option<i64>,
}

/// A class of outcomes the Logs page filters by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StatusClass {
    #[serde(rename = "2xx")]
    Success,
    /// 4xx other than 429.
    #[serde(rename = "4xx")]
    ClientError,
    #[serde(rename = "429")]
    RateLimited,
    #[serde(rename = "5xx")]
    ServerError,
    /// No answer arrived (status 0).
    #[serde(rename = "transport")]
    Transport,
}

impl StatusClass {
    pub const ALL: [Self; 5] =
        [Self::Success, Self::ClientError, Self::RateLimited, Self::ServerError, Self::Transport];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "2xx",
            Self::ClientError => "4xx",
            Self::RateLimited => "429",
            Self::ServerError => "5xx",
            Self::Transport => "transport",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether an attempt's status is of this class.
    pub fn contains(self, status: i32) -> bool {
        match self {
            Self::Success => (200..300).contains(&status),
            Self::ClientError => (400..500).contains(&status) && status != 429,
            Self::RateLimited => status == 429,
            Self::ServerError => (500..600).contains(&status),
            Self::Transport => status == 0,
        }
    }
}

/// How far back the Logs page looks.
pub const LOG_WINDOWS: [(&str, &str, i64); 3] =
    [("1h", "last hour", 3_600_000), ("24h", "last 24 hours", 86_400_000), ("7d", "last 7 days", 604_800_000)];

/// The Logs page's search: every part optional; text matches are
/// case-insensitive substrings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogSearch {
    pub provider: Option<String>,
    /// Matches the connection's name.
    pub connection: Option<String>,
    pub model: Option<String>,
    pub status: Option<StatusClass>,
    /// A key of [`LOG_WINDOWS`].
    pub window: Option<String>,
    /// Only rows older than this cursor (from [`LogList::older`]).
    pub before: Option<i64>,
    /// One request's rows only, oldest first: its attempt trail.
    #[serde(default)]
    pub request: Option<String>,
}

impl LogSearch {
    /// Whether anything narrows the list (then an empty page means "no
    /// match", not "no requests yet").
    pub fn narrows(&self) -> bool {
        self.provider.is_some()
            || self.connection.is_some()
            || self.model.is_some()
            || self.status.is_some()
            || self.window.is_some()
            || self.request.is_some()
    }

    /// The window's length in ms, if one is set and known.
    pub fn window_ms(&self) -> Option<i64> {
        let w = self.window.as_deref()?;
        LOG_WINDOWS.iter().find(|(key, _, _)| *key == w).map(|(_, _, ms)| *ms)
    }
}
