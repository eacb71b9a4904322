//! Dashboard sessions: random tokens in an HttpOnly, SameSite=Strict
//! cookie; the server keeps only their SHA-256 and expiry. Sessions live in
//! memory, so a restart signs everyone out (acceptable for one admin).

use parking_lot::Mutex;
use std::collections::HashMap;

/// Name of the session cookie.
pub const COOKIE: &str = "omniroute_session";
/// Session lifetime in seconds (7 days).
pub const TTL_SECS: i64 = 7 * 24 * 3600;

#[derive(Default)]
pub struct SessionStore {
    /// token hash → expiry (epoch ms)
    sessions: Mutex<HashMap<String, i64>>,
}

impl SessionStore {
    /// Starts a session; returns the token for the cookie.
    pub fn create(&self, now_ms: i64) -> String {
        let token = super::random_token(32);
        let mut map = self.sessions.lock();
        map.retain(|_, exp| *exp > now_ms);
        map.insert(super::sha256_hex(&token), now_ms + TTL_SECS * 1000);
        token
    }

    pub fn is_valid(&self, token: &str, now_ms: i64) -> bool {
        self.sessions.lock().get(&super::sha256_hex(token)).is_some_and(|exp| *exp > now_ms)
    }

    pub fn revoke(&self, token: &str) {
        self.sessions.lock().remove(&super::sha256_hex(token));
    }

    /// Signs everyone out (after a password reset).
    pub fn clear(&self) {
        self.sessions.lock().clear();
    }
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
    use super::*;

    #[test]
    fn sessions_expire_and_revoke() {
        let s = SessionStore::default();
        let t = s.create(1_000);
        assert!(s.is_valid(&t, 2_000));
        assert!(!s.is_valid(&t, 1_000 + TTL_SECS * 1000));
        s.revoke(&t);
        assert!(!s.is_valid(&t, 2_000));
    }

    #[test]
    fn cookie_parsing_finds_the_session() {
        assert_eq!(token_from_cookie_header("a=1; omniroute_session=tok; b=2"), Some("tok"));
        assert_eq!(token_from_cookie_header("a=1"), None);
        assert!(set_cookie("x").contains("HttpOnly; SameSite=Strict"));
    }
}
