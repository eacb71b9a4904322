//! Cross-site request protection for the dashboard and the management API.
//!
//! `SameSite=Strict` is not enough: a page on another *port* of the same
//! host is "same-site", so its form posts carry the session cookie. What
//! the browser says about the request is what counts:
//!
//! * `Sec-Fetch-Site` (every current browser): only `same-origin` and
//!   `none` (typed URL, bookmark) pass a state-changing request;
//! * else `Origin` (older browsers): it must name this gateway itself;
//! * neither header: not a browser (curl, scripts, agents), nothing to
//!   forge.
//!
//! Requests that authenticate with a key and no session cookie are not
//! browser-forgeable (a page cannot attach `Authorization` cross-site
//! without a CORS preflight, which the gateway never grants) and pass.
//! A cookie-authenticated `/api/*` change must also be JSON: a forged HTML
//! form can only send `text/plain`, urlencoded or multipart bodies.
//!
//! The same module tells whether a request arrived over https (directly
//! never — the binary speaks plain HTTP — or through a trusted proxy's
//! `X-Forwarded-Proto`), which decides the cookie's `Secure` flag. The
//! middleware that applies both sits with the routes (`web::cross_site`).

use axum::http::{HeaderMap, Method, header};

use super::identity::{presented_key, session_token};

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 403: the browser says another site sent it.
    CrossSite,
    /// 415: a cookie-authenticated `/api/*` change without a JSON body type.
    NotJson,
}

/// What the check needs to know about a request.
pub struct Facts<'a> {
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    /// `/api/*` (JSON-only) rather than a dashboard route.
    pub is_api: bool,
    /// `X-Forwarded-Host` names the public host.
    pub trust_proxy: bool,
}

/// The verdict on one request.
pub fn check(facts: &Facts<'_>) -> Result<(), Refusal> {
    if matches!(*facts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let has_cookie = session_token(facts.headers).is_some();
    if !has_cookie && presented_key(facts.headers).is_some() {
        return Ok(());
    }
    if !sent_by_this_site(facts.headers, facts.trust_proxy) {
        return Err(Refusal::CrossSite);
    }
    if facts.is_api && has_cookie && !is_json(facts.headers) {
        return Err(Refusal::NotJson);
    }
    Ok(())
}

/// Whether the browser headers (if any) place the request on this origin.
fn sent_by_this_site(headers: &HeaderMap, trust_proxy: bool) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    match (authority, public_host(headers, trust_proxy)) {
        (Some(authority), Some(host)) => authority.eq_ignore_ascii_case(host),
        // `Origin: null` (sandboxed frames, file://) or no Host to compare.
        _ => false,
    }
}

/// The host (with port) the client addressed: `X-Forwarded-Host` behind a
/// trusted proxy, else `Host`.
pub fn public_host(headers: &HeaderMap, trust_proxy: bool) -> Option<&str> {
    let forwarded = trust_proxy.then(|| first_value(headers, "x-forwarded-host")).flatten();
    forwarded.or_else(|| headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(str::trim))
}

/// Whether the client reached the gateway over https.
pub fn is_https(headers: &HeaderMap, trust_proxy: bool) -> bool {
    trust_proxy && first_value(headers, "x-forwarded-proto").is_some_and(|p| p.eq_ignore_ascii_case("https"))
}

/// The first entry of a possibly comma-separated forwarding header.
fn first_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()?.split(',').next().map(str::trim).filter(|v| !v.is_empty())
}

/// Whether the body is declared as JSON.
pub fn is_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|ct| ct.starts_with("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap())).collect()
    }

    fn verdict(method: Method, pairs: &[(&str, &str)], is_api: bool) -> Result<(), Refusal> {
        check(&Facts { method: &method, headers: &headers(pairs), is_api, trust_proxy: false })
    }

    const COOKIE: (&str, &str) = ("cookie", "omniroute_session=tok");
    const HOST: (&str, &str) = ("host", "127.0.0.1:20128");

    #[test]
    fn fetch_metadata_decides_for_modern_browsers() {
        for site in ["same-origin", "none"] {
            assert_eq!(verdict(Method::POST, &[COOKIE, HOST, ("sec-fetch-site", site)], false), Ok(()));
        }
        // Another port of the same host is "same-site": still refused.
        for site in ["same-site", "cross-site"] {
            let got = verdict(Method::POST, &[COOKIE, HOST, ("sec-fetch-site", site)], false);
            assert_eq!(got, Err(Refusal::CrossSite), "{site}");
        }
    }

    #[test]
    fn origin_must_name_this_gateway_when_fetch_metadata_is_absent() {
        let ok = [COOKIE, HOST, ("origin", "http://127.0.0.1:20128")];
        assert_eq!(verdict(Method::POST, &ok, false), Ok(()));
        for origin in ["http://evil.example", "http://127.0.0.1:8080", "null"] {
            assert_eq!(verdict(Method::POST, &[COOKIE, HOST, ("origin", origin)], false), Err(Refusal::CrossSite));
        }
        // Non-browser clients send neither header.
        assert_eq!(verdict(Method::POST, &[COOKIE, HOST], false), Ok(()));
    }

    #[test]
    fn reads_and_key_authenticated_requests_pass() {
        let evil = ("sec-fetch-site", "cross-site");
        assert_eq!(verdict(Method::GET, &[COOKIE, HOST, evil], false), Ok(()));
        assert_eq!(verdict(Method::POST, &[("authorization", "Bearer k"), HOST, evil], true), Ok(()));
        // A key does not excuse a cookie riding along.
        assert!(verdict(Method::POST, &[("authorization", "Bearer k"), COOKIE, HOST, evil], true).is_err());
    }

    #[test]
    fn cookie_authenticated_api_changes_must_be_json() {
        let same = ("sec-fetch-site", "same-origin");
        assert_eq!(verdict(Method::POST, &[COOKIE, HOST, same], true), Err(Refusal::NotJson));
        let form = ("content-type", "application/x-www-form-urlencoded");
        assert_eq!(verdict(Method::DELETE, &[COOKIE, HOST, form], true), Err(Refusal::NotJson));
        let json = ("content-type", "application/json");
        assert_eq!(verdict(Method::PATCH, &[COOKIE, HOST, json], true), Ok(()));
        // The dashboard's own form posts are not JSON and need not be.
        assert_eq!(verdict(Method::POST, &[COOKIE, HOST, same, form], false), Ok(()));
    }

    #[test]
    fn forwarded_headers_count_only_behind_a_trusted_proxy() {
        let h = headers(&[HOST, ("x-forwarded-host", "gw.example.com"), ("x-forwarded-proto", "https")]);
        assert_eq!(public_host(&h, false), Some("127.0.0.1:20128"));
        assert_eq!(public_host(&h, true), Some("gw.example.com"));
        assert!(!is_https(&h, false) && is_https(&h, true));
    }
}
