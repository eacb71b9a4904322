//! Dashboard sessions: random tokens in an HttpOnly, SameSite=Strict
//! cookie; the database keeps only their SHA-256 and expiry, so a restart
//! signs nobody out while sign-out and a password reset (even from the
//! command line, against a running server) end sessions at once.

use sea_orm::{DatabaseConnection, DbErr};

use crate::db::dashboard_sessions as store;

/// Name of the session cookie.
pub const COOKIE: &str = "omniroute_session";
/// Session lifetime in seconds (7 days).
pub const TTL_SECS: i64 = 7 * 24 * 3600;

/// Starts a session; returns the token for the cookie.
pub async fn create(db: &DatabaseConnection, now_ms: i64) -> Result<String, DbErr> {
    let token = super::random_token(32);
    store::insert(db, super::sha256_hex(&token), now_ms, now_ms + TTL_SECS * 1000).await?;
    Ok(token)
}

/// Whether `token` names a live session. A database error counts as "no"
/// (and is logged): the caller is asked to sign in, never let in.
pub async fn is_valid(db: &DatabaseConnection, token: &str, now_ms: i64) -> bool {
    store::is_live(db, &super::sha256_hex(token), now_ms).await.unwrap_or_else(|e| {
        tracing::error!(error = %e, "checking a dashboard session failed");
        false
    })
}

pub async fn revoke(db: &DatabaseConnection, token: &str) -> Result<(), DbErr> {
    store::delete(db, &super::sha256_hex(token)).await
}

/// Signs everyone out (after a password reset).
pub async fn revoke_all(db: &DatabaseConnection) -> Result<(), DbErr> {
    store::delete_all(db).await
}

/// The `Set-Cookie` value that starts a session.
pub fn set_cookie(token: &str) -> String {
    format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={TTL_SECS}")
}

/// The `Set-Cookie` value that ends a session.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// The session token from a `Cookie` header, if any.
pub fn token_from_cookie_header(header: &str) -> Option<&str> {
    header.split(';').find_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]
    use super::*;

    #[tokio::test]
    async fn sessions_survive_a_reconnect_expire_and_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("s.db").display());
        let db = crate::db::connect(&url).await.unwrap();
        let t = create(&db, 1_000).await.unwrap();
        let other = create(&db, 1_000).await.unwrap();
        drop(db);
        let db = crate::db::connect(&url).await.unwrap();
        assert!(is_valid(&db, &t, 2_000).await);
        assert!(!is_valid(&db, &t, 1_000 + TTL_SECS * 1000).await);
        assert!(!is_valid(&db, "not-a-session", 2_000).await);
        revoke(&db, &t).await.unwrap();
        assert!(!is_valid(&db, &t, 2_000).await);
        assert!(is_valid(&db, &other, 2_000).await);
        revoke_all(&db).await.unwrap();
        assert!(!is_valid(&db, &other, 2_000).await);
    }

    #[test]
    fn cookie_parsing_finds_the_session() {
        assert_eq!(token_from_cookie_header("a=1; omniroute_session=tok; b=2"), Some("tok"));
        assert_eq!(token_from_cookie_header("a=1"), None);
        assert!(set_cookie("x").contains("HttpOnly; SameSite=Strict"));
    }
}
