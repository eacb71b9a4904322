//! `GET /api/usage`: requests and tokens from the request log, grouped by
//! client key, model, connection or day.

use serde::{Deserialize, Serialize};

/// What usage is grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UsageGroupBy {
    Key,
    Model,
    Connection,
    Day,
}

impl UsageGroupBy {
    pub const ALL: [Self; 4] = [Self::Model, Self::Key, Self::Connection, Self::Day];

    /// From its query word (`key`, `model`, `connection`, `day`).
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|by| by.as_str() == word)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Key => "key",
            Self::Model => "model",
            Self::Connection => "connection",
            Self::Day => "day",
        }
    }

    /// How the Usage page names the grouping.
    pub fn label(self) -> &'static str {
        match self {
            Self::Key => "By API key",
            Self::Model => "By model",
            Self::Connection => "By connection",
            Self::Day => "By day",
        }
    }
}

/// The Usage page's windows: query word, label and length (ms).
pub const USAGE_WINDOWS: [(&str, &str, i64); 3] =
    [("24h", "Last day", 86_400_000), ("7d", "Last 7 days", 7 * 86_400_000), ("30d", "Last 30 days", 30 * 86_400_000)];

/// `GET /api/usage` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub group_by: UsageGroupBy,
    /// The window, epoch ms: `since` included, `until` not.
    pub since: i64,
    pub until: i64,
    /// The most requests first.
    pub groups: Vec<UsageGroup>,
}

/// One group's requests and tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageGroup {
    /// The key's or connection's id, `provider/model`, or the UTC day
    /// (`2026-12-05`); `None`: requests without a key or a connection.
    pub group: Option<String>,
    /// The key's or connection's name (`None` when deleted since).
    pub name: Option<String>,
    /// Client requests (however many attempts each made).
    pub requests: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_tokens: i64,
}
