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

use app::types::{
    AuthType, ConnectionView, CreateConnection, mask_secret,
    subscription::{
        CompleteSignIn, ImportCredentials, ImportFormat, LocalCredentials, LocalCredentialsFile, SignInStarted,
        WaitingSignIn,
    },
};

use super::{ServiceError, changes, connections as connection_service, stash};
use crate::db::feed::Change;

pub mod callback;
mod credentials_file;
use crate::{
    auth::{self, sign_ins::SignIn},
    db::connections,
    routing::registry::LiveConnection,
    state::AppState,
    upstream::{
        code_assist,
        oauth::{self, Pkce, RefreshError, TokenSet},
    },
};
pub use callback::Browser;

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
    // Instances sharing the database take turns too: an issuer that
    // rotates refresh tokens refuses the second use of one.
    let _shared_turn = connections::refresh_turn(&state.db, &conn.id).await.map_err(|e| failed(&e))?;
    let row = connections::get(&state.db, &conn.id)
        .await
        .map_err(|e| failed(&e))?
        .ok_or_else(|| failed(&"the connection was deleted"))?;
    let plain =
        row.credential_enc.as_deref().map(|c| state.auth.secrets.decrypt(c)).transpose().map_err(|e| failed(&e))?;
    let TokenSet { access_token, refresh_token, account_id, .. } =
        plain.as_deref().map(TokenSet::read).unwrap_or_default();
    if conn.credential.as_ref().is_some_and(|c| !access_token.is_empty() && c.0 != access_token) {
        // Another instance refreshed it while this one waited for the turn.
        state.routing.connections.reload(&state.db, &state.auth.secrets).await.map_err(|e| failed(&e))?;
        let snapshot = state.routing.connections.snapshot();
        return snapshot.connection(&conn.id).cloned().ok_or_else(|| failed(&"the connection is no longer active"));
    }
    let (Some(client), Some(refresh_token)) = (oauth::client(conn.provider.id), refresh_token) else {
        return Err(Unrefreshed::Failed(
            "the connection has no refresh token; paste a new access token or sign in again".into(),
        ));
    };
    let url = state.config.oauth_token_url(client.provider).unwrap_or(client.token_url);
    let now = state.clock.now_ms();
    match oauth::refresh(&*state.upstream, client, url, &refresh_token, now).await {
        Ok(mut fresh) => {
            // The account stays the account when the answer does not name it.
            fresh.account_id = fresh.account_id.or(account_id);
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

/// `conn` with its Code Assist project (a Gemini CLI account): found
/// once, on its first attempt, and stored with its tokens. Single-flight
/// with the refresh, so parallel first requests find it once.
pub async fn with_project(state: &AppState, conn: &Arc<LiveConnection>) -> Result<Arc<LiveConnection>, String> {
    let _turn = state.routing.connections.refresh_turn(&conn.id).await;
    let current = state.routing.connections.snapshot().connection(&conn.id).cloned();
    if let Some(current) = current.filter(|c| c.account_id.is_some()) {
        return Ok(current);
    }
    let project = code_assist::project(state.upstream.as_ref(), &conn.endpoint).await.map_err(|e| conn.redact(&e))?;
    let row = connections::get(&state.db, &conn.id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the connection was deleted".to_owned())?;
    let plain = row.credential_enc.as_deref().map(|c| state.auth.secrets.decrypt(c)).transpose();
    let mut tokens = plain.map_err(|e| e.to_string())?.as_deref().map(TokenSet::read).unwrap_or_default();
    tokens.account_id = Some(project);
    store(state, row, &tokens).await.map_err(|e| e.to_string())?;
    tracing::info!(connection_id = %conn.id, "Code Assist project found");
    let snapshot = state.routing.connections.snapshot();
    snapshot.connection(&conn.id).cloned().ok_or_else(|| "the connection is no longer active".into())
}

/// Stores the new token set, then rebuilds the registry with it.
async fn store(state: &AppState, mut row: connections::ConnectionRow, tokens: &TokenSet) -> Result<(), sea_orm::DbErr> {
    row.credential_enc = Some(state.auth.secrets.encrypt(&tokens.stored()));
    row.credential_suffix = Some(mask_secret(&tokens.access_token));
    row.updated_at = state.clock.now_ms();
    connections::set_credential(&state.db, &row).await?;
    changes::changed(state, Change::Connections).await
}

/// Starts a sign-in to `provider`: the page to send the user to, and the
/// `state` its code must come back with (within 10 minutes, once).
/// A ChatGPT sign-in started from a browser on this machine is completed
/// by the gateway's own listener at the redirect address ([`callback`]).
pub async fn start(state: &Arc<AppState>, provider: &str, from: &Browser) -> Result<SignInStarted, ServiceError> {
    let client = subscription_client(provider)?;
    let pkce = Pkce::of(auth::random_token(32));
    let sign_in_state = auth::random_token(32);
    let authorize_url = client.authorize_url(&sign_in_state, &pkce.challenge);
    let listening = from.local && client.redirect_uri.starts_with("http://localhost:1455/") && callback::listen(state);
    let provider = client.provider.to_owned();
    let sign_in = SignIn { provider, verifier: pkce.verifier, listening, dashboard: from.dashboard.clone() };
    stash::put(state, &sign_in_state, &sign_in).await?;
    Ok(SignInStarted { authorize_url, state: sign_in_state, listening })
}

/// The sign-in started with `sign_in_state`, while it waits for its code
/// (the page a plain form post reloads shows it again).
pub async fn pending(state: &AppState, sign_in_state: &str) -> Result<Option<WaitingSignIn>, ServiceError> {
    let Some(s) = stash::peek::<SignIn>(state, sign_in_state).await? else { return Ok(None) };
    let Some(client) = oauth::client(&s.provider) else { return Ok(None) };
    let authorize_url = client.authorize_url(sign_in_state, &oauth::challenge_of(&s.verifier));
    let started = SignInStarted { authorize_url, state: sign_in_state.to_owned(), listening: s.listening };
    Ok(Some(WaitingSignIn { provider: client.provider.to_owned(), started }))
}

/// Completes a sign-in with the code the provider's page gave: the new
/// connection.
pub async fn complete(state: &AppState, provider: &str, input: CompleteSignIn) -> Result<ConnectionView, ServiceError> {
    input.validate().map_err(ServiceError::Invalid)?;
    let client = subscription_client(provider)?;
    let (code, pasted_state) = read_code(&input.code);
    if pasted_state.is_some_and(|s| s != input.state) {
        return Err(ServiceError::field(
            "code",
            "this code belongs to another sign-in: paste the code of the one you started last",
        ));
    }
    let now = state.clock.now_ms();
    let taken = stash::take::<SignIn>(state, &input.state).await?;
    let Some(sign_in) = taken.filter(|s| s.provider == client.provider) else {
        return Err(ServiceError::field(
            "state",
            format!(
                "no {provider} sign-in is waiting with this state (a sign-in lasts 10 minutes and completes once); start again"
            ),
        ));
    };
    let url = state.config.oauth_token_url(client.provider).unwrap_or(client.token_url);
    let tokens =
        match oauth::exchange(&*state.upstream, client, url, (&code, &input.state, &sign_in.verifier), now).await {
            Ok(tokens) => tokens,
            Err(RefreshError::Refused(why)) => {
                return Err(ServiceError::field(
                    "code",
                    format!(
                        "{provider} refused the code ({why}): a code works once and only for a few minutes; start again"
                    ),
                ));
            }
            Err(e @ RefreshError::Failed(_)) => return Err(ServiceError::Unavailable(e.to_string())),
        };
    let name = input.name.unwrap_or_else(|| format!("{provider} subscription"));
    tracing::info!(provider, "subscription signed in");
    add(state, client.provider, name, tokens).await
}

/// Adds the account a CLI's credentials file describes.
/// Its contents come in the request, or — `fromThisMachine`, for a
/// browser on the gateway's machine — from the CLI's default path there.
pub async fn import(
    state: &AppState,
    input: ImportCredentials,
    browser: &Browser,
) -> Result<ConnectionView, ServiceError> {
    let file = match input.from_this_machine {
        true if !input.credentials.is_null() => {
            return Err(ServiceError::field("credentials", "send the file's contents or fromThisMachine, not both"));
        }
        true => credentials_file::read_local(state, input.format, browser)?,
        false => input.credentials,
    };
    let (provider, tokens) = match input.format {
        ImportFormat::ClaudeCode => ("claude", credentials_file::claude_code(&file)?),
        ImportFormat::Codex => ("codex", credentials_file::codex(&file)?),
        ImportFormat::GeminiCli => ("gemini-cli", credentials_file::gemini_cli(&file)?),
    };
    add(state, provider, input.name, tokens).await
}

/// Which CLIs' credentials files are at their default paths on the
/// gateway's machine — told only to a browser on that machine.
pub fn local_files(state: &AppState, browser: &Browser) -> LocalCredentials {
    if !browser.local {
        return LocalCredentials::default();
    }
    let files = ImportFormat::ALL
        .into_iter()
        .map(|format| LocalCredentialsFile {
            format,
            path: format!("~/{}", format.default_path()),
            found: state.config.home_dir.as_ref().is_some_and(|home| home.join(format.default_path()).is_file()),
        })
        .collect();
    LocalCredentials { local: true, files }
}

/// A subscription connection of `provider` holding `tokens`.
async fn add(state: &AppState, provider: &str, name: String, tokens: TokenSet) -> Result<ConnectionView, ServiceError> {
    let input = CreateConnection {
        provider: provider.to_owned(),
        name,
        auth_type: Some(AuthType::Oauth),
        access_token: Some(tokens.access_token),
        refresh_token: tokens.refresh_token,
        expires_at: tokens.expires_at,
        ..Default::default()
    };
    connection_service::create(state, input).await
}

fn subscription_client(provider: &str) -> Result<&'static oauth::OauthClient, ServiceError> {
    oauth::client(provider).ok_or_else(|| {
        ServiceError::field(
            "provider",
            format!("{provider} has no sign-in; subscription providers: {}", oauth::providers()),
        )
    })
}

/// The code in what the user pasted: `code#state` (Claude's page), a
/// redirect URL with `code` and `state` in its query, or the bare code;
/// and the state it names, if any.
fn read_code(pasted: &str) -> (String, Option<String>) {
    let pasted = pasted.trim();
    if let Some((_, query)) = pasted.split_once('?').filter(|_| pasted.starts_with("http")) {
        let query = query.split('#').next().unwrap_or_default();
        let param =
            |name: &str| form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
        return (param("code").unwrap_or_default(), param("state"));
    }
    match pasted.split_once('#') {
        Some((code, state)) => (code.to_owned(), Some(state.to_owned())),
        None => (pasted.to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_code_may_be_the_code_code_hash_state_or_the_redirect_url() {
        let own = |code: &str, state: Option<&str>| (code.to_owned(), state.map(str::to_owned));
        assert_eq!(read_code(" abc#st-1 "), own("abc", Some("st-1")));
        assert_eq!(read_code("abc"), own("abc", None));
        let url = "http://localhost:1455/auth/callback?code=ac%2F1&scope=x&state=st-2";
        assert_eq!(read_code(url), own("ac/1", Some("st-2")));
        assert_eq!(read_code("https://example.test/cb?state=s"), own("", Some("s")));
    }
}
