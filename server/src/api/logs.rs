//! `GET /api/logs?limit&provider&status&since&requestId` (newest first;
//! one request's attempt trail oldest first) and `GET /api/usage`, what
//! the log adds up to.

use app::types::{
    FieldError, LogList,
    usage::{UsageGroupBy, UsageReport},
};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::Deserialize;
use std::sync::Arc;

use super::error::ApiError;
use crate::{
    db::logs::LogFilter,
    services::{
        self,
        logs::{self, DEFAULT_LIMIT, MAX_LIMIT},
    },
    state::AppState,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    limit: Option<u64>,
    provider: Option<String>,
    status: Option<i32>,
    /// Epoch ms.
    since: Option<i64>,
    /// One request's rows, oldest first (its attempt trail).
    #[serde(rename = "requestId")]
    request_id: Option<String>,
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    q: Result<Query<LogQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<LogList>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::Invalid(vec![FieldError::new("query", e.body_text())]))?;
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::Invalid(vec![FieldError::new("limit", format!("must be between 1 and {MAX_LIMIT}"))]));
    }
    let filter = LogFilter {
        limit,
        provider: q.provider.filter(|p| !p.is_empty()),
        status: q.status,
        since: q.since,
        request_id: q.request_id.filter(|r| !r.is_empty()),
        ..Default::default()
    };
    Ok(Json(logs::list(&state, filter).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    /// Epoch ms (default: a day before `until`).
    since: Option<i64>,
    /// Epoch ms, excluded (default: now).
    until: Option<i64>,
    #[serde(rename = "groupBy")]
    group_by: Option<String>,
}

/// `GET /api/usage?since&until&groupBy=key|model|connection|day`.
pub async fn usage(
    State(state): State<Arc<AppState>>,
    q: Result<Query<UsageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<UsageReport>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::Invalid(vec![FieldError::new("query", e.body_text())]))?;
    let word = q.group_by.as_deref().unwrap_or("model");
    let Some(by) = UsageGroupBy::parse(word) else {
        let why = format!("is {word:?}; use key, model, connection or day");
        return Err(ApiError::Invalid(vec![FieldError::new("groupBy", why)]));
    };
    Ok(Json(services::usage::report(&state, q.since, q.until, by).await?))
}
