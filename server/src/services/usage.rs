//! `GET /api/usage`: requests and tokens per client key, model,
//! connection or day, read from the request log (whose token counts the
//! relay took from the events it already saw: no answer is parsed twice).
//! One grouped query over the window; the log's retention bounds it.

use app::types::usage::{UsageGroup, UsageGroupBy, UsageReport};
use std::collections::HashMap;

use super::ServiceError;
use crate::{
    db::{api_keys, connections, logs},
    state::AppState,
};

/// The window when none is given: the last day.
pub const DEFAULT_WINDOW_MS: i64 = 86_400_000;

pub async fn report(
    state: &AppState,
    since: Option<i64>,
    until: Option<i64>,
    by: UsageGroupBy,
) -> Result<UsageReport, ServiceError> {
    let until = until.unwrap_or_else(|| state.clock.now_ms() + 1);
    let since = since.unwrap_or(until - DEFAULT_WINDOW_MS);
    if since >= until {
        return Err(ServiceError::field("since", "must be before until (both epoch milliseconds)"));
    }
    let grouped = logs::usage(&state.db, (since, until), by).await?;
    let names: HashMap<String, String> = match by {
        UsageGroupBy::Key => api_keys::list(&state.db).await?.into_iter().map(|k| (k.id, k.name)).collect(),
        UsageGroupBy::Connection => {
            connections::list(&state.db, None).await?.into_iter().map(|c| (c.id, c.name)).collect()
        }
        UsageGroupBy::Model | UsageGroupBy::Day => HashMap::new(),
    };
    let groups = grouped
        .into_iter()
        .map(|g| {
            let group = g.grouped.map(|id| match by {
                UsageGroupBy::Day => id.parse().map_or(id, app::format::day),
                // A request refused before its provider was known has none.
                UsageGroupBy::Model => id.trim_start_matches('/').to_owned(),
                _ => id,
            });
            UsageGroup {
                name: group.as_ref().and_then(|id| names.get(id).cloned()),
                group,
                requests: g.requests,
                input_tokens: g.input_tokens.unwrap_or(0),
                output_tokens: g.output_tokens.unwrap_or(0),
                cached_tokens: g.cached_tokens.unwrap_or(0),
            }
        })
        .collect();
    Ok(UsageReport { group_by: by, since, until, groups })
}
