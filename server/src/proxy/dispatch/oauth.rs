//! A subscription (OAuth) connection's token at attempt time: the attempt
//! calls the connection as the registry has it now (another request may
//! have refreshed its token since this one was planned), refreshed first
//! when the token is about to expire; an upstream 401 earns one refresh
//! and one more try on the same connection (`services::oauth`).

use std::sync::Arc;

use super::{attempt::AttemptGuard, call::Failure};
use crate::{
    routing::registry::LiveConnection,
    services::oauth::{self, Unrefreshed},
    state::AppState,
    upstream::catalog::Wire,
};

/// `guard`'s connection with a usable token (the guard then holds it, so
/// texts are redacted of the token actually sent), or the attempt's failure.
pub(super) async fn ready(state: &AppState, guard: &mut AttemptGuard) -> Result<(), Failure> {
    let conn = state.routing.connections.snapshot().connection(&guard.conn.id).cloned();
    let conn = conn.unwrap_or_else(|| guard.conn.clone());
    let now = state.clock.now_ms();
    if !oauth::needs_refresh(&conn, now) {
        guard.conn = conn;
        return with_project(state, guard).await;
    }
    match oauth::refresh(state, &conn, false).await {
        Ok(fresh) => guard.conn = fresh,
        // Not expired yet: the old token still serves; the next request tries again.
        Err(Unrefreshed::Failed(_)) if conn.expires_at.is_some_and(|at| at > now) => guard.conn = conn,
        Err(e) => return Err(unrefreshed(guard, &e)),
    }
    with_project(state, guard).await
}

/// A Gemini CLI account's Code Assist project, found on its first attempt.
async fn with_project(state: &AppState, guard: &mut AttemptGuard) -> Result<(), Failure> {
    if guard.conn.provider.wire != Wire::CodeAssist || guard.conn.account_id.is_some() {
        return Ok(());
    }
    match oauth::with_project(state, &guard.conn).await {
        Ok(conn) => {
            guard.conn = conn;
            Ok(())
        }
        Err(message) => {
            guard.log_failure(None, "oauth_project_failed", &message);
            Err(Failure {
                connection_id: guard.conn.id.clone(),
                status: None,
                retry_after: None,
                message,
                code: None,
                timed_out: false,
            })
        }
    }
}

/// After an upstream 401 on `conn`: whether its token was refreshed, so
/// the attempt may be made once more.
pub(super) async fn refreshed(state: &AppState, conn: &Arc<LiveConnection>) -> bool {
    conn.oauth && oauth::refresh(state, conn, true).await.is_ok()
}

/// An attempt that could not get a usable token: its row; the engine
/// already knows (a refused refresh token made the connection `expired`).
fn unrefreshed(guard: &mut AttemptGuard, e: &Unrefreshed) -> Failure {
    let (status, kind) = match e {
        Unrefreshed::Refused(_) => (Some(401), "auth_expired"),
        Unrefreshed::Failed(_) => (None, "oauth_refresh_failed"),
    };
    failure(guard, status, kind, e.to_string())
}

/// The attempt failed before its call: its row, and its failure.
fn failure(guard: &mut AttemptGuard, status: Option<u16>, kind: &'static str, message: String) -> Failure {
    guard.log_failure(status, kind, &message);
    Failure { connection_id: guard.conn.id.clone(), status, retry_after: None, message, code: None, timed_out: false }
}
