//! Signing in to the dashboard with the admin password, for
//! `POST /api/auth/login` and the login page alike: throttled per address
//! and globally (`auth::login_throttle`, counted across the instances on
//! one database), checked by argon2 one at a time.

use std::net::{IpAddr, Ipv4Addr};

use crate::{
    auth::{password, sessions},
    db::feed::{self, Change},
    state::AppState,
};

/// Why a sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    #[error("wrong password")]
    WrongPassword,
    /// Too many recent failures; retry after this many seconds.
    #[error("too many failed sign-ins; try again in {0} s")]
    Throttled(u64),
    #[error("database error: {0}")]
    Db(#[from] sea_orm::DbErr),
}

/// Checks `password` from `client` (unknown: all such callers share one
/// bucket); on success the new session's token.
pub async fn sign_in(state: &AppState, client: Option<IpAddr>, password: &str) -> Result<String, SignInError> {
    let client = client.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    state.auth.login_throttle.admit(client, state.engine.now()).map_err(SignInError::Throttled)?;
    // The attempt already counts as a failure (see `login_throttle`), here
    // and on the other instances on the database.
    feed::announce(&state.db, &state.store.instance, &Change::SignInAdmitted(vec![client.to_string()])).await;
    if !password::check(&state.db, password).await? {
        tracing::warn!(%client, "admin sign-in failed: wrong password");
        return Err(SignInError::WrongPassword);
    }
    state.auth.login_throttle.succeeded(client);
    feed::announce(&state.db, &state.store.instance, &Change::SignInSucceeded(vec![client.to_string()])).await;
    Ok(sessions::create(&state.db, state.clock.now_ms()).await?)
}
