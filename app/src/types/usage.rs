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
