//! Who is calling: the key a request presents, its dashboard session, and
//! the peer's address. Whether that makes the caller an admin is decided
//! with the routes it guards (`api::admin`, `proxy::client_key`).

use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{Extensions, HeaderMap, header, request::Parts},
};
use std::net::{IpAddr, SocketAddr};

use super::sessions;

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
