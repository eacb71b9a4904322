//! Subscription plan windows: read from each account's usage endpoint
//! (Claude's `{base}/api/oauth/usage`, Codex's `{base}/wham/usage`, a
//! Gemini CLI account's `retrieveUserQuota` of Code Assist) in the
//! background, at most every [`FETCH_EVERY_MS`] per account — an answer's
//! headers keep them current in between ([`crate::routing::quota`]) — and
//! listed for `GET /api/quotas` and the Providers page's bars.
//!
//! The fetch uses the account's current token, renewed first when it is
//! about to expire; a refused token is reported, never refreshed here (a
//! refresh token works once, and the proxy renews it on the next request).

use std::{
    sync::{Arc, Weak},
    time::Duration,
};

use app::types::subscription::{ConnectionQuota, QuotaList, QuotaWindow};

use crate::{
    db,
    routing::{
        quota::{self, PlanReport},
        registry::LiveConnection,
    },
    services::oauth,
    state::AppState,
    upstream::catalog::Wire,
};

/// How often an account's usage endpoint is read at most.
pub const FETCH_EVERY_MS: i64 = 5 * 60_000;
/// How often the background task looks for accounts due.
const TICK: Duration = Duration::from_secs(60);
/// The largest usage answer read.
const MAX_USAGE_BODY: usize = 256 * 1024;
/// The longest one usage read may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads `conn`'s usage endpoint: its plan windows, now recorded.
pub async fn fetch(state: &AppState, conn: &Arc<LiveConnection>) -> Result<PlanReport, String> {
    let Some(path) = conn.provider.wire.usage_path() else {
        return Err(format!("{} reports no plan usage", conn.provider.id));
    };
    let mut conn = if oauth::needs_refresh(conn, state.clock.now_ms()) {
        oauth::refresh(state, conn, false).await.map_err(|e| e.to_string())?
    } else {
        conn.clone()
    };
    // Code Assist's quota is asked of the account's project.
    let resp = if conn.provider.wire == Wire::CodeAssist {
        if conn.account_id.is_none() {
            conn = oauth::with_project(state, &conn).await?;
        }
        let body = bytes::Bytes::from(serde_json::json!({"project": conn.account_id}).to_string());
        state.upstream.post(&conn.endpoint, path, body, false, &http::HeaderMap::new()).await
    } else {
        state.upstream.get(&conn.endpoint, path).await
    };
    let body = resp
        .map_err(|e| e.to_string())?
        .json_answer(MAX_USAGE_BODY)
        .await
        .map_err(|why| conn.redact(&format!("the usage endpoint {why}")))?;
    let now = state.clock.now_ms();
    let report = match conn.provider.wire {
        Wire::Codex => quota::from_codex_usage(&body, now),
        Wire::CodeAssist => quota::from_code_assist_quota(&body, now),
        _ => quota::from_claude_usage(&body, now),
    };
    let report = report.ok_or_else(|| "the usage endpoint named no plan window".to_owned())?;
    state.routing.quotas.set_plan(&conn.id, report.clone());
    Ok(report)
}

/// Reads the usage endpoint of every subscription account due (`force`:
/// every one), all at once, each within [`FETCH_TIMEOUT`].
pub async fn refresh(state: &AppState, force: bool) {
    let now = state.clock.now_ms();
    let due: Vec<Arc<LiveConnection>> = state
        .routing
        .connections
        .snapshot()
        .all()
        .filter(|c| c.provider.wire.usage_path().is_some() && c.oauth)
        .filter(|c| force || state.routing.quotas.last_read(&c.id).is_none_or(|(at, _)| now - at >= FETCH_EVERY_MS))
        .cloned()
        .collect();
    futures_util::future::join_all(due.iter().map(|conn| async move {
        let error = match tokio::time::timeout(FETCH_TIMEOUT, fetch(state, conn)).await {
            Ok(fetched) => fetched.err(),
            Err(_) => Some(format!("the usage endpoint did not answer within {} s", FETCH_TIMEOUT.as_secs())),
        };
        if let Some(e) = &error {
            tracing::info!(connection_id = %conn.id, provider = conn.provider.id, error = %e, "plan usage not read");
        }
        state.routing.quotas.note_read(&conn.id, state.clock.now_ms(), error);
    }))
    .await;
}

/// Stores the plan reports changed since the last call (written behind:
/// every minute, and at shutdown — never on a request's path).
pub async fn store(state: &AppState) {
    for (id, report) in state.routing.quotas.take_unstored() {
        let Ok(json) = serde_json::to_string(&report) else { continue };
        if let Err(e) = db::connections::set_plan_usage(&state.db, &id, json).await {
            tracing::warn!(connection_id = %id, error = %e, "plan usage not stored");
        }
    }
}

/// Loads the plan reports stored before the restart.
pub async fn restore(state: &AppState) -> Result<(), sea_orm::DbErr> {
    for row in db::connections::list(&state.db, None).await? {
        if let Some(report) = row.plan_usage.as_deref().and_then(|j| serde_json::from_str(j).ok()) {
            state.routing.quotas.restore_plan(&row.id, report);
        }
    }
    Ok(())
}

/// Reads the due accounts' usage every minute while the gateway runs.
pub fn spawn_refresher(state: &Arc<AppState>) {
    let state: Weak<AppState> = Arc::downgrade(state);
    #[expect(clippy::disallowed_methods, reason = "the refresher lives as long as the gateway's state")]
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(state) = state.upgrade() else { return };
            refresh(&state, false).await;
            store(&state).await;
        }
    });
}

/// Every subscription account's plan windows (and any other account the
/// provider stated plan windows for).
pub fn list(state: &AppState) -> QuotaList {
    let snapshot = state.routing.connections.snapshot();
    let connections = snapshot
        .all()
        .filter_map(|c| {
            let report = state.routing.quotas.plan(&c.id);
            (c.oauth || report.is_some()).then(|| view(state, c, report))
        })
        .collect();
    QuotaList { connections }
}

fn view(state: &AppState, conn: &LiveConnection, report: Option<PlanReport>) -> ConnectionQuota {
    let windows = report.as_ref().map_or_else(Vec::new, |r| {
        r.windows
            .iter()
            .map(|w| QuotaWindow {
                window: w.window.clone(),
                used_percent: (w.used * 1000.0).round() / 10.0,
                resets_at: w.reset_at_ms,
            })
            .collect()
    });
    ConnectionQuota {
        connection_id: conn.id.clone(),
        provider: conn.provider.id.to_owned(),
        name: conn.name.clone(),
        plan: report.as_ref().and_then(|r| r.plan.clone()),
        windows,
        source: report.as_ref().map(|r| r.source.as_str().to_owned()),
        fetched_at: report.as_ref().map(|r| r.fetched_at_ms),
        error: state.routing.quotas.last_read(&conn.id).and_then(|(_, error)| error),
    }
}
