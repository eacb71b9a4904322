//! Anonymous `/v1` use (§P): allowed while no API key exists, or beside
//! the keys when `requireApiKey` is off, and then only *local*:
//!
//! * the client is a loopback address — a gateway bound to `0.0.0.0`
//!   does not lend the operator's provider credits to the whole network.
//!   Behind a reverse proxy on the same host every TCP peer is loopback,
//!   so a request that names a forwarding hop (`X-Forwarded-For`,
//!   `Forwarded`, `X-Real-IP`) is local only when the proxy is trusted
//!   (`OMNIROUTE_TRUST_PROXY`) and the client it forwarded for is loopback;
//! * a POST declares a JSON body — a web page can send `text/plain`
//!   cross-site without a CORS preflight, `application/json` it cannot;
//! * `Host` names the gateway by a local name (`localhost`, a loopback
//!   address, or the configured listen host) — a DNS-rebinding page whose
//!   own name now resolves to 127.0.0.1 still sends its own name.

use axum::http::{HeaderMap, Method, header};
use std::net::IpAddr;

use super::{errors::ProxyError, refusals::Refused};
use crate::auth::identity::{client_of, is_forwarded};

/// Why an anonymous request is not served.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    NotLoopback,
    NotJson,
    ForeignHost,
}

/// Where an anonymous request comes from and where it is going.
pub struct Origin<'a> {
    /// The TCP peer.
    pub peer: Option<IpAddr>,
    /// The gateway's listen host.
    pub listen_host: &'a str,
    /// Forwarding headers name the client (`OMNIROUTE_TRUST_PROXY`).
    pub trust_proxy: bool,
}

/// Whether an anonymous request may be served.
pub fn check(origin: &Origin<'_>, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    let client = client_of(origin.peer, headers, origin.trust_proxy);
    let vouched = origin.trust_proxy || !is_forwarded(headers);
    if !(vouched && client.is_some_and(|ip| ip.to_canonical().is_loopback())) {
        return Err(Refusal::NotLoopback);
    }
    if *method == Method::POST && !crate::auth::cross_site::is_json(headers) {
        return Err(Refusal::NotJson);
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).map(host_name);
    if !host.is_some_and(|h| names_this_machine(h, origin.listen_host)) {
        return Err(Refusal::ForeignHost);
    }
    Ok(())
}

/// `Host` without its port (`[::1]:20128` → `::1`).
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.contains(':') => name,
        _ => host,
    }
}

fn names_this_machine(host: &str, listen_host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().is_loopback(),
        // A listen host given by name (e.g. the machine's own name).
        Err(_) => listen_host.parse::<IpAddr>().is_err() && host.eq_ignore_ascii_case(listen_host),
    }
}

impl From<Refusal> for ProxyError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::NotLoopback => Refused::AnonymousNotLocal.because(
                "Missing API key: requests without one are served only from this machine; \
                 create a key in the dashboard (API keys) and send it as Authorization: Bearer <key>",
            ),
            Refusal::NotJson => Refused::AnonymousNotJson
                .because("Requests without an API key must send Content-Type: application/json"),
            Refusal::ForeignHost => Refused::AnonymousForeignHost
                .because("Requests without an API key must address the gateway as localhost, 127.0.0.1 or [::1]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPBACK: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap())).collect()
    }

    fn origin(peer: Option<IpAddr>) -> Origin<'static> {
        Origin { peer, listen_host: "127.0.0.1", trust_proxy: false }
    }

    fn post(peer: Option<IpAddr>, pairs: &[(&str, &str)]) -> Result<(), Refusal> {
        check(&origin(peer), &Method::POST, &headers(pairs))
    }

    const JSON: (&str, &str) = ("content-type", "application/json");

    #[test]
    fn only_loopback_peers_are_served() {
        let local = [JSON, ("host", "127.0.0.1:20128")];
        assert_eq!(post(LOOPBACK, &local), Ok(()));
        assert_eq!(post(Some("::1".parse().unwrap()), &local), Ok(()));
        assert_eq!(post(Some("::ffff:127.0.0.1".parse().unwrap()), &local), Ok(()));
        for remote in ["192.168.1.20", "10.0.0.1", "2001:db8::1"] {
            assert_eq!(post(Some(remote.parse().unwrap()), &local), Err(Refusal::NotLoopback), "{remote}");
        }
        assert_eq!(post(None, &local), Err(Refusal::NotLoopback), "an unknown peer is not local");
    }

    #[test]
    fn a_post_must_declare_json() {
        let host = ("host", "localhost:20128");
        assert_eq!(post(LOOPBACK, &[host, ("content-type", "text/plain")]), Err(Refusal::NotJson));
        assert_eq!(post(LOOPBACK, &[host]), Err(Refusal::NotJson));
        assert_eq!(post(LOOPBACK, &[host, ("content-type", "application/json; charset=utf-8")]), Ok(()));
        // Reading the model list has no body.
        assert_eq!(check(&origin(LOOPBACK), &Method::GET, &headers(&[host])), Ok(()));
    }

    #[test]
    fn the_host_must_name_this_machine() {
        for host in ["localhost", "LOCALHOST:1", "127.0.0.1", "127.0.0.2:9", "[::1]:20128", "[::1]"] {
            assert_eq!(post(LOOPBACK, &[JSON, ("host", host)]), Ok(()), "{host}");
        }
        for host in ["evil.example", "evil.example:20128", "localhost.evil.example", "192.168.1.20:20128"] {
            assert_eq!(post(LOOPBACK, &[JSON, ("host", host)]), Err(Refusal::ForeignHost), "{host}");
        }
        assert_eq!(post(LOOPBACK, &[JSON]), Err(Refusal::ForeignHost), "no Host at all");
        let devbox = Origin { listen_host: "devbox", ..origin(LOOPBACK) };
        let named = check(&devbox, &Method::POST, &headers(&[JSON, ("host", "devbox:20128")]));
        assert_eq!(named, Ok(()), "the configured listen name");
    }

    /// nginx on the same host: every peer is loopback, `Host` names
    /// 127.0.0.1; only the forwarding headers tell who is asking.
    #[test]
    fn behind_a_same_host_proxy_only_a_forwarded_loopback_client_is_local() {
        let from = |xff| [JSON, ("host", "127.0.0.1:20128"), ("x-forwarded-for", xff)];
        let trusted = Origin { trust_proxy: true, ..origin(LOOPBACK) };
        let ask = |o: &Origin<'_>, xff| check(o, &Method::POST, &headers(&from(xff)));
        assert_eq!(ask(&trusted, "203.0.113.7"), Err(Refusal::NotLoopback), "an Internet client");
        assert_eq!(ask(&trusted, "203.0.113.7, 127.0.0.1"), Ok(()), "the proxy says it forwarded for 127.0.0.1");
        assert_eq!(ask(&trusted, "127.0.0.1, 203.0.113.7"), Err(Refusal::NotLoopback), "a client's own say");
        assert_eq!(
            ask(&origin(LOOPBACK), "127.0.0.1"),
            Err(Refusal::NotLoopback),
            "an untrusted hop vouches for nobody"
        );
        let real_ip = [JSON, ("host", "127.0.0.1:20128"), ("x-real-ip", "203.0.113.7")];
        assert_eq!(check(&origin(LOOPBACK), &Method::POST, &headers(&real_ip)), Err(Refusal::NotLoopback));
    }
}
