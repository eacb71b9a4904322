//! Who is calling: the key a request presents, its dashboard session, and
//! the peer's address. Whether that makes the caller an admin is decided
//! with the routes it guards (`api::admin`, `proxy::client_key`).

use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{Extensions, HeaderMap, HeaderName, header, request::Parts},
};
use std::net::{IpAddr, SocketAddr};

use super::sessions;

const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const X_GOOG_API_KEY: HeaderName = HeaderName::from_static("x-goog-api-key");

/// The bearer token, `x-api-key` or (Gemini clients) `x-goog-api-key` of
/// a request.
pub fn presented_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .or_else(|| headers.get(X_API_KEY).and_then(|v| v.to_str().ok()))
        .or_else(|| headers.get(X_GOOG_API_KEY).and_then(|v| v.to_str().ok()))
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

/// The client a request comes from: the TCP `peer` — or, behind a trusted
/// proxy (`OMNIROUTE_TRUST_PROXY`), the address the proxy forwarded for:
/// the right-most `X-Forwarded-For` entry (the one the proxy itself
/// added; those left of it are the client's own say), else the last
/// `Forwarded: for=`. A forwarding header that names no address leaves
/// the client unknown.
pub fn client_of(peer: Option<IpAddr>, headers: &HeaderMap, trust_proxy: bool) -> Option<IpAddr> {
    if !trust_proxy || !is_forwarded(headers) {
        return peer;
    }
    let last = |name| headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).next_back();
    if let Some(xff) = last("x-forwarded-for") {
        return xff.rsplit(',').next().and_then(parse_node);
    }
    let forwarded = last("forwarded")?.rsplit(',').next()?;
    let node = forwarded.split(';').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.trim().eq_ignore_ascii_case("for").then_some(v)
    });
    node.and_then(parse_node)
}

/// Whether a request names a forwarding hop: a proxy stands between the
/// TCP peer and the client.
pub fn is_forwarded(headers: &HeaderMap) -> bool {
    ["x-forwarded-for", "forwarded", "x-real-ip"].iter().any(|h| headers.contains_key(*h))
}

/// An address as forwarding headers write it: bare, quoted, bracketed,
/// with or without a port.
fn parse_node(node: &str) -> Option<IpAddr> {
    let node = node.trim().trim_matches('"');
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    node.parse().ok().or_else(|| node.rsplit_once(':').and_then(|(ip, _)| ip.parse().ok()))
}

/// Extractor of [`peer_ip`].
pub struct PeerIp(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(peer_ip(&parts.extensions)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    const LOOPBACK: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));

    #[test]
    fn behind_a_trusted_proxy_the_client_is_the_right_most_forwarded_address() {
        let ip = |s: &str| s.parse::<IpAddr>().ok();
        let xff = headers(&[("x-forwarded-for", "10.9.9.9, 203.0.113.7")]);
        assert_eq!(client_of(LOOPBACK, &xff, true), ip("203.0.113.7"), "the hop the proxy added, not the client's say");
        assert_eq!(client_of(LOOPBACK, &xff, false), LOOPBACK, "untrusted headers change nothing");
        let two = headers(&[("x-forwarded-for", "127.0.0.1"), ("x-forwarded-for", "198.51.100.2")]);
        assert_eq!(client_of(LOOPBACK, &two, true), ip("198.51.100.2"));
        let fwd = headers(&[("forwarded", "for=192.0.2.60;proto=http, for=\"[2001:db8::1]:4711\"")]);
        assert_eq!(client_of(LOOPBACK, &fwd, true), ip("2001:db8::1"));
        assert_eq!(client_of(LOOPBACK, &headers(&[("x-forwarded-for", "unknown")]), true), None);
        assert_eq!(client_of(LOOPBACK, &headers(&[("x-forwarded-for", "192.0.2.1:5000")]), true), ip("192.0.2.1"));
        assert_eq!(client_of(LOOPBACK, &HeaderMap::new(), true), LOOPBACK, "no proxy in front: the peer");
    }
}
