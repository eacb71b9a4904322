//! A scriptable fake LLM provider for tests, e2e and benches. It speaks
//! OpenAI chat, Anthropic messages, Responses and Gemini (JSON and SSE),
//! lists models, and follows scripted rules (status, headers, body,
//! latency, stalls, dropped connections, early ends, slow trickle). It records every
//! request so tests can assert what the gateway sent upstream.
//!
//! Control API (for the binary and the browser tests):
//! `POST /_control/rules` (a [`Rule`]), `DELETE /_control/rules`,
//! `GET /_control/requests`, `DELETE /_control/requests`, `GET /_control/in-flight`
//! (requests being answered and the most at once, overall `*` and by model).

mod oauth;
mod responses;
mod script;
mod tls;
mod tool_call;

pub use oauth::{CLAUDE_ORG, CODE_ASSIST_PROJECT, CODEX_ACCOUNT, jwt};
pub use responses::{DEFAULT_CONTENT, MODELS};
pub use script::{Garble, LATE_EVENT, Rule};
pub use tls::{Alpn, ca_file};
pub use tool_call::{CALL_ID, ToolCall};

use axum::{
    Json, Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, Method, StatusCode, Uri, Version, header},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
};
use futures_util::stream::{self, StreamExt};
use parking_lot::Mutex;
use responses::Kind;
use script::{RequestFacts, Script};
use serde::Serialize;
use std::{
    collections::{BTreeMap, VecDeque},
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};
use tokio::net::TcpListener;

/// Most requests the log keeps (oldest dropped first).
const REQUEST_LOG_CAP: usize = 10_000;

/// One request as the fake received it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Lower-cased header names.
    pub headers: BTreeMap<String, String>,
    pub body: String,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
}

#[derive(Default)]
struct Shared {
    script: Script,
    log: Mutex<VecDeque<RecordedRequest>>,
    record: bool,
    /// Requests being answered (until their body ends), overall (`*`) and
    /// by model.
    in_flight: Mutex<BTreeMap<String, InFlight>>,
    /// The OAuth issuer of subscription accounts.
    issuer: oauth::Issuer,
    /// Connections accepted (counted over TLS only).
    connections: Arc<AtomicU32>,
}

/// Requests being answered now, and the most at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InFlight {
    pub now: u32,
    pub peak: u32,
}

/// Counts one request as in flight until dropped (with its body).
struct Answering {
    shared: Arc<Shared>,
    model: String,
}

impl Answering {
    fn start(shared: &Arc<Shared>, model: &str) -> Self {
        let mut m = shared.in_flight.lock();
        for key in ["*", model] {
            let e = m.entry(key.to_owned()).or_default();
            e.now += 1;
            e.peak = e.peak.max(e.now);
        }
        Self { shared: shared.clone(), model: model.to_owned() }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        let mut m = self.shared.in_flight.lock();
        for key in ["*", self.model.as_str()] {
            if let Some(e) = m.get_mut(key) {
                e.now = e.now.saturating_sub(1);
            }
        }
    }
}

/// A running fake upstream on a loopback port; stops when dropped.
pub struct FakeUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
    tls: bool,
}

impl FakeUpstream {
    /// Starts on an ephemeral loopback port, recording requests.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_on("127.0.0.1:0".parse()?, true).await
    }

    /// Starts on `addr`; `record = false` skips the request log (benches).
    pub async fn start_on(addr: SocketAddr, record: bool) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared { record, ..Default::default() });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = router(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self { addr, shared, _shutdown: tx, tls: false })
    }

    /// Starts on an ephemeral loopback port over TLS ([`tls`]), offering
    /// `alpn`, recording requests; its HTTP/2 connections take any number
    /// of requests at once.
    pub async fn start_tls(alpn: Alpn) -> anyhow::Result<Self> {
        Self::start_tls_with_streams(alpn, u32::MAX).await
    }

    /// [`Self::start_tls`], an HTTP/2 connection taking `max_streams`
    /// requests at once at most (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    pub async fn start_tls_with_streams(alpn: Alpn, max_streams: u32) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared { record: true, ..Default::default() });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tls::spawn(listener, (alpn, max_streams), router(shared.clone()), shared.connections.clone(), rx)?;
        Ok(Self { addr, shared, _shutdown: tx, tls: true })
    }

    /// The connections accepted so far (a fake started by [`Self::start_tls`]).
    pub fn connections(&self) -> u32 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>` (`https://` over TLS).
    pub fn url(&self) -> String {
        format!("{}://{}", if self.tls { "https" } else { "http" }, self.addr)
    }

    /// Adds a rule; the newest matching rule wins.
    pub fn push_rule(&self, rule: Rule) {
        self.shared.script.push(rule);
    }

    pub fn clear_rules(&self) {
        self.shared.script.clear();
    }

    pub fn clear_requests(&self) {
        self.shared.log.lock().clear();
    }

    /// Every recorded request, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.log.lock().iter().cloned().collect()
    }

    /// Requests being answered and the most at once, for `model` (`*` = all).
    pub fn in_flight(&self, model: &str) -> InFlight {
        self.shared.in_flight.lock().get(model).copied().unwrap_or_default()
    }

    /// Forgets the peaks (the counts of requests still running stay).
    pub fn reset_peaks(&self) {
        for e in self.shared.in_flight.lock().values_mut() {
            e.peak = e.now;
        }
    }

    /// Access tokens the OAuth issuer has handed out.
    pub fn tokens_issued(&self) -> u32 {
        self.shared.issuer.issued()
    }

    /// Recorded requests whose path starts with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.shared.log.lock().iter().filter(|r| r.path.starts_with(prefix)).count()
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/_control/rules", post(add_rule).delete(clear_rules))
        .route("/_control/requests", get(list_requests))
        .route("/_control/requests", delete(clear_requests))
        .route("/_control/in-flight", get(list_in_flight))
        .fallback(serve)
        .with_state(shared)
}

async fn add_rule(State(s): State<Arc<Shared>>, Json(rule): Json<Rule>) -> StatusCode {
    s.script.push(rule);
    StatusCode::NO_CONTENT
}

async fn clear_rules(State(s): State<Arc<Shared>>) -> StatusCode {
    s.script.clear();
    StatusCode::NO_CONTENT
}

async fn list_requests(State(s): State<Arc<Shared>>) -> Json<Vec<RecordedRequest>> {
    Json(s.log.lock().iter().cloned().collect())
}

async fn list_in_flight(State(s): State<Arc<Shared>>) -> Json<BTreeMap<String, InFlight>> {
    Json(s.in_flight.lock().clone())
}

async fn clear_requests(State(s): State<Arc<Shared>>) -> StatusCode {
    s.log.lock().clear();
    StatusCode::NO_CONTENT
}

fn is_form(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/x-www-form-urlencoded"))
}

/// The credential a request carries, in any of the providers' styles.
fn credential<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<&'a str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .or_else(|| headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()))
        .or_else(|| query?.split('&').find_map(|kv| kv.strip_prefix("key=")))
}

/// The model a request asks for: body `model`, or the Gemini URL segment.
fn requested_model(path: &str, body: &serde_json::Value) -> Option<String> {
    if let Some(m) = body.get("model").and_then(|m| m.as_str()) {
        return Some(m.to_owned());
    }
    let rest = path.split("/models/").nth(1)?;
    Some(rest.split(':').next()?.to_owned())
}

async fn serve(
    State(s): State<Arc<Shared>>,
    method: Method,
    version: Version,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path();
    let query = uri.query();
    if s.record {
        record(&s, (&method, version), path, query, &headers, &body);
    }
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    if path.ends_with("/oauth/token") {
        let facts = RequestFacts { path, model: None, api_key: None };
        let rule = s.script.take(&facts).unwrap_or_default();
        tokio::time::sleep(Duration::from_millis(rule.latency_ms)).await;
        return match rule.status {
            Some(status) => StatusCode::from_u16(status).unwrap_or(StatusCode::OK).into_response(),
            None if is_form(&headers) => s.issuer.token(&oauth::form(&body)),
            None => s.issuer.token(&json),
        };
    }
    if let Some(mut usage) = oauth::usage(path) {
        let facts = RequestFacts { path, model: None, api_key: credential(&headers, query) };
        let rule = s.script.take(&facts).unwrap_or_default();
        if facts.api_key.is_none() {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        if query.is_some_and(|q| q.contains("at_wall=1")) {
            usage["juniper_tide"] = s.issuer.reset_offer();
        }
        let status = StatusCode::from_u16(rule.status.unwrap_or(200)).unwrap_or(StatusCode::OK);
        return (status, Json(rule.body.unwrap_or(usage))).into_response();
    }
    if path.ends_with("/api/oauth/profile") || path.ends_with("/reset_rate_limits") {
        let facts = RequestFacts { path, model: None, api_key: credential(&headers, query) };
        let rule = s.script.take(&facts).unwrap_or_default();
        if facts.api_key.is_none() {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        if let Some(status) = rule.status {
            return StatusCode::from_u16(status).unwrap_or(StatusCode::OK).into_response();
        }
        if path.ends_with("/reset_rate_limits") {
            return s.issuer.claim_reset(path, &json);
        }
        let profile =
            serde_json::json!({"organization": {"uuid": oauth::CLAUDE_ORG}, "account": {"email": "fake@example.test"}});
        return Json(profile).into_response();
    }
    if let Some(answer) = oauth::code_assist(path, &headers, &json, &s.issuer.code_assist_onboarded) {
        return answer;
    }
    let Some(kind) = Kind::from_path(path) else {
        return (StatusCode::NOT_FOUND, Json(serde_json::json!({"error": {"message": "no such route"}})))
            .into_response();
    };
    if let Some(refused) = (kind == Kind::Anthropic).then(|| oauth::refusal(&headers, &json)).flatten() {
        return refused;
    }
    if path.ends_with("/codex/responses")
        && let Some(refused) = oauth::codex_refusal(&headers, &json)
    {
        return refused;
    }
    if path.ends_with("/codex/models") {
        let models: Vec<_> = MODELS.iter().map(|m| serde_json::json!({"slug": m, "visibility": "list"})).collect();
        return Json(serde_json::json!({"models": models})).into_response();
    }
    let model = requested_model(path, &json).unwrap_or_else(|| "fake-model".into());
    let facts = RequestFacts { path, model: Some(&model), api_key: credential(&headers, query) };
    let rule = s.script.take(&facts).unwrap_or_default();
    // Counted only when recording: benches measure the fake without it.
    let answering = s.record.then(|| Answering::start(&s, &model));
    if rule.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(rule.latency_ms)).await;
    }
    let status = StatusCode::from_u16(rule.status.unwrap_or(200)).unwrap_or(StatusCode::OK);
    let streaming =
        path.contains(":streamGenerateContent") || json.get("stream").and_then(|v| v.as_bool()).unwrap_or(false);
    let content = rule.content.clone().unwrap_or_else(|| DEFAULT_CONTENT.to_owned());

    let (frames, content_type) = if let Some(b) = &rule.body {
        let text = match b {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        (vec![Bytes::from(text)], "application/json")
    } else if !status.is_success() {
        (vec![Bytes::from(responses::error_body(kind, status.as_u16()).to_string())], "application/json")
    } else if matches!(kind, Kind::Models | Kind::GeminiModels) {
        (vec![Bytes::from(responses::models_body(kind).to_string())], "application/json")
    } else if let Some(call) = rule.tool_call.as_ref().filter(|_| streaming) {
        (tool_call::stream_frames(kind, &model, call), "text/event-stream")
    } else if let Some(call) = &rule.tool_call {
        (vec![Bytes::from(tool_call::json_body(kind, &model, call).to_string())], "application/json")
    } else if streaming {
        let mut frames = responses::stream_frames(kind, &model, &content, body.len());
        if let Some(n) = rule.error_after_chunks {
            frames.truncate(n as usize);
            frames.push(responses::stream_error_frame(kind));
        }
        (frames, "text/event-stream")
    } else {
        (vec![Bytes::from(responses::json_body(kind, &model, &content, body.len()).to_string())], "application/json")
    };

    let frames = match path.starts_with("/v1internal:") && status.is_success() && rule.body.is_none() {
        true => oauth::code_assist_envelope(frames, streaming),
        false => frames,
    };
    let mut response = Response::builder().status(status).header(header::CONTENT_TYPE, content_type);
    for (k, v) in &rule.headers {
        response = response.header(k.as_str(), v.as_str());
    }
    let mut body = scripted_body(frames, &rule, streaming);
    if let Some(answering) = answering {
        body = Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _counted = &answering;
            chunk
        }));
    }
    response.body(body).unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Turns the frames into a body that follows the rule's stall / drop /
/// trickle instructions (and, for a stream, its garbling and lingering).
fn scripted_body(frames: Vec<Bytes>, rule: &Rule, streaming: bool) -> Body {
    let linger = streaming && rule.linger;
    let mut frames = frames;
    if let Some(n) = rule.end_after_chunks {
        frames = split_single(frames);
        frames.truncate(n as usize);
    }
    if let Some(n) = rule.garble_after_chunks.filter(|_| streaming) {
        frames = rule.garble.apply(frames, n as usize);
    }
    if linger {
        frames.push(Bytes::from_static(script::LATE_EVENT));
    }
    let quiet = rule.stall_after_chunks.is_none() && rule.drop_after_chunks.is_none() && rule.trickle_ms == 0;
    if quiet && !linger {
        return if frames.len() == 1 {
            Body::from(frames.into_iter().next().unwrap_or_default())
        } else {
            Body::from_stream(stream::iter(frames.into_iter().map(Ok::<_, std::io::Error>)))
        };
    }
    let frames = split_single(frames);
    // A lingering body stays open after its last frame.
    let stall = rule.stall_after_chunks.map(|n| n as usize).or(linger.then_some(frames.len()));
    let drop_at = rule.drop_after_chunks.map(|n| n as usize);
    let trickle = Duration::from_millis(rule.trickle_ms);
    let stream = stream::unfold((frames.into_iter(), 0usize), move |(mut it, i)| async move {
        if drop_at == Some(i) {
            // Return Pending once so the server flushes the frames already
            // written: the client sees them, then the connection drop.
            tokio::task::yield_now().await;
            return Some((Err(std::io::Error::other("fake-upstream: connection dropped")), (it, usize::MAX)));
        }
        if i == usize::MAX {
            return None;
        }
        if stall == Some(i) {
            std::future::pending::<()>().await;
        }
        if i > 0 && !trickle.is_zero() {
            tokio::time::sleep(trickle).await;
        }
        let next = it.next()?;
        Some((Ok(next), (it, i + 1)))
    });
    Body::from_stream(stream.boxed())
}

/// A single JSON body is split in two so a drop can land mid-body.
fn split_single(frames: Vec<Bytes>) -> Vec<Bytes> {
    match <[Bytes; 1]>::try_from(frames) {
        Ok([one]) if one.len() > 1 => {
            let mid = one.len() / 2;
            vec![one.slice(..mid), one.slice(mid..)]
        }
        Ok([one]) => vec![one],
        Err(frames) => frames,
    }
}

fn record(
    s: &Shared,
    (method, version): (&Method, Version),
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
    body: &Bytes,
) {
    let entry = RecordedRequest {
        method: method.to_string(),
        path: path.to_owned(),
        query: query.map(str::to_owned),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: String::from_utf8_lossy(body).into_owned(),
        version: format!("{version:?}"),
    };
    let mut log = s.log.lock();
    if log.len() >= REQUEST_LOG_CAP {
        log.pop_front();
    }
    log.push_back(entry);
}
