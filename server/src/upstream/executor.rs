//! Sends requests upstream. Headers are built from scratch for each
//! provider protocol; nothing from the client's request is forwarded.
//!
//! The client is hyper's pooled client over our [`Connector`] — not a
//! higher-level crate: the hot path needs no redirects, cookies or retry
//! layers, and those cost a third of the CPU a proxied request takes.

use app::types::Protocol;
use bytes::Bytes;
use futures_util::{StreamExt, stream::BoxStream};
use http::{
    HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, Version,
    header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, PROXY_AUTHORIZATION, USER_AGENT},
};
use http_body_util::{BodyDataStream, BodyExt, Full, combinators::BoxBody};
use hyper_util::{
    client::{
        legacy::{Client, connect::HttpInfo},
        proxy::matcher::Matcher,
    },
    rt::{TokioExecutor, TokioTimer},
};
use rustls::pki_types::CertificateDer;
use std::{
    net::IpAddr,
    sync::{
        OnceLock,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};
use thread_local::ThreadLocal;

pub use super::transport_error::TransportError;
use super::{
    connector::Connector,
    lanes::{Lanes, Taken},
    transport_error::causes,
};

type HttpClient = Client<Connector, Full<Bytes>>;

/// Where and how to call one connection: its base URL and its own headers
/// (authentication and identity), built once per connection, not per request.
#[derive(Debug)]
pub struct Endpoint {
    pub protocol: Protocol,
    /// No trailing `/`.
    pub base_url: BaseUrl,
    pub headers: HeaderMap,
    /// Where its model list sits under the base URL.
    pub models_path: &'static str,
    /// Its last answer came over HTTP/2: its requests may go out on
    /// another lane when this thread's first is full ([`Lanes`]).
    http2: AtomicBool,
    /// The first path called and its URI: nearly every request of a
    /// connection calls the same one, whose URI is then cloned instead of
    /// written and parsed again.
    first_uri: OnceLock<(Box<str>, Uri)>,
}

impl Endpoint {
    /// An endpoint called with an API key (or nothing).
    pub fn new(protocol: Protocol, base_url: BaseUrl, credential: Option<&str>) -> Self {
        Self::with_headers(protocol, base_url, auth_headers(protocol, credential, false))
    }

    /// An endpoint called with a subscription's OAuth access token.
    pub fn oauth(protocol: Protocol, base_url: BaseUrl, access_token: Option<&str>) -> Self {
        Self::with_headers(protocol, base_url, auth_headers(protocol, access_token, true))
    }

    fn with_headers(protocol: Protocol, base_url: BaseUrl, headers: HeaderMap) -> Self {
        let models_path = models_path(protocol);
        Self { protocol, base_url, headers, models_path, http2: AtomicBool::new(false), first_uri: OnceLock::new() }
    }

    /// The URI of `path` under its base URL.
    fn uri(&self, path: &str) -> Result<Uri, TransportError> {
        match self.first_uri.get() {
            Some((first, uri)) if **first == *path => Ok(uri.clone()),
            Some(_) => self.base_url.join(path),
            None => {
                let uri = self.base_url.join(path)?;
                let _ = self.first_uri.set((path.into(), uri.clone()));
                Ok(uri)
            }
        }
    }
}

/// The beta flag an Anthropic subscription's OAuth token needs.
pub const ANTHROPIC_OAUTH_BETA: &str = "oauth-2025-04-20";
const ANTHROPIC_BETA: &str = "anthropic-beta";

/// The HTTP clients and the timeouts every upstream call obeys.
///
/// Clients — connection pools — per worker thread: a pooled connection is
/// driven by a task on the thread that opened it, so a request that
/// borrowed another thread's connection would wake that thread twice per
/// request. With per-thread pools a request, its upstream connection and
/// its response stay on one thread. A thread opens another client when
/// its clients each carry [`PER_LANE`](super::lanes::PER_LANE) requests
/// (`upstream::lanes`).
pub struct Executor {
    clients: ThreadLocal<Lanes<HttpClient>>,
    connector: Connector,
    /// Time until the response starts (`FETCH_TIMEOUT_MS`).
    fetch_timeout: Duration,
}

const UA: &str = concat!("omniroute-rs/", env!("CARGO_PKG_VERSION"));

impl Executor {
    /// `proxies` decides which upstreams are reached through a proxy
    /// (`Matcher::from_env()` in production); `extra_roots` are trusted
    /// beside the webpki roots.
    pub fn new(
        connect_timeout: Duration,
        fetch_timeout: Duration,
        proxies: Matcher,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Self, rustls::Error> {
        let connector = Connector::new(connect_timeout, proxies, extra_roots)?;
        Ok(Self { clients: ThreadLocal::new(), connector, fetch_timeout })
    }

    /// A place for one request on this thread's clients; `spill`: on
    /// another lane when the first is full.
    fn client(&self, spill: bool) -> Taken<HttpClient> {
        self.clients.get_or(Lanes::default).take(spill, |first| {
            Client::builder(TokioExecutor::new())
                .pool_timer(TokioTimer::new())
                .pool_idle_timeout(Duration::from_secs(90))
                .pool_max_idle_per_host(64)
                .http2_only(!first)
                .build(self.connector.clone())
        })
    }

    /// POSTs `body` (JSON, unless `extra` names another content type) to
    /// `path` (e.g. `/chat/completions`) of the endpoint, with `extra`
    /// headers (client headers meant for this protocol) added to the
    /// connection's own.
    pub async fn post(
        &self,
        endpoint: &Endpoint,
        path: &str,
        body: Bytes,
        stream: bool,
        extra: &HeaderMap,
    ) -> Result<UpstreamResponse, TransportError> {
        let mut req = self.request(Method::POST, endpoint, path, body)?;
        let headers = req.headers_mut();
        for (name, value) in extra {
            // The client's betas join the connection's own (an OAuth token's).
            let joined =
                (name == ANTHROPIC_BETA).then(|| headers.get(name).and_then(|own| join_betas(own, value))).flatten();
            headers.insert(name, joined.unwrap_or_else(|| value.clone()));
        }
        if !headers.contains_key(CONTENT_TYPE) {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        headers.insert(ACCEPT, HeaderValue::from_static(if stream { "text/event-stream" } else { "application/json" }));
        self.send(req, endpoint).await
    }

    /// GETs `path` of the endpoint with its own headers (its model list,
    /// a subscription's usage).
    pub async fn get(&self, endpoint: &Endpoint, path: &str) -> Result<UpstreamResponse, TransportError> {
        let req = self.request(Method::GET, endpoint, path, Bytes::new())?;
        self.send(req, endpoint).await
    }

    /// A request to `path` of the endpoint with its own headers.
    fn request(
        &self,
        method: Method,
        endpoint: &Endpoint,
        path: &str,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, TransportError> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = endpoint.uri(path)?;
        *req.headers_mut() = endpoint.headers.clone();
        if let Some(auth) = self.connector.proxy_authorization(req.uri()) {
            req.headers_mut().insert(PROXY_AUTHORIZATION, auth);
        }
        Ok(req)
    }

    async fn send(&self, req: Request<Full<Bytes>>, endpoint: &Endpoint) -> Result<UpstreamResponse, TransportError> {
        let lane = self.client(endpoint.http2.load(Ordering::Relaxed));
        match tokio::time::timeout(self.fetch_timeout, lane.client().request(req)).await {
            Err(_) => Err(TransportError::Timeout(self.fetch_timeout)),
            Ok(Err(e)) => {
                // Perhaps it no longer speaks HTTP/2: the first lane asks next.
                endpoint.http2.store(false, Ordering::Relaxed);
                Err(TransportError::from_client(&e))
            }
            // The request keeps its place on the lane until its body ends.
            Ok(Ok(resp)) => Ok(UpstreamResponse(
                {
                    let http2 = resp.version() == Version::HTTP_2;
                    if endpoint.http2.load(Ordering::Relaxed) != http2 {
                        endpoint.http2.store(http2, Ordering::Relaxed);
                    }
                    resp
                }
                .map(|body| {
                    body.map_err(|e| causes(&e))
                        .map_frame(move |frame| {
                            let _in_flight = &lane;
                            frame
                        })
                        .boxed()
                }),
            )),
        }
    }
}

/// An upstream response body; its errors are their causes' text.
pub type UpstreamBody = BoxBody<Bytes, String>;

/// An upstream answer: status and headers read, the body still on the wire.
pub struct UpstreamResponse(http::Response<UpstreamBody>);

impl UpstreamResponse {
    /// An answer made in process (the test fake).
    pub fn new(response: http::Response<UpstreamBody>) -> Self {
        Self(response)
    }

    pub fn status(&self) -> StatusCode {
        self.0.status()
    }

    pub fn headers(&self) -> &HeaderMap {
        self.0.headers()
    }

    /// The local address the response's connection left from: the egress
    /// IP the upstream saw, unless a NAT or proxy sits in between (SPEC §R7).
    pub fn egress_ip(&self) -> Option<IpAddr> {
        self.0.extensions().get::<HttpInfo>().map(|info| info.local_addr().ip())
    }

    /// The whole body; an error when the connection breaks before its end.
    /// The whole body, as long as no `idle` passes without a byte of it
    /// (an answer that stops arriving is a stalled one, like a stream).
    pub async fn bytes_while_arriving(self, idle: Duration) -> Result<Bytes, TransportError> {
        let mut body = self.0.into_body();
        // Most answers come in one frame: that one is kept without a copy.
        let mut parts: Vec<Bytes> = Vec::new();
        loop {
            match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => return Err(TransportError::Stalled(idle)),
                Ok(None) if parts.len() == 1 => return Ok(parts.pop().unwrap_or_default()),
                Ok(None) => return Ok(Bytes::from(parts.concat())),
                Ok(Some(Err(e))) => return Err(TransportError::Network(e)),
                Ok(Some(Ok(frame))) => parts.extend(frame.into_data().ok()),
            }
        }
    }

    /// At most `limit` bytes of the body (an error text, a model list):
    /// whatever arrived before the limit or a broken connection.
    pub async fn read_limited(self, limit: usize) -> Bytes {
        let mut body = self.0.into_body();
        let mut buf = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(chunk) = frame.into_data() else { continue };
            let room = limit.saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if buf.len() >= limit {
                break;
            }
        }
        Bytes::from(buf)
    }

    /// A 2xx answer's JSON (at most `limit` bytes read), or why there is
    /// none: the status with the upstream's `error.message`, or the parse.
    pub async fn json_answer(self, limit: usize) -> Result<serde_json::Value, String> {
        let status = self.status();
        let raw = self.read_limited(limit).await;
        let parsed = serde_json::from_slice::<serde_json::Value>(&raw);
        if !status.is_success() {
            let v = parsed.unwrap_or_default();
            return Err(format!("answered {status}: {}", v["error"]["message"].as_str().unwrap_or("no message")));
        }
        parsed.map_err(|e| format!("answered something that is not JSON ({e})"))
    }

    /// The body's chunks as they arrive (an error as its causes' text).
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes, String>> {
        BodyDataStream::new(self.0.into_body()).boxed()
    }
}

/// `http` parses a port out of range (`:99999`) as no port at all; a
/// socket needs a real one.
fn valid_port(authority: &http::uri::Authority) -> bool {
    match authority.as_str().rsplit(authority.host()).next() {
        Some("" | ":") => true,
        _ => authority.port_u16().is_some(),
    }
}

/// A connection's base URL, split once so that each request appends its
/// path without parsing the host again.
#[derive(Clone, Debug, PartialEq)]
pub struct BaseUrl {
    /// `scheme://authority/path`, no trailing `/`.
    prefix: String,
    query: Option<String>,
}

impl BaseUrl {
    /// An absolute `http`/`https` URL; trailing `/`s of its path dropped.
    pub fn parse(raw: &str) -> Option<Self> {
        let uri: Uri = raw.trim().parse().ok()?;
        let scheme = uri.scheme_str().filter(|s| matches!(*s, "http" | "https"))?;
        let authority = uri.authority().filter(|a| !a.host().is_empty() && valid_port(a))?;
        let prefix = format!("{scheme}://{authority}{}", uri.path().trim_end_matches('/'));
        Some(Self { prefix, query: uri.query().map(str::to_owned) })
    }

    /// `scheme://authority/path` (without its query).
    pub fn as_str(&self) -> &str {
        &self.prefix
    }

    /// The base + `path`; a query in `path` (`…:streamGenerateContent?alt=sse`)
    /// replaces the base's.
    fn join(&self, path: &str) -> Result<Uri, TransportError> {
        let (path, query) = path.split_once('?').map_or((path, None), |(p, q)| (p, Some(q)));
        let url = match query.or(self.query.as_deref()) {
            Some(q) => format!("{}{path}?{q}", self.prefix),
            None => format!("{}{path}", self.prefix),
        };
        Uri::try_from(url).map_err(|e| TransportError::Network(format!("invalid upstream URL: {e}")))
    }
}

fn models_path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "/v1/models",
        Protocol::OpenaiChat | Protocol::Responses | Protocol::Gemini => "/models",
    }
}

/// Authentication and identity headers for a protocol and credential.
/// `own` and the client's `theirs`, each flag once.
fn join_betas(own: &HeaderValue, theirs: &HeaderValue) -> Option<HeaderValue> {
    let (own, theirs) = (own.to_str().ok()?, theirs.to_str().ok()?);
    let mut flags: Vec<&str> = own.split(',').map(str::trim).filter(|f| !f.is_empty()).collect();
    for flag in theirs.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        if !flags.contains(&flag) {
            flags.push(flag);
        }
    }
    HeaderValue::from_str(&flags.join(",")).ok()
}

/// A connection's own headers: its credential as its protocol carries it
/// (an OAuth token always as a bearer token; an Anthropic one with its beta flag).
fn auth_headers(protocol: Protocol, secret: Option<&str>, oauth: bool) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(USER_AGENT, HeaderValue::from_static(UA));
    let Some(secret) = secret else {
        return h;
    };
    let sensitive = |s: &str| {
        HeaderValue::from_str(s).ok().map(|mut v| {
            v.set_sensitive(true);
            v
        })
    };
    if protocol == Protocol::Anthropic {
        h.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    }
    let (name, value) = match protocol {
        _ if oauth => {
            if protocol == Protocol::Anthropic {
                h.insert(ANTHROPIC_BETA, HeaderValue::from_static(ANTHROPIC_OAUTH_BETA));
            }
            (AUTHORIZATION.as_str(), sensitive(&format!("Bearer {secret}")))
        }
        Protocol::Anthropic => ("x-api-key", sensitive(secret)),
        Protocol::Gemini => ("x-goog-api-key", sensitive(secret)),
        Protocol::OpenaiChat | Protocol::Responses => (AUTHORIZATION.as_str(), sensitive(&format!("Bearer {secret}"))),
    };
    if let Some(v) = value {
        h.insert(name, v);
    }
    h
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "the tests' one-connection servers run beside the client under test")]
mod tests {
    use super::*;
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::TcpListener,
        sync::oneshot,
    };

    /// A server for one connection: hands over the request head it read,
    /// answers `reply` and ends its side, then drains the socket (so
    /// unread request bytes never turn the close into a reset).
    async fn one_shot(reply: &'static [u8]) -> (String, oneshot::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut byte = [0u8];
                if sock.read(&mut byte).await.unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let _ = tx.send(String::from_utf8_lossy(&head).into_owned());
            sock.write_all(reply).await.unwrap();
            sock.shutdown().await.unwrap();
            let mut rest = [0u8; 1024];
            while sock.read(&mut rest).await.is_ok_and(|n| n > 0) {}
        });
        (format!("127.0.0.1:{}", addr.port()), rx)
    }

    fn connection(base_url: &str) -> Endpoint {
        Endpoint::new(Protocol::OpenaiChat, BaseUrl::parse(base_url).unwrap(), Some("sk-secret"))
    }

    fn executor(fetch_timeout: Duration, proxies: Matcher) -> Executor {
        Executor::new(Duration::from_secs(5), fetch_timeout, proxies, Vec::new()).unwrap()
    }

    async fn chat(executor: &Executor, conn: &Endpoint) -> Result<UpstreamResponse, TransportError> {
        executor.post(conn, "/chat/completions", Bytes::from_static(b"{}"), false, &HeaderMap::new()).await
    }

    #[tokio::test]
    async fn plain_http_goes_to_the_proxy_in_absolute_form_with_its_credentials() {
        let (proxy, head) = one_shot(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
        let proxies = Matcher::builder().http(format!("http://user:pw@{proxy}")).build();
        let exec = executor(Duration::from_secs(5), proxies);
        // The upstream's name does not resolve: only the proxy can reach it.
        let resp = chat(&exec, &connection("http://upstream.invalid/v1")).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.bytes_while_arriving(Duration::from_secs(5)).await.unwrap(), "ok");
        let head = head.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("post http://upstream.invalid/v1/chat/completions http/1.1\r\n"), "{head}");
        assert!(head.contains("proxy-authorization: basic dxnlcjpwdw=="), "{head}");
    }

    #[tokio::test]
    async fn https_is_tunnelled_so_the_proxy_never_sees_the_request() {
        let (proxy, head) = one_shot(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n").await;
        let proxies = Matcher::builder().https(format!("http://user:pw@{proxy}")).build();
        let exec = executor(Duration::from_secs(5), proxies);
        let refused = chat(&exec, &connection("https://upstream.invalid/v1")).await;
        assert!(matches!(refused, Err(TransportError::Connect)), "{:?}", refused.err());
        let head = head.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("connect upstream.invalid:443 http/1.1\r\n"), "{head}");
        assert!(head.contains("proxy-authorization: basic dxnlcjpwdw=="), "{head}");
        assert!(!head.contains("sk-secret") && !head.contains("chat/completions"), "{head}");
    }

    #[tokio::test]
    async fn no_proxy_hosts_are_reached_directly() {
        let (upstream, head) = one_shot(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
        let proxies = Matcher::builder().all("http://127.0.0.1:9").no("127.0.0.1").build();
        let exec = executor(Duration::from_secs(5), proxies);
        let resp = chat(&exec, &connection(&format!("http://{upstream}/v1"))).await.unwrap();
        assert_eq!(resp.status(), 200);
        let head = head.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("post /v1/chat/completions http/1.1\r\n"), "{head}");
        assert!(head.contains("authorization: bearer sk-secret") && !head.contains("proxy-authorization"), "{head}");
    }

    #[tokio::test]
    async fn https_upstreams_get_a_tls_handshake() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let conn = connection(&format!("https://{}/v1", listener.local_addr().unwrap()));
        let first_byte = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            sock.read_u8().await.unwrap()
        });
        let exec = executor(Duration::from_secs(5), Matcher::builder().build());
        let failed = chat(&exec, &conn).await;
        // 0x16: a TLS handshake record (the ClientHello), not plain HTTP.
        assert_eq!(first_byte.await.unwrap(), 0x16);
        assert!(matches!(failed, Err(TransportError::Connect)), "{:?}", failed.err());
    }

    #[tokio::test]
    async fn an_upstream_that_never_answers_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let exec = executor(Duration::from_millis(100), Matcher::builder().build());
        let conn = connection(&format!("http://{}/v1", listener.local_addr().unwrap()));
        let silent = chat(&exec, &conn).await;
        assert!(matches!(silent, Err(TransportError::Timeout(_))), "{:?}", silent.err());
    }

    #[tokio::test]
    async fn a_body_cut_short_is_a_network_error() {
        let (upstream, _) = one_shot(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 10\r\n\r\nabc").await;
        let exec = executor(Duration::from_secs(5), Matcher::builder().build());
        let resp = chat(&exec, &connection(&format!("http://{upstream}/v1"))).await.unwrap();
        let cut = resp.bytes_while_arriving(Duration::from_secs(5)).await;
        assert!(matches!(cut, Err(TransportError::Network(_))), "{:?}", cut.err());
    }

    #[tokio::test]
    async fn a_body_that_stops_arriving_is_stalled_at_the_idle_bound() {
        // The head and part of the body, then silence with the connection open.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut tcp, &mut buf).await;
            let partial = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"choices\":";
            tokio::io::AsyncWriteExt::write_all(&mut tcp, partial).await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        let exec = executor(Duration::from_secs(5), Matcher::builder().build());
        let resp = chat(&exec, &connection(&format!("http://{addr}/v1"))).await.unwrap();
        let started = tokio::time::Instant::now();
        let stalled = resp.bytes_while_arriving(Duration::from_millis(300)).await;
        assert!(matches!(stalled, Err(TransportError::Stalled(_))), "{:?}", stalled.err());
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    fn join(base: &str, path: &str) -> String {
        BaseUrl::parse(base).unwrap().join(path).unwrap().to_string()
    }

    #[test]
    fn an_endpoint_reuses_its_first_paths_uri_and_joins_any_other() {
        let base = BaseUrl::parse("https://gen.example/v1beta?key=k").unwrap();
        let endpoint = Endpoint::new(Protocol::Gemini, base, None);
        let chat = "/models/g:generateContent";
        for _ in 0..2 {
            assert_eq!(endpoint.uri(chat).unwrap(), "https://gen.example/v1beta/models/g:generateContent?key=k");
        }
        let stream = "/models/g:streamGenerateContent?alt=sse";
        assert_eq!(endpoint.uri(stream).unwrap(), "https://gen.example/v1beta/models/g:streamGenerateContent?alt=sse");
        assert_eq!(endpoint.uri(chat).unwrap(), "https://gen.example/v1beta/models/g:generateContent?key=k");
    }

    #[test]
    fn an_oauth_token_goes_as_a_bearer_token_with_the_betas_joined() {
        let base = || BaseUrl::parse("https://api.anthropic.com").unwrap();
        let key = Endpoint::new(Protocol::Anthropic, base(), Some("sk-ant-api"));
        assert_eq!(key.headers["x-api-key"], "sk-ant-api");
        assert!(key.headers.get(AUTHORIZATION).is_none() && key.headers.get(ANTHROPIC_BETA).is_none());
        let oauth = Endpoint::oauth(Protocol::Anthropic, base(), Some("sk-ant-oat"));
        assert_eq!(oauth.headers[AUTHORIZATION], "Bearer sk-ant-oat");
        assert!(oauth.headers.get("x-api-key").is_none(), "never x-api-key");
        assert_eq!(oauth.headers["anthropic-version"], "2023-06-01");
        let client = HeaderValue::from_static("interleaved-thinking-2025-05-14, oauth-2025-04-20");
        let joined = join_betas(&oauth.headers[ANTHROPIC_BETA], &client).unwrap();
        assert_eq!(joined, "oauth-2025-04-20,interleaved-thinking-2025-05-14");
    }

    #[test]
    fn endpoints_join_the_base_path_and_keep_a_query() {
        assert_eq!(
            join("https://g.example/v1beta/", "/models/m:streamGenerateContent?alt=sse"),
            "https://g.example/v1beta/models/m:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            join("https://a.example/openai?api-version=1", "/chat/completions"),
            "https://a.example/openai/chat/completions?api-version=1"
        );
        assert_eq!(join(" http://127.0.0.1:11434 ", "/v1/models"), "http://127.0.0.1:11434/v1/models");
        assert_eq!(join("http://[::1]:8080/v1", "/models"), "http://[::1]:8080/v1/models");
        assert_eq!(join("https://u:p@h.example/v1", "/models"), "https://u:p@h.example/v1/models");
    }

    #[test]
    fn base_urls_must_be_absolute_http() {
        for bad in
            ["", "/v1", "ftp://h.example/x", "localhost:8080", "http://", "not a url", "http://h.example:99999/v1"]
        {
            assert_eq!(BaseUrl::parse(bad), None, "{bad:?}");
        }
    }
}
