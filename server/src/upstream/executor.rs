//! Sends requests upstream. Headers are built from scratch for each
//! provider protocol; nothing from the client's request is forwarded.

use app::types::Protocol;
use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use std::time::Duration;
use thread_local::ThreadLocal;

use crate::routing::registry::LiveConnection;

/// Why an upstream request got no HTTP response.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("could not connect to the upstream")]
    Connect,
    #[error("the upstream did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the upstream connection failed: {0}")]
    Network(String),
}

impl TransportError {
    /// The `error_kind` recorded in `proxy_logs`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Connect => "connect_error",
            Self::Timeout(_) => "timeout",
            Self::Network(_) => "network_error",
        }
    }

    pub fn from_reqwest(e: &reqwest::Error, timeout: Duration) -> Self {
        if e.is_connect() {
            Self::Connect
        } else if e.is_timeout() {
            Self::Timeout(timeout)
        } else {
            // Without the URL: it may name internal hosts.
            Self::Network(e.without_url_ref().to_string())
        }
    }
}

trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let mut s = self.to_string();
        if let Some(url) = self.url() {
            s = s.replace(url.as_str(), "<upstream>");
        }
        s
    }
}

/// The HTTP clients and the timeouts every upstream call obeys.
///
/// One client — one connection pool — per worker thread: a pooled
/// connection is driven by a task on the thread that opened it, so a
/// request that borrowed another thread's connection would wake that
/// thread twice per request. With per-thread pools a request, its
/// upstream connection and its response stay on one thread.
pub struct Executor {
    clients: ThreadLocal<reqwest::Client>,
    connect_timeout: Duration,
    /// Time until the response starts (`FETCH_TIMEOUT_MS`).
    fetch_timeout: Duration,
}

const UA: &str = concat!("omniroute-rs/", env!("CARGO_PKG_VERSION"));

impl Executor {
    /// Builds the calling thread's client at once, so a configuration the
    /// HTTP stack refuses fails at start rather than on a request.
    pub fn new(connect_timeout: Duration, fetch_timeout: Duration) -> reqwest::Result<Self> {
        let clients = ThreadLocal::new();
        clients.get_or_try(|| build_client(connect_timeout))?;
        Ok(Self { clients, connect_timeout, fetch_timeout })
    }

    /// This thread's client. The settings were accepted once in `new`,
    /// so building another can only fail if the system changed meanwhile.
    fn client(&self) -> Result<&reqwest::Client, TransportError> {
        self.clients
            .get_or_try(|| build_client(self.connect_timeout))
            .map_err(|e| TransportError::Network(format!("building the HTTP client failed: {e}")))
    }

    /// POSTs `body` to `path` (e.g. `/chat/completions`) of the connection,
    /// with `extra` headers (client headers meant for this protocol) added
    /// to the connection's own.
    pub async fn post(
        &self,
        conn: &LiveConnection,
        path: &str,
        body: Bytes,
        stream: bool,
        extra: &HeaderMap,
    ) -> Result<reqwest::Response, TransportError> {
        let mut headers = conn.auth_headers.clone();
        for (name, value) in extra {
            headers.insert(name, value.clone());
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(if stream { "text/event-stream" } else { "application/json" }));
        let req = self.client()?.post(endpoint(&conn.base_url, path)).headers(headers).body(body);
        self.send(req).await
    }

    /// Lists the models of a connection: a live check of its credential.
    pub async fn list_models(&self, conn: &LiveConnection) -> Result<reqwest::Response, TransportError> {
        let req = self
            .client()?
            .get(endpoint(&conn.base_url, models_path(conn.provider.protocol)))
            .headers(conn.auth_headers.clone());
        self.send(req).await
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<reqwest::Response, TransportError> {
        match tokio::time::timeout(self.fetch_timeout, req.send()).await {
            Err(_) => Err(TransportError::Timeout(self.fetch_timeout)),
            Ok(Err(e)) => Err(TransportError::from_reqwest(&e, self.fetch_timeout)),
            Ok(Ok(resp)) => Ok(resp),
        }
    }
}

fn build_client(connect_timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(256)
        .tcp_nodelay(true)
        .build()
}

/// The local address the response's connection left from: the egress
/// IP the upstream saw, unless a NAT or proxy sits in between (SPEC §R7).
pub fn egress_ip(resp: &reqwest::Response) -> Option<std::net::IpAddr> {
    resp.extensions().get::<hyper_util::client::legacy::connect::HttpInfo>().map(|info| info.local_addr().ip())
}

/// `base` + `path`, without re-parsing the host for every request.
/// `path` may carry a query (`…:streamGenerateContent?alt=sse`).
fn endpoint(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = base.clone();
    let (path, query) = path.split_once('?').map_or((path, None), |(p, q)| (p, Some(q)));
    let joined = format!("{}{path}", base.path().trim_end_matches('/'));
    url.set_path(&joined);
    if query.is_some() {
        url.set_query(query);
    }
    url
}

fn models_path(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "/v1/models",
        Protocol::OpenaiChat | Protocol::Responses | Protocol::Gemini => "/models",
    }
}

/// Authentication and identity headers for a protocol and credential.
pub fn auth_headers(protocol: Protocol, secret: Option<&str>) -> HeaderMap {
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
    let (name, value) = match protocol {
        Protocol::Anthropic => {
            h.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
            ("x-api-key", sensitive(secret))
        }
        Protocol::Gemini => ("x-goog-api-key", sensitive(secret)),
        Protocol::OpenaiChat | Protocol::Responses => (AUTHORIZATION.as_str(), sensitive(&format!("Bearer {secret}"))),
    };
    if let Some(v) = value {
        h.insert(name, v);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_join_the_base_path_and_keep_a_query() {
        let base = reqwest::Url::parse("https://g.example/v1beta/").unwrap();
        let url = endpoint(&base, "/models/m:streamGenerateContent?alt=sse");
        assert_eq!(url.as_str(), "https://g.example/v1beta/models/m:streamGenerateContent?alt=sse");
        let with_query = reqwest::Url::parse("https://a.example/openai?api-version=1").unwrap();
        assert_eq!(
            endpoint(&with_query, "/chat/completions").as_str(),
            "https://a.example/openai/chat/completions?api-version=1"
        );
    }
}
