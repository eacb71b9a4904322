//! A dashboard session that ended (signed out elsewhere, a password reset,
//! expiry) takes the user to the login page and, after sign-in, back to
//! where they were. Pages and plain form posts are redirected by the
//! server; a server function called by the hydrated app answers 401 with
//! [`SIGNED_OUT`], which [`follow_if_signed_out`] turns into the same trip.

/// The message of a server function refused for want of a session.
pub const SIGNED_OUT: &str = "Your session has ended. Please sign in again";

/// Where sign-in returns to when `next` is missing or not a path here:
/// the root, which opens Get started until set-up is done, else Health.
pub const HOME: &str = "/";

/// `next` when it is a path on this site (`/x`, never `//host` or
/// `/\host`, which browsers read as another site), else [`HOME`].
pub fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') && !n.starts_with("/login") => n,
        _ => HOME,
    }
}

/// The login page, returning to `next` after sign-in.
pub fn login_url(next: &str) -> String {
    format!("/login?next={}", crate::format::query_escape(safe_next(Some(next))))
}

/// In the browser: leaves for the login page when `error` says the
/// session ended (elsewhere it does nothing).
pub fn follow_if_signed_out(error: &str) {
    #[cfg(target_arch = "wasm32")]
    if error.contains(SIGNED_OUT) {
        let location = leptos::prelude::window().location();
        let here = format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
        let _ = location.set_href(&login_url(&here));
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = error;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(safe_next(Some("/combos?x=1")), "/combos?x=1");
        for foreign in ["//evil.example/x", "/\\evil.example", "https://evil.example", "combos", "/login?next=/x"] {
            assert_eq!(safe_next(Some(foreign)), HOME, "{foreign}");
        }
        assert_eq!(safe_next(None), HOME);
        assert_eq!(login_url("/keys?a=b"), "/login?next=%2Fkeys%3Fa%3Db");
    }
}
