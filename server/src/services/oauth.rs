//! Keeping a subscription account's access token fresh. The proxy asks
//! before each attempt on an OAuth connection ([`needs_refresh`] is one
//! comparison, so the hot path pays nothing) and again after an upstream
//! 401. A refresh is single-flight per connection: parallel requests wait
//! for the one refresh and then use its token. The rotated token set is
//! stored before any request uses it, so a restart never strands the
//! account on a spent refresh token. A refusal from the issuer makes the
//! connection terminal `expired` ("reconnect" on Providers) at once — no
//! retry storm against the token endpoint.

use std::sync::Arc;

use app::types::mask_secret;

use crate::{
    db::connections,
    routing::registry::LiveConnection,
    state::AppState,
    upstream::oauth::{self, RefreshError, TokenSet},
};

/// How long before its expiry a token is refreshed.
pub const REFRESH_MARGIN_MS: i64 = 5 * 60_000;

/// Whether `conn`'s access token expires within the margin.
pub fn needs_refresh(conn: &LiveConnection, now_ms: i64) -> bool {
    conn.expires_at.is_some_and(|at| at - now_ms < REFRESH_MARGIN_MS)
}

/// Why a connection has no fresh token.
#[derive(Debug, thiserror::Error)]
pub enum Unrefreshed {
    /// The issuer refused its refresh token: the connection is now
    /// terminal `expired`.
    #[error(transparent)]
    Refused(RefreshError),
    /// The refresh could not be done now (issuer unreachable, no refresh
    /// token, the database); the connection is unchanged.
    #[error("{0}")]
    Failed(String),
}

/// `conn` with a fresh access token: refreshed when it expires within the
/// margin, or when `rejected` (the upstream just refused the token). The
/// connection as it now is in the registry.
pub async fn refresh(
    state: &AppState,
    conn: &Arc<LiveConnection>,
    rejected: bool,
) -> Result<Arc<LiveConnection>, Unrefreshed> {
    let _turn = state.routing.connections.refresh_turn(&conn.id).await;
    // Whoever had the turn before may have refreshed it already.
    let current = state.routing.connections.snapshot().connection(&conn.id).cloned();
    if let Some(current) =
        current.filter(|c| c.credential.as_ref().map(|t| &t.0) != conn.credential.as_ref().map(|t| &t.0))
    {
        return Ok(current);
    }
    if !rejected && !needs_refresh(conn, state.clock.now_ms()) {
        return Ok(conn.clone());
    }
    let failed = |e: &dyn std::fmt::Display| Unrefreshed::Failed(e.to_string());
    let row = connections::get(&state.db, &conn.id)
        .await
        .map_err(|e| failed(&e))?
        .ok_or_else(|| failed(&"the connection was deleted"))?;
    let plain =
        row.credential_enc.as_deref().map(|c| state.auth.secrets.decrypt(c)).transpose().map_err(|e| failed(&e))?;
    let tokens = plain.as_deref().map(TokenSet::read);
    let (Some(client), Some(refresh_token)) = (oauth::client(conn.provider.id), tokens.and_then(|t| t.refresh_token))
    else {
        return Err(Unrefreshed::Failed(
            "the connection has no refresh token; paste a new access token or sign in again".into(),
        ));
    };
    let url = state.config.oauth_token_url(client.provider).unwrap_or(client.token_url);
    let now = state.clock.now_ms();
    match oauth::refresh(&*state.upstream, client, url, &refresh_token, now).await {
        Ok(fresh) => {
            store(state, row, &fresh).await.map_err(|e| failed(&e))?;
            tracing::info!(connection_id = %conn.id, provider = conn.provider.id, "OAuth token refreshed");
            let snapshot = state.routing.connections.snapshot();
            snapshot.connection(&conn.id).cloned().ok_or_else(|| failed(&"the connection is no longer active"))
        }
        Err(e @ RefreshError::Refused(_)) => {
            let message = e.to_string();
            tracing::warn!(connection_id = %conn.id, provider = conn.provider.id, "{message}");
            state.engine.expire_connection(&conn.id, &message);
            Err(Unrefreshed::Refused(e))
        }
        Err(e) => {
            tracing::warn!(connection_id = %conn.id, provider = conn.provider.id, error = %e, "OAuth refresh failed");
            Err(failed(&e))
        }
    }
}

/// Stores the new token set, then rebuilds the registry with it.
async fn store(state: &AppState, mut row: connections::ConnectionRow, tokens: &TokenSet) -> Result<(), sea_orm::DbErr> {
    row.credential_enc = Some(state.auth.secrets.encrypt(&tokens.stored()));
    row.credential_suffix = Some(mask_secret(&tokens.access_token));
    row.updated_at = state.clock.now_ms();
    connections::set_credential(&state.db, &row).await?;
    state.routing.connections.reload(&state.db, &state.auth.secrets).await
}
