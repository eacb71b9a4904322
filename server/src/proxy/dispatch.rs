//! The attempt loop — read this to understand a request:
//! the provider breaker gate (OPEN → 503 `provider_circuit_open`) →
//! candidates (active connections of the target's provider, in priority
//! order, limited by the key's allow-list) minus those excluded by a
//! cooldown, a terminal state or a model lockout → attempt → on failure the
//! engine restates, classifies and applies the verdict (cooldown, lockout,
//! breaker), and the next connection is tried unless the verdict says the
//! request itself is at fault → on success the engine clears the
//! connection's errors, decays lockouts and counts a breaker success.
//! When nothing could be attempted the answer says why and when to retry.
//! Every attempt becomes one `proxy_logs` row, written behind the request.

use app::types::Protocol;
use axum::{
    body::Body,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use bytes::Bytes;
use std::{sync::Arc, time::Instant};

use super::{
    context::SELECTED_CONNECTION,
    cooldown_wait::{AbandonedWait, CooldownWaits},
    errors::ProxyError,
    stream::PassThrough,
    usage,
};
use app::types::settings::ResilienceSettings;

use crate::{
    auth::api_keys::KeyEntry,
    db::now_ms,
    protocols::translate::{self, StreamTranslator},
    request_log::AttemptRecord,
    resilience::{
        breaker::BreakerConfig,
        classify::Verdict,
        connection_health::TerminalStatus,
        engine::{self, AttemptFailure, Exclusion, Probe},
    },
    routing::{
        registry::{LiveConnection, Snapshot},
        resolve::Target,
    },
    state::AppState,
    upstream::{
        catalog::Provider,
        executor::{TransportError, UpstreamResponse},
    },
};

static NO_HEADERS: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(HeaderMap::new);

/// Largest upstream error body read (the rest is ignored).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest error text kept in a log row.
const MAX_LOGGED_ERROR: usize = 500;

/// Everything about a client request but its target: who asks, on which
/// endpoint, in which protocol. One per request, shared by every target a
/// combo tries.
pub struct Caller<'a> {
    pub request_id: &'a str,
    pub endpoint: &'static str,
    /// The protocol the client speaks (and wants its answer in).
    pub client: Protocol,
    pub stream: bool,
    pub key: Option<&'a KeyEntry>,
    /// Client headers for an upstream of the client's own protocol.
    pub passthrough_headers: &'a HeaderMap,
}

/// One client request, ready to send to one target.
pub struct Call<'a> {
    pub caller: &'a Caller<'a>,
    pub target: &'a Target,
    /// The body in the target provider's protocol.
    pub body: Bytes,
}

/// Why one attempt did not produce the answer.
struct Failure {
    connection_id: String,
    /// `None` for transport errors.
    status: Option<u16>,
    retry_after: Option<u64>,
    message: String,
}

/// The active connections of `provider` this request may use (the key's
/// allow-list, and a combo target's pinned connection), in routing order.
pub fn candidates<'s>(
    snapshot: &'s Snapshot,
    provider: &Provider,
    key: Option<&KeyEntry>,
    pinned: Option<&str>,
) -> Vec<&'s Arc<LiveConnection>> {
    snapshot
        .candidates(provider.id)
        .iter()
        .filter(|c| key.is_none_or(|k| k.may_use(&c.id)) && pinned.is_none_or(|p| p == c.id))
        .collect()
}

/// A single-model request: the provider's connections in order, waiting
/// for a cooldown when every one is cooling.
pub async fn run(state: &Arc<AppState>, snapshot: &Snapshot, call: Call<'_>) -> Result<Response, ProxyError> {
    let provider = call.target.provider;
    let candidates = candidates(snapshot, provider, call.caller.key, None);
    if candidates.is_empty() {
        return Err(ProxyError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "no_credentials",
            format!("No active credentials for provider: {}", provider.id),
        ));
    }
    let settings = state.resilience.current();
    let cfg = engine::breaker_config(&settings, provider.category);
    let probe = state.engine.admit(provider.id, &cfg).map_err(|ms| ProxyError::circuit_open(provider.id, ms))?;
    let mut target = TargetRun { candidates, cfg, probe };
    let mut waits = CooldownWaits::default();
    loop {
        let unserved = match try_connections(state, &call, &settings, &mut target).await {
            Ok(response) => return Ok(response),
            Err(u) => u,
        };
        if !unserved.failures.is_empty() {
            return Err(all_failed(provider.id, unserved.failures));
        }
        match waits.next(&settings.wait_for_cooldown, &unserved.excluded) {
            Some(ms) => {
                tracing::info!(
                    request_id = call.caller.request_id,
                    provider = provider.id,
                    wait_ms = ms,
                    "every connection is cooling; waiting for the first"
                );
                let wait = AbandonedWait::arm(state, log_row(&call), ms);
                state.engine.sleep(ms).await;
                wait.disarm();
            }
            None => return Err(all_excluded(provider.id, &call.target.model, &unserved.excluded)),
        }
    }
}

/// One target's connections and breaker admission.
pub struct TargetRun<'a> {
    pub candidates: Vec<&'a Arc<LiveConnection>>,
    pub cfg: BreakerConfig,
    pub probe: Option<Probe>,
}

/// Why no connection of a target served: the failed attempts, and the
/// connections skipped without an attempt.
pub struct Unserved {
    failures: Vec<Failure>,
    pub excluded: Vec<Exclusion>,
}

impl Unserved {
    pub fn attempted(&self) -> bool {
        !self.failures.is_empty()
    }

    /// The client error for a target whose attempts all failed.
    pub fn into_error(self, provider: &str) -> ProxyError {
        all_failed(provider, self.failures)
    }
}

/// Tries each usable connection of the target once, in order, applying
/// the engine's verdict after every failure.
pub async fn try_connections(
    state: &Arc<AppState>,
    call: &Call<'_>,
    settings: &ResilienceSettings,
    t: &mut TargetRun<'_>,
) -> Result<Response, Unserved> {
    let provider = call.target.provider;
    let model = call.target.model.as_str();
    let mut failures = Vec::new();
    let mut excluded = Vec::new();
    for conn in &t.candidates {
        if let Some(why) = state.engine.exclusion(provider.id, &conn.id, model) {
            excluded.push(why);
            continue;
        }
        let mut attempt = Attempt::start(state, call, conn);
        let upstream = provider.protocol;
        let extra = if upstream == call.caller.client { call.caller.passthrough_headers } else { &*NO_HEADERS };
        let sent = state
            .executor
            .post(
                conn,
                &translate::upstream_path(upstream, &call.target.model, call.caller.stream),
                call.body.clone(),
                call.caller.stream,
                extra,
            )
            .await;
        let egress = sent.as_ref().ok().and_then(UpstreamResponse::egress_ip);
        if let Some(ip) = egress {
            attempt.record.egress_ip = Some(ip.to_string());
            if settings.egress_ip_lock_providers.iter().any(|p| p == provider.id) {
                state.engine.record_egress(&conn.id, ip);
            }
        }
        let failed = match sent {
            Err(e) => attempt.transport_failure(&e),
            Ok(resp) if resp.status().is_success() => match attempt.success(resp).await {
                Ok(response) => {
                    state.engine.on_success(provider.id, &conn.id, model, &t.cfg, t.probe.take());
                    return Ok(response);
                }
                Err(f) => f,
            },
            Ok(resp) => {
                let status = resp.status().as_u16();
                let headers = resp.headers().clone();
                let raw = resp.read_limited(MAX_ERROR_BODY).await;
                let body = redact(&String::from_utf8_lossy(&raw), conn);
                let failure = attempt_failure(conn, model, Some(status), &headers, &body, egress);
                let outcome = state.engine.on_failure(&failure, settings, &t.cfg, t.probe.as_mut());
                if let Some(ip) = state.engine.egress_lock_ip(&failure, &outcome, settings) {
                    lock_egress_siblings(state, settings, conn, ip, &outcome.verdict);
                }
                if !outcome.verdict.should_fallback {
                    return Ok(attempt.client_error(status, body));
                }
                let kind = outcome.verdict.reason.as_str();
                failures.push(attempt.fail(
                    outcome.status,
                    kind,
                    error_message(status, &body),
                    outcome.retry_after_secs,
                ));
                continue;
            }
        };
        // Transport failures (before or during the body) count too.
        let failure = attempt_failure(conn, model, None, &NO_HEADERS, &failed.message, egress);
        state.engine.on_failure(&failure, settings, &t.cfg, t.probe.as_mut());
        failures.push(failed);
    }
    Err(Unserved { failures, excluded })
}

/// The egress-bucketed lock (SPEC §R7): a quota or rate-limit 429 on
/// `failing` also cools the allow-listed connections that left through the
/// same IP, except those that opt out of cooling.
fn lock_egress_siblings(
    state: &AppState,
    settings: &ResilienceSettings,
    failing: &LiveConnection,
    ip: std::net::IpAddr,
    verdict: &Verdict,
) {
    let snapshot = state.connections.snapshot();
    let pool = settings
        .egress_ip_lock_providers
        .iter()
        .flat_map(|p| snapshot.candidates(p))
        .filter(|c| !c.disable_cooling)
        .map(|c| c.id.as_str());
    let cooled = state.engine.cool_egress_siblings(&failing.id, ip, verdict, pool);
    if !cooled.is_empty() {
        tracing::warn!(connection_id = %failing.id, egress_ip = %ip, siblings = ?cooled, reason = verdict.reason.as_str(), "limit hit on a shared egress IP; its siblings cool too");
    }
}

/// A failed attempt as the engine takes it.
fn attempt_failure<'a>(
    conn: &'a LiveConnection,
    model: &'a str,
    status: Option<u16>,
    headers: &'a http::HeaderMap,
    body: &'a str,
    egress_ip: Option<std::net::IpAddr>,
) -> AttemptFailure<'a> {
    AttemptFailure {
        provider: conn.provider.id,
        connection_id: &conn.id,
        model,
        oauth: conn.oauth,
        disable_cooling: conn.disable_cooling,
        status,
        headers,
        body,
        egress_ip,
    }
}

/// Every connection failed: answer with the last failure.
fn all_failed(provider: &str, failures: Vec<Failure>) -> ProxyError {
    let n = failures.len();
    let Some(last) = failures.into_iter().next_back() else {
        return ProxyError::new(StatusCode::BAD_GATEWAY, "server_error", "upstream_error", "no attempt was made");
    };
    let message = format!("All {n} connection(s) of provider {provider} failed; last error: {}", last.message);
    let (status, kind, code) = match last.status {
        Some(429) => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "rate_limited"),
        Some(401) => (StatusCode::UNAUTHORIZED, "authentication_error", "upstream_auth_error"),
        Some(403) => (StatusCode::FORBIDDEN, "permission_error", "upstream_forbidden"),
        Some(404) => (StatusCode::NOT_FOUND, "invalid_request_error", "model_not_found"),
        Some(s) => (StatusCode::from_u16(s).unwrap_or(StatusCode::BAD_GATEWAY), "server_error", "upstream_error"),
        None => (StatusCode::BAD_GATEWAY, "server_error", "upstream_unavailable"),
    };
    let mut err = ProxyError::new(status, kind, code, message);
    err.retry_after = last.retry_after;
    err.connection_id = Some(last.connection_id.into());
    err
}

/// No connection could even be tried (SPEC §R2 outcomes): all terminal →
/// 401; every usable one blocked only by model lockouts → 429
/// `model_cooldown`; otherwise cooling → 429 when they cooled for rate
/// limits, else 503, with "(reset after Ns)". `Retry-After` is the
/// earliest lapse.
fn all_excluded(provider: &str, model: &str, excluded: &[Exclusion]) -> ProxyError {
    let terminal: Vec<TerminalStatus> =
        excluded.iter().filter_map(|e| if let Exclusion::Terminal(t) = e { Some(*t) } else { None }).collect();
    if terminal.len() == excluded.len() {
        let why = match terminal.first() {
            Some(TerminalStatus::Banned) => "banned by upstream",
            Some(TerminalStatus::CreditsExhausted) => "credits exhausted",
            _ => "authentication expired",
        };
        return ProxyError::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "connections_unusable",
            format!("[{provider}] All {} connection(s) {why} — please reconnect in the dashboard", terminal.len()),
        );
    }
    let soonest = excluded
        .iter()
        .filter_map(|e| match e {
            Exclusion::Cooling { remaining_ms, .. } | Exclusion::ModelLocked { remaining_ms } => Some(*remaining_ms),
            Exclusion::Terminal(_) => None,
        })
        .min()
        .unwrap_or(1_000);
    let secs = soonest.div_ceil(1000).max(1);
    let locked = excluded.iter().filter(|e| matches!(e, Exclusion::ModelLocked { .. })).count();
    let cooling: Vec<(Option<u16>, Option<&String>)> = excluded
        .iter()
        .filter_map(|e| match e {
            Exclusion::Cooling { error_code, last_error, .. } => Some((*error_code, last_error.as_ref())),
            _ => None,
        })
        .collect();
    let mut err = if cooling.is_empty() {
        ProxyError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "model_cooldown",
            format!("All credentials for model {model} are cooling down"),
        )
        .with("model", model)
        .with("reset_seconds", secs)
        .with("credentials_cooling", locked)
    } else {
        let rate_limited = cooling.iter().all(|(code, _)| *code == Some(429));
        let last_error = cooling.iter().find_map(|(_, e)| *e).map_or("connections are cooling down", String::as_str);
        let message = format!("[{provider}/{model}] {last_error} (reset after {secs}s)");
        if rate_limited {
            ProxyError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "connection_cooldown", message)
        } else {
            ProxyError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", "connection_cooldown", message)
        }
    };
    err.retry_after = Some(secs);
    err
}

/// The log row of a request to its target, before any connection is
/// chosen (also the row of a request that gave up waiting for a cooldown).
fn log_row(call: &Call<'_>) -> AttemptRecord {
    AttemptRecord {
        created_at: now_ms(),
        request_id: call.caller.request_id.to_owned(),
        endpoint: call.caller.endpoint.to_owned(),
        provider: call.target.provider.id.to_owned(),
        model: call.target.model.clone(),
        stream: call.caller.stream,
        ..AttemptRecord::default()
    }
}

/// One upstream attempt: its timing and the log row it will write.
struct Attempt<'a> {
    state: &'a Arc<AppState>,
    conn: &'a LiveConnection,
    /// The client's protocol; the answer is translated when it differs
    /// from the connection's.
    client: Protocol,
    started: Instant,
    record: AttemptRecord,
}

impl<'a> Attempt<'a> {
    fn start(state: &'a Arc<AppState>, call: &Call<'_>, conn: &'a LiveConnection) -> Self {
        let record = AttemptRecord { connection_id: Some(conn.id.clone()), ..log_row(call) };
        Self { state, conn, client: call.caller.client, started: Instant::now(), record }
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

    /// Whether the answer must be translated for the client.
    fn translating(&self) -> bool {
        self.client != self.conn.provider.protocol
    }

    /// The request itself is at fault (the verdict says no other
    /// connection would do better): return the upstream's answer — as is
    /// when both sides speak one protocol, else its message in the
    /// client's envelope — credential redacted.
    fn client_error(mut self, status: u16, text: String) -> Response {
        self.record.status = i32::from(status);
        self.record.latency_ms = self.elapsed_ms();
        self.record.error_kind = Some("client_error".to_owned());
        self.record.error_message = Some(truncate(&text, MAX_LOGGED_ERROR));
        let conn_id = self.conn.id.clone();
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        let client = self.client;
        let translating = self.translating();
        self.finish_log();
        if !translating {
            return json_response(status, Bytes::from(text), &conn_id);
        }
        let message = translate::error_message(&text).unwrap_or(text);
        let mut e = ProxyError::new(status, "invalid_request_error", "upstream_error", message);
        e.connection_id = Some(conn_id.into());
        e.into_response_as(client)
    }

    async fn success(mut self, resp: UpstreamResponse) -> Result<Response, Failure> {
        self.record.status = i32::from(resp.status().as_u16());
        let upstream = self.conn.provider.protocol;
        if self.record.stream {
            let content_type = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok())
                .filter(|_| !self.translating());
            let conn_id = self.conn.id.clone();
            let translator = self.translating().then(|| StreamTranslator::new(upstream, self.client, now_ms() / 1000));
            let body = PassThrough::new(
                resp.into_stream(),
                self.started,
                self.record,
                self.state.logs.clone(),
                self.client,
                translator,
            );
            let mut response = Response::new(Body::from_stream(body));
            let h = response.headers_mut();
            h.insert(header::CONTENT_TYPE, content_type.unwrap_or(HeaderValue::from_static("text/event-stream")));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            insert_connection(h, &conn_id);
            return Ok(response);
        }
        match tokio::time::timeout(self.state.config.fetch_timeout, resp.bytes()).await {
            Ok(Ok(body)) if self.translating() => {
                match translate::response(upstream, &body, self.client, now_ms() / 1000) {
                    Ok((translated, u)) => {
                        self.record.latency_ms = self.elapsed_ms();
                        self.record.prompt_tokens = i64::try_from(u.input_tokens).ok();
                        self.record.completion_tokens = i64::try_from(u.output_tokens).ok();
                        self.record.cached_tokens = u.cached_tokens.and_then(|c| i64::try_from(c).ok());
                        let conn_id = self.conn.id.clone();
                        self.finish_log();
                        Ok(json_response(StatusCode::OK, translated, &conn_id))
                    }
                    Err(e) => Err(self.fail(
                        None,
                        "invalid_response",
                        format!("the upstream answer could not be read: {e}"),
                        None,
                    )),
                }
            }
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
            Ok(Err(cause)) => {
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

/// The human message of an upstream error body (`error.message` when it
/// is JSON, else the text).
fn error_message(status: u16, body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = json
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message").or_else(|| v.get("message")).and_then(|m| m.as_str()).map(str::to_owned)
        })
        .unwrap_or_else(|| body.trim().to_owned());
    if message.is_empty() {
        format!("upstream returned {status}")
    } else {
        format!("upstream returned {status}: {message}")
    }
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
