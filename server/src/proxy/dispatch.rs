//! The attempt loop — read this to understand a request:
//! candidates (active connections of the target's provider, in priority
//! order, limited by the key's allow-list) → attempt → on a network error,
//! 5xx or 429 record it and try the next connection → on success answer
//! (JSON read whole, streams passed through) → when every connection
//! failed, answer with the last failure. Every attempt becomes one
//! `proxy_logs` row, written behind the request.
//!
//! The resilience gates (breaker, cooldowns, lockouts) plug in before each
//! attempt and the classifier after each failure (SPEC §R1–§R3, §R8).

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use bytes::Bytes;
use futures_util::StreamExt;
use std::{sync::Arc, time::Instant};

use super::{context::SELECTED_CONNECTION, errors::ProxyError, stream::PassThrough, usage};
use crate::{
    auth::api_keys::KeyEntry,
    db::now_ms,
    request_log::AttemptRecord,
    routing::{
        registry::{LiveConnection, Snapshot},
        resolve::Target,
    },
    state::AppState,
    upstream::executor::TransportError,
};

/// Largest upstream error body read (the rest is ignored).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest error text kept in a log row.
const MAX_LOGGED_ERROR: usize = 500;

/// One client request, ready to send upstream.
pub struct Call<'a> {
    pub request_id: &'a str,
    pub endpoint: &'static str,
    pub upstream_path: &'static str,
    pub target: &'a Target,
    pub body: Bytes,
    pub stream: bool,
    pub key: Option<&'a KeyEntry>,
}

/// Why one attempt did not produce the answer.
struct Failure {
    connection_id: String,
    /// `None` for transport errors.
    status: Option<u16>,
    retry_after: Option<u64>,
    message: String,
}

pub async fn run(state: &Arc<AppState>, snapshot: &Snapshot, call: Call<'_>) -> Result<Response, ProxyError> {
    let provider = call.target.provider.id;
    let candidates: Vec<&Arc<LiveConnection>> =
        snapshot.candidates(provider).iter().filter(|c| call.key.is_none_or(|k| k.may_use(&c.id))).collect();
    if candidates.is_empty() {
        return Err(ProxyError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "no_credentials",
            format!("No active credentials for provider: {provider}"),
        ));
    }
    let mut failures = Vec::new();
    for conn in candidates {
        let attempt = Attempt::start(state, &call, conn);
        match state.executor.post(conn, call.upstream_path, call.body.clone(), call.stream).await {
            Err(e) => failures.push(attempt.transport_failure(&e)),
            Ok(resp) if resp.status().is_success() => match attempt.success(resp).await {
                Ok(response) => return Ok(response),
                Err(f) => failures.push(f),
            },
            Ok(resp) if is_failover_status(resp.status()) => failures.push(attempt.status_failure(resp).await),
            Ok(resp) => return Ok(attempt.client_error(resp).await),
        }
    }
    Err(all_failed(provider, failures))
}

/// Statuses after which the next connection is tried.
fn is_failover_status(s: reqwest::StatusCode) -> bool {
    s.is_server_error() || s == reqwest::StatusCode::TOO_MANY_REQUESTS
}

fn all_failed(provider: &str, failures: Vec<Failure>) -> ProxyError {
    let n = failures.len();
    let Some(last) = failures.into_iter().next_back() else {
        return ProxyError::new(StatusCode::BAD_GATEWAY, "server_error", "upstream_error", "no attempt was made");
    };
    let message = format!("All {n} connection(s) of provider {provider} failed; last error: {}", last.message);
    let mut err = match last.status {
        Some(429) => ProxyError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "rate_limited", message),
        Some(s) => ProxyError::new(
            StatusCode::from_u16(s).unwrap_or(StatusCode::BAD_GATEWAY),
            "server_error",
            "upstream_error",
            message,
        ),
        None => ProxyError::new(StatusCode::BAD_GATEWAY, "server_error", "upstream_unavailable", message),
    };
    err.retry_after = last.retry_after;
    err.connection_id = Some(last.connection_id);
    err
}

/// One upstream attempt: its timing and the log row it will write.
struct Attempt<'a> {
    state: &'a Arc<AppState>,
    conn: &'a LiveConnection,
    started: Instant,
    record: AttemptRecord,
}

impl<'a> Attempt<'a> {
    fn start(state: &'a Arc<AppState>, call: &Call<'_>, conn: &'a LiveConnection) -> Self {
        let record = AttemptRecord {
            created_at: now_ms(),
            request_id: call.request_id.to_owned(),
            endpoint: call.endpoint.to_owned(),
            provider: conn.provider.id.to_owned(),
            connection_id: Some(conn.id.clone()),
            model: call.target.model.clone(),
            stream: call.stream,
            ..AttemptRecord::default()
        };
        Self { state, conn, started: Instant::now(), record }
    }

    fn elapsed_ms(&self) -> i64 {
        self.started.elapsed().as_millis() as i64
    }

    /// Writes the log row and a trace line for a failed attempt.
    fn fail(mut self, status: Option<u16>, kind: &'static str, message: String, retry_after: Option<u64>) -> Failure {
        let message = redact(&message, self.conn);
        self.record.status = i32::from(status.unwrap_or(0));
        self.record.latency_ms = self.elapsed_ms();
        self.record.error_kind = Some(kind.to_owned());
        self.record.error_message = Some(truncate(&message, MAX_LOGGED_ERROR));
        tracing::warn!(request_id = %self.record.request_id, provider = %self.record.provider, connection_id = %self.conn.id, model = %self.record.model, status = self.record.status, reason = kind, "upstream attempt failed; trying the next connection");
        self.state.logs.record(self.record);
        Failure { connection_id: self.conn.id.clone(), status, retry_after, message }
    }

    fn transport_failure(self, e: &TransportError) -> Failure {
        self.fail(None, e.kind(), e.to_string(), None)
    }

    async fn status_failure(self, resp: reqwest::Response) -> Failure {
        let status = resp.status().as_u16();
        let retry_after = retry_after_secs(resp.headers());
        let text = error_text(resp).await;
        let kind = if status == 429 { "rate_limited" } else { "server_error" };
        self.fail(Some(status), kind, text, retry_after)
    }

    /// A 4xx other than 429: the client's request is at fault; return the
    /// upstream's answer unchanged (same protocol on both sides).
    async fn client_error(mut self, resp: reqwest::Response) -> Response {
        let status = resp.status();
        let raw = read_limited(resp, MAX_ERROR_BODY).await.unwrap_or_default();
        // Some upstreams echo the credential; it must reach neither the
        // client nor the log.
        let text = redact(&String::from_utf8_lossy(&raw), self.conn);
        self.record.status = i32::from(status.as_u16());
        self.record.latency_ms = self.elapsed_ms();
        self.record.error_kind = Some("client_error".to_owned());
        self.record.error_message = Some(truncate(&text, MAX_LOGGED_ERROR));
        let conn_id = self.conn.id.clone();
        self.finish_log();
        json_response(
            StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY),
            Bytes::from(text),
            &conn_id,
        )
    }

    async fn success(mut self, resp: reqwest::Response) -> Result<Response, Failure> {
        self.record.status = i32::from(resp.status().as_u16());
        if self.record.stream {
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok());
            let conn_id = self.conn.id.clone();
            let body =
                PassThrough::new(resp.bytes_stream().boxed(), self.started, self.record, self.state.logs.clone());
            let mut response = Response::new(Body::from_stream(body));
            let h = response.headers_mut();
            h.insert(header::CONTENT_TYPE, content_type.unwrap_or(HeaderValue::from_static("text/event-stream")));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            insert_connection(h, &conn_id);
            return Ok(response);
        }
        match tokio::time::timeout(self.state.config.fetch_timeout, resp.bytes()).await {
            Ok(Ok(body)) => {
                self.record.latency_ms = self.elapsed_ms();
                if let Some(u) = usage::from_body(&body) {
                    self.record.prompt_tokens = u.prompt_tokens;
                    self.record.completion_tokens = u.completion_tokens;
                    self.record.cached_tokens = u.cached();
                }
                let conn_id = self.conn.id.clone();
                self.finish_log();
                Ok(json_response(StatusCode::OK, body, &conn_id))
            }
            Ok(Err(e)) => {
                let cause = TransportError::from_reqwest(&e, self.state.config.fetch_timeout);
                Err(self.fail(None, "network_error", format!("the upstream response was cut off: {cause}"), None))
            }
            Err(_) => Err(self.fail(None, "timeout", "the upstream response body did not finish in time".into(), None)),
        }
    }

    fn finish_log(self) {
        let r = &self.record;
        tracing::debug!(request_id = %r.request_id, provider = %r.provider, connection_id = %self.conn.id, model = %r.model, status = r.status, latency_ms = r.latency_ms, "request served");
        self.state.logs.record(self.record);
    }
}

fn json_response(status: StatusCode, body: Bytes, connection_id: &str) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    insert_connection(response.headers_mut(), connection_id);
    response
}

fn insert_connection(h: &mut axum::http::HeaderMap, connection_id: &str) {
    if let Ok(v) = HeaderValue::from_str(connection_id) {
        h.insert(SELECTED_CONNECTION, v);
    }
}

/// Reads at most `limit` bytes of a body.
async fn read_limited(mut resp: reqwest::Response, limit: usize) -> Option<Bytes> {
    let mut buf = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = limit.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() >= limit {
            break;
        }
    }
    Some(Bytes::from(buf))
}

/// The human message of an upstream error body (`error.message` when it
/// is JSON, else the text).
async fn error_text(resp: reqwest::Response) -> String {
    let status = resp.status();
    let body = read_limited(resp, MAX_ERROR_BODY).await.unwrap_or_default();
    let json: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
    let message = json
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message").or_else(|| v.get("message")).and_then(|m| m.as_str()).map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_owned());
    if message.is_empty() {
        format!("upstream returned {status}")
    } else {
        format!("upstream returned {status}: {message}")
    }
}

/// `Retry-After` as seconds: an integer, or an HTTP date from now.
fn retry_after_secs(h: &reqwest::header::HeaderMap) -> Option<u64> {
    let v = h.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(secs);
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let secs = (at.timestamp_millis() - now_ms()).max(0) as u64;
    Some(secs.div_ceil(1000))
}

/// Removes the connection's credential from text that may echo it.
fn redact(text: &str, conn: &LiveConnection) -> String {
    match &conn.credential {
        Some(c) if c.0.len() >= 4 => text.replace(&c.0, "[redacted]"),
        _ => text.to_owned(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("17"));
        assert_eq!(retry_after_secs(&h), Some(17));
        let at = chrono::Utc::now() + chrono::Duration::seconds(120);
        h.insert(RETRY_AFTER, HeaderValue::from_str(&at.to_rfc2822()).unwrap());
        let secs = retry_after_secs(&h).unwrap();
        assert!((118..=120).contains(&secs), "{secs}");
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after_secs(&h), None);
    }

    #[test]
    fn failover_statuses_are_5xx_and_429() {
        assert!(is_failover_status(reqwest::StatusCode::SERVICE_UNAVAILABLE));
        assert!(is_failover_status(reqwest::StatusCode::TOO_MANY_REQUESTS));
        assert!(!is_failover_status(reqwest::StatusCode::BAD_REQUEST));
        assert!(!is_failover_status(reqwest::StatusCode::UNAUTHORIZED));
    }

    #[test]
    fn all_failed_reports_the_last_failure() {
        let f = |status, id: &str| Failure {
            connection_id: id.into(),
            status,
            retry_after: Some(7),
            message: "boom".into(),
        };
        let e = all_failed("openai", vec![f(None, "a"), f(Some(429), "b")]);
        assert_eq!((e.status, e.code, e.retry_after), (StatusCode::TOO_MANY_REQUESTS, "rate_limited", Some(7)));
        assert!(e.message.starts_with("All 2 connection(s) of provider openai failed"));
        assert_eq!(all_failed("openai", vec![f(None, "a")]).status, StatusCode::BAD_GATEWAY);
    }

    #[test]
    fn truncate_counts_chars() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hi", 5), "hi");
    }
}
