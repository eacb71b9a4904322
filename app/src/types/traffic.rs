//! Traffic over time, for Health's charts: per provider (and per
//! connection), upstream attempts by outcome class and their latency
//! (p50 / p95) per bucket of a window, and the breaker's state over it.

use serde::{Deserialize, Serialize};

/// The windows Health charts: key, label, length and bucket (ms).
pub const TRAFFIC_WINDOWS: [(&str, &str, i64, i64); 2] =
    [("1h", "last hour", 3_600_000, 60_000), ("24h", "last 24 hours", 86_400_000, 1_800_000)];

/// The window a key names (the first, the last hour, when unknown).
pub fn traffic_window(key: &str) -> (&'static str, &'static str, i64, i64) {
    TRAFFIC_WINDOWS.into_iter().find(|w| w.0 == key).unwrap_or(TRAFFIC_WINDOWS[0])
}

/// Upstream attempts in one bucket (or a whole window), by outcome.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficPoint {
    /// Answered 2xx.
    pub ok: u32,
    /// Answered 4xx other than 429.
    pub client_errors: u32,
    pub rate_limited: u32,
    pub server_errors: u32,
    /// No answer arrived (refused connection, reset, timeout).
    pub transport: u32,
    /// Latency percentiles in ms: time to the first event for a stream,
    /// to the whole answer otherwise (estimated from a histogram).
    pub p50_ms: Option<u32>,
    pub p95_ms: Option<u32>,
    /// The 95th percentile of the gateway's own hold before an attempt
    /// (request queue, concurrency slot, cooldown and combo waits), ms.
    #[serde(default)]
    pub wait_p95_ms: Option<u32>,
    /// Tokens the attempts spent, as their answers reported them: input
    /// (cached included), output, and the cached part of the input.
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
}

impl TrafficPoint {
    pub fn requests(&self) -> u32 {
        self.ok + self.errors()
    }

    pub fn errors(&self) -> u32 {
        self.client_errors + self.rate_limited + self.server_errors + self.transport
    }

    /// Errors per request, 0 without requests.
    pub fn error_rate(&self) -> f64 {
        match self.requests() {
            0 => 0.0,
            n => f64::from(self.errors()) / f64::from(n),
        }
    }
}

/// One series: its buckets oldest first, and the whole window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficSeries {
    pub total: TrafficPoint,
    pub points: Vec<TrafficPoint>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionTraffic {
    pub id: String,
    /// `None`: deleted since.
    pub name: Option<String>,
    pub series: TrafficSeries,
}

/// A stretch of time the breaker spent in one state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerSpan {
    pub from_ms: i64,
    pub to_ms: i64,
    /// `CLOSED`, `OPEN`, `HALF_OPEN`, `DEGRADED`, or `unknown` (before
    /// the gateway started).
    pub state: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderTraffic {
    pub provider: String,
    pub series: TrafficSeries,
    pub connections: Vec<ConnectionTraffic>,
    /// The breaker over the window, oldest first.
    pub breaker: Vec<BreakerSpan>,
}

/// `GET /api/monitoring/traffic?window=1h|24h`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficReport {
    /// A key of [`TRAFFIC_WINDOWS`].
    pub window: String,
    /// Epoch ms of the first bucket's start, and each bucket's length.
    pub start_ms: i64,
    pub bucket_ms: i64,
    /// Epoch ms of the report.
    pub generated_at: i64,
    /// Every provider with traffic in the window or a breaker that moved.
    pub providers: Vec<ProviderTraffic>,
    /// Every provider together, over the last hour and the hour before.
    pub last_hour: TrafficPoint,
    pub previous_hour: TrafficPoint,
}
