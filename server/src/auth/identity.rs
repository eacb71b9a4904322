//! Who is calling: the key a request presents, its dashboard session, and
//! whether that makes it an admin (a session, the management key, or a
//! key with the `management` scope). The guards that use this sit next to
//! the routes they guard (`api::require_admin`, `proxy::client_key`).

use app::types::Scope;
use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{Extensions, HeaderMap, header, request::Parts},
};
use std::net::{IpAddr, SocketAddr};

use super::{secret_eq, sessions};
use crate::{db::now_ms, state::AppState};

/// The bearer token, `x-api-key` or (Gemini clients) `x-goog-api-key` of
/// a request.
pub fn presented_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .or_else(|| headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim)
}

/// The session token of a request's cookie.
pub fn session_token(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::COOKIE).and_then(|v| v.to_str().ok()).and_then(sessions::token_from_cookie_header)
}

/// Whether the request may use the management API and the dashboard: a
/// management key (checked in memory) or a live dashboard session (one
/// database lookup; the proxy path never asks).
pub async fn is_admin(state: &AppState, headers: &HeaderMap) -> bool {
    let by_key = presented_key(headers).is_some_and(|key| {
        state.config.management_key.as_deref().is_some_and(|m| secret_eq(m, key))
            || state.keys.lookup(key).is_some_and(|k| k.has(Scope::Management))
    });
    match session_token(headers) {
        _ if by_key => true,
        Some(token) => sessions::is_valid(&state.db, token, now_ms()).await,
        None => false,
    }
}

/// The address of the peer that sent a request (the TCP peer, never a
/// forwarding header), when the server recorded it.
pub fn peer_ip(extensions: &Extensions) -> Option<IpAddr> {
    extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

/// Extractor of [`peer_ip`].
pub struct PeerIp(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(peer_ip(&parts.extensions)))
    }
}
