//! The dispatch loop — read this to understand a request. One loop
//! serves a single model and a combo alike:
//! plan (the ordered targets, `plan`) → per target, the gates (`gates`:
//! a usable connection, the §R1.1 window gate for combo targets, the
//! provider breaker) → per connection, its own gates (cooldown, terminal
//! state, model lockout) → attempt → on failure the engine restates,
//! classifies and applies the verdict (cooldown, lockout, breaker), and
//! the next connection / target is tried unless the verdict says the
//! request itself is at fault → on success the engine clears the
//! connection's errors, decays lockouts and counts a breaker success.
//! When every connection of a single model is cooling, the request waits
//! for the first (§R2 wait-for-cooldown) and runs the loop again. What
//! could not be served ends as a [`error::DispatchError`] carrying the
//! trail of every attempt and skip, which says why and when to retry.
//!
//! Each attempt is an [`attempt::AttemptGuard`]: it writes the attempt's
//! `proxy_logs` row and reports its outcome exactly once — for a stream,
//! when the stream ends. A stream is committed to the client only at its
//! first useful event (SPEC §R6); until then an attempt that times out,
//! breaks or ends early is retried or failed over like any other failure.

mod answer;
pub mod attempt;
mod combo_wait;
mod emergency;
pub mod error;
mod gates;
mod permits;
pub mod queue;
mod slots;
mod streaming;

use app::types::{Protocol, settings::ResilienceSettings};
use axum::{http::HeaderMap, response::Response};
use bytes::Bytes;
use std::{sync::Arc, time::Duration};

use self::{
    attempt::{AttemptGuard, Failed},
    error::{DispatchError, Trail},
    slots::{Slots, Taken},
};
use super::{cooldown_wait::AbandonedWait, errors::ProxyError, request::ClientRequest, resume::Resumer};
use crate::{
    auth::api_keys::KeyEntry,
    protocols::translate,
    resilience::{
        breaker::BreakerConfig,
        classify::Verdict,
        combo_wait::ComboWaits,
        cooldown_wait::CooldownWaits,
        engine::{Exclusion, Probe},
        tool_limits,
    },
    routing::{
        affinity::PinKey,
        leases::Lease,
        plan::Plan,
        registry::{LiveConnection, Snapshot},
        resolve::Target,
        view::{Asker, RoutingView},
    },
    state::AppState,
    store::AttemptRecord,
    upstream::executor::{TransportError, UpstreamResponse},
};

static NO_HEADERS: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(HeaderMap::new);

/// Largest upstream error body read (the rest is ignored).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest wait for an error body once its status arrived: an error body
/// that takes longer comes from a stuck upstream.
const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// Early stream failures stream recovery absorbed so far.
    pub recovered: std::sync::atomic::AtomicU8,
    /// The name the client sent, when it was an alias (SPEC §A).
    pub alias: Option<&'a str>,
    /// The request, for its session (session affinity, §R2.2).
    pub request: Option<&'a ClientRequest>,
    /// The exclusive session lease it holds (§R2.3): its connection serves
    /// its provider's targets.
    pub lease: Option<&'a Lease>,
    /// Mid-stream recovery (§R6): how a committed stream of this request
    /// is continued when it fails.
    pub resume: Option<&'a Resumer>,
    /// This request continues a stream that failed on this connection:
    /// only other connections of a prefix-continuing provider serve it.
    pub continuing: Option<&'a str>,
    /// A `context-relay` handoff (`proxy::handoff`): every connection but
    /// the one named serves the request carrying the handoff's note.
    pub handoff: Option<(&'a str, &'a ClientRequest)>,
}

impl<'a> Caller<'a> {
    /// What bounds the connections this request may use (its key, its lease).
    pub fn asker(&self) -> Asker<'a> {
        Asker::new(self.key, self.lease)
    }
}

/// One client request, ready to send to one target.
pub struct Call<'a> {
    pub caller: &'a Caller<'a>,
    pub target: &'a Target,
    /// A combo's target: a refusal of the request's tools fails over.
    pub combo: bool,
    /// The body in the target provider's protocol.
    pub body: Bytes,
    /// With a handoff: the connection it was written on, and the body with
    /// its note, for every other connection.
    pub handoff: Option<(&'a str, Bytes)>,
    /// A combo's `targetTimeoutMs`: the longest wait for an answer to start.
    pub timeout: Option<Duration>,
}

/// Why one attempt did not produce the answer.
pub struct Failure {
    connection_id: String,
    /// `None` for transport errors.
    status: Option<u16>,
    retry_after: Option<u64>,
    message: String,
    /// The client's error code when this failure is the last (a stream
    /// that never became ready).
    code: Option<FailureCode>,
}

/// A failure the client's answer names by its own code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureCode {
    /// `502 STREAM_EARLY_EOF`: the stream ended before it was committed (§R6).
    EarlyEof,
    /// `504 STREAM_READINESS_TIMEOUT`: no first event in time (§R6).
    ReadinessTimeout,
    /// `429 SEMAPHORE_TIMEOUT`: no concurrency slot freed in time (§R4).
    SemaphoreTimeout,
    /// `429 SEMAPHORE_QUEUE_FULL`: too many already wait for a slot (§R4).
    SemaphoreQueueFull,
    /// `429 RATE_LIMIT_QUEUE_FULL`: the request queue is at `maxQueueDepth` (§R5).
    QueueFull,
    /// `503 RATE_LIMIT_QUEUE_TIMEOUT`: not started within `maxWaitMs` (§R5).
    QueueTimeout,
    /// `503 RATE_LIMIT_QUEUE_WEDGED`: the request queue stopped moving (§R5).
    QueueWedged,
    /// `504 RATE_LIMIT_EXECUTION_TIMEOUT`: the answer took longer than
    /// `executionMaxWaitMs` (§R5).
    ExecutionTimeout,
}

impl FailureCode {
    /// Whether the gateway failed the attempt itself: the engine never
    /// hears of it (no breaker, cooldown or lockout).
    pub fn is_local(self) -> bool {
        !matches!(self, Self::EarlyEof | Self::ReadinessTimeout)
    }

    pub fn as_str(self) -> &'static str {
        self.answer().2
    }

    /// The client's answer: HTTP status, error type, code.
    pub fn answer(self) -> (http::StatusCode, &'static str, &'static str) {
        use http::StatusCode as S;
        match self {
            Self::EarlyEof => (S::BAD_GATEWAY, "stream_early_eof", "STREAM_EARLY_EOF"),
            Self::ReadinessTimeout => (S::GATEWAY_TIMEOUT, "server_error", "STREAM_READINESS_TIMEOUT"),
            Self::SemaphoreTimeout => (S::TOO_MANY_REQUESTS, "rate_limit_error", "SEMAPHORE_TIMEOUT"),
            Self::SemaphoreQueueFull => (S::TOO_MANY_REQUESTS, "rate_limit_error", "SEMAPHORE_QUEUE_FULL"),
            Self::QueueFull => (S::TOO_MANY_REQUESTS, "rate_limit_error", "RATE_LIMIT_QUEUE_FULL"),
            Self::QueueTimeout => (S::SERVICE_UNAVAILABLE, "rate_limit_error", "RATE_LIMIT_QUEUE_TIMEOUT"),
            Self::QueueWedged => (S::SERVICE_UNAVAILABLE, "server_error", "RATE_LIMIT_QUEUE_WEDGED"),
            Self::ExecutionTimeout => (S::GATEWAY_TIMEOUT, "server_error", "RATE_LIMIT_EXECUTION_TIMEOUT"),
        }
    }
}

/// What one attempt came to.
enum Tried {
    /// The answer for the client (served, or the request's own fault).
    Answer(Response),
    /// Try the next connection.
    Failed(Failure),
    /// The stream ended before its first useful event: the same
    /// connection may be tried once more, unmarked.
    EarlyEof(Failure),
}

/// Serves `plan`: its targets in order, each through the gates and its
/// connections, waiting for a cooldown where that is allowed.
pub async fn run(
    state: &Arc<AppState>,
    snapshot: &Snapshot,
    plan: &Plan,
    caller: &Caller<'_>,
    body_for: impl Fn(Protocol, &str) -> Result<Bytes, ProxyError>,
) -> Result<Response, DispatchError> {
    let settings = state.resilience.current();
    let combo = plan.combo.is_some();
    let mut waits = CooldownWaits::default();
    let mut combo_waits = ComboWaits::default();
    let started = tokio::time::Instant::now();
    // `targetTimeoutMs`: how long each attempt on a combo target may wait for its answer to start.
    let timeout = plan.combo.as_ref().and_then(|c| c.config.target_timeout_ms).map(Duration::from_millis);
    // `comboTimeoutMs`: no further target once it has passed.
    let combo_timeout = plan.combo.as_ref().and_then(|c| Some((c, c.config.combo_timeout_ms.filter(|ms| *ms > 0)?)));
    loop {
        let mut trail = Trail::default();
        for planned in &plan.targets {
            let Some(target) = &planned.target else {
                trail.skip(planned, gates::Skip::new(gates::SkipReason::NoConnection, None));
                continue;
            };
            let (provider, pinned) = (target.provider, planned.pinned.as_deref());
            let tried_at = tokio::time::Instant::now();
            let to = To { target, pinned, combo, timeout };
            match serve_target(state, snapshot, to, caller, &settings, &body_for).await? {
                Err(Served::Skipped(skip)) => {
                    trail.skip(planned, skip);
                    continue;
                }
                Ok(response) => {
                    if let Some(c) = &plan.combo {
                        state.engine.record_target_success(provider.id, pinned);
                        let position = (planned.index, plan.targets.len());
                        state.routing.combo_states.served(
                            &c.name,
                            &planned.key,
                            provider.id,
                            position,
                            tried_at.elapsed(),
                        );
                    }
                    return Ok(response);
                }
                Err(Served::Unserved(unserved)) => {
                    if let Some(c) = plan.combo.as_ref().filter(|_| unserved.attempted()) {
                        let window = &settings.provider_cooldown;
                        state.engine.record_target_failure(provider.id, provider.category, pinned, window);
                        state.routing.combo_states.failed(&c.name, &planned.key);
                    }
                    trail.unserved(planned, provider.id, unserved);
                }
            }
            if let Some((combo, ms)) = combo_timeout.filter(|(_, ms)| started.elapsed() >= Duration::from_millis(*ms)) {
                return Err(DispatchError::ComboTimeout(combo.clone(), trail, ms));
            }
        }
        // A combo held back by short transient locks waits for the first
        // to end (§R4); a single model whose connections are all cooling
        // waits for the first (§R2).
        let wait = if combo {
            combo_wait::after(&mut combo_waits, &state.view(snapshot, &settings), &caller.asker(), plan, &trail)
        } else if trail.tried.is_empty() {
            waits.next(&settings.wait_for_cooldown, &trail.excluded)
        } else {
            None
        };
        let (Some(ms), Some(target)) = (wait, plan.targets.iter().find_map(|p| p.target.as_ref())) else {
            if let Some(response) = emergency::fallback(state, snapshot, plan, caller, &settings, &body_for).await? {
                return Ok(response);
            }
            if combo {
                let view = state.view(snapshot, &settings);
                let rate_limited = combo_wait::rate_limited_ms(&view, &caller.asker(), plan, &trail);
                trail.rate_limited = rate_limited.map(|ms| (ms, state.engine.now() + i64::try_from(ms).unwrap_or(0)));
            }
            return Err(if trail.tried.is_empty() {
                refused(state, caller, plan, trail)
            } else {
                DispatchError::exhausted(plan, trail)
            });
        };
        tracing::info!(
            request_id = caller.request_id,
            provider = target.provider.id,
            wait_ms = ms,
            combo = plan.combo.as_ref().map(|c| c.name.as_str()),
            "every target is held back briefly; waiting for the first to free"
        );
        let wait = AbandonedWait::arm(state, log_row(caller, target), ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        wait.disarm();
    }
}

/// Where one target's attempts go.
#[derive(Clone, Copy)]
pub struct To<'a> {
    pub target: &'a Target,
    pub pinned: Option<&'a str>,
    /// A combo's target (its gates and limits differ, §R8).
    pub combo: bool,
    /// Its combo's `targetTimeoutMs`.
    pub timeout: Option<Duration>,
}

/// Why a target did not answer.
pub enum Served {
    /// Its gates skipped it before any attempt.
    Skipped(gates::Skip),
    /// No connection of it served.
    Unserved(Unserved),
}

/// One target through its gates and its connections: the answer, or why
/// there is none.
pub async fn serve_target(
    state: &Arc<AppState>,
    snapshot: &Snapshot,
    to: To<'_>,
    caller: &Caller<'_>,
    settings: &ResilienceSettings,
    body_for: &impl Fn(Protocol, &str) -> Result<Bytes, ProxyError>,
) -> Result<Result<Response, Served>, DispatchError> {
    let target = to.target;
    let view = state.view(snapshot, settings);
    let mut run = match gates::open(state, &view, target, to.pinned, caller, to.combo) {
        Ok(run) => run,
        Err(skip) => return Ok(Err(Served::Skipped(skip))),
    };
    if let Some(failures) = slots::all_queues_full(state, caller, target, &run.candidates) {
        return Ok(Err(Served::Unserved(Unserved { failures, excluded: Vec::new() })));
    }
    let (protocol, model) = (target.provider.protocol, target.model.as_str());
    let body = body_for(protocol, model).map_err(DispatchError::Request)?;
    let handoff = match caller.handoff {
        Some((from, noted)) => Some((from, noted.body_for(protocol, model).map_err(DispatchError::Request)?)),
        None => None,
    };
    let call = Call { caller, target, combo: to.combo, body, handoff, timeout: to.timeout };
    Ok(try_connections(state, &view, &call, &mut run).await.map_err(Served::Unserved))
}

/// One target's connections and breaker admission.
pub struct TargetRun<'a> {
    pub candidates: Vec<&'a Arc<LiveConnection>>,
    /// Which concurrency limits its attempts take.
    pub requester: permits::Requester,
    pub cfg: BreakerConfig,
    pub probe: Option<Probe>,
    /// The request's session on this provider, when its pin decides
    /// between connections (SPEC §R2.2).
    pub pin: Option<PinKey>,
}

/// Why no connection of a target served: the failed attempts, and the
/// connections skipped without an attempt.
pub struct Unserved {
    failures: Vec<Failure>,
    pub excluded: Vec<Exclusion>,
}

impl Unserved {
    /// Whether an upstream was called (a refusal of the gateway's own is not a call).
    pub fn attempted(&self) -> bool {
        self.failures.iter().any(|f| !f.code.is_some_and(FailureCode::is_local))
    }
}

/// Tries each usable connection of the target, in order. A connection at
/// a limit — its request queue (SPEC §R5) or its concurrency (§R4) — is
/// passed over for the next; when every usable one is, the request waits
/// on the first.
pub async fn try_connections(
    state: &Arc<AppState>,
    view: &RoutingView<'_>,
    call: &Call<'_>,
    t: &mut TargetRun<'_>,
) -> Result<Response, Unserved> {
    let provider = call.target.provider;
    let mut failures = Vec::new();
    let mut excluded = Vec::new();
    let mut busy = None;
    // A refusal of the request's tools holds for every account.
    let refused_tools = || call.combo && gates::exceeds_tool_limit(view, call.target, call.caller);
    for conn in std::mem::take(&mut t.candidates) {
        if !failures.is_empty() && refused_tools() {
            break;
        }
        if let Some(why) = view.excluded(provider.id, &conn.id, &call.target.model) {
            excluded.push(why);
            continue;
        }
        match slots::try_take(state, call, conn, t.requester) {
            Taken::Slots(slots) => {
                if let Some(response) = serve_on(state, call, t, conn, slots, &mut failures).await {
                    return Ok(response);
                }
            }
            Taken::Busy => {
                busy.get_or_insert(conn);
            }
            Taken::Refused(failure) => failures.push(failure),
        }
    }
    if let Some(conn) = busy.filter(|_| failures.is_empty() || !refused_tools()) {
        match slots::wait(state, call, conn, t.requester).await {
            Ok(slots) => {
                if let Some(response) = serve_on(state, call, t, conn, slots, &mut failures).await {
                    return Ok(response);
                }
            }
            Err(failure) => failures.push(failure),
        }
    }
    Err(Unserved { failures, excluded })
}

/// Attempts on one connection holding `slots`; a stream that ended
/// before its first event gets one more try, with fresh slots.
async fn serve_on(
    state: &Arc<AppState>,
    call: &Call<'_>,
    t: &mut TargetRun<'_>,
    conn: &Arc<LiveConnection>,
    slots: Slots,
    failures: &mut Vec<Failure>,
) -> Option<Response> {
    let guard = AttemptGuard::start(state, call, t, conn, slots);
    // Boxed: a request waiting for its slots (often many of them, queued)
    // then holds a small future, not the whole attempt's state machine.
    let failure = match Box::pin(attempt(state, call, guard)).await {
        Tried::Answer(response) => return Some(response),
        Tried::Failed(f) => f,
        Tried::EarlyEof(_) => match slots::wait(state, call, conn, t.requester).await {
            Err(refused) => refused,
            Ok(slots) => {
                let guard = AttemptGuard::start(state, call, t, conn, slots);
                match Box::pin(attempt(state, call, guard)).await {
                    Tried::Answer(response) => return Some(response),
                    Tried::Failed(f) => f,
                    Tried::EarlyEof(f) => {
                        // Twice early: the session's pin leaves this connection.
                        if let Some(pin) = &t.pin {
                            state.routing.affinity.evict(pin, &conn.id);
                        }
                        f
                    }
                }
            }
        },
    };
    failures.push(failure);
    None
}

/// One attempt on one connection, to its answer or its failure.
async fn attempt(state: &Arc<AppState>, call: &Call<'_>, mut guard: AttemptGuard) -> Tried {
    let conn = guard.conn.clone();
    let upstream = conn.provider.protocol;
    let stream = call.caller.stream;
    // A stream's readiness budget covers the wait for its headers too.
    let limit = if stream { state.config.stream_readiness_timeout } else { state.config.fetch_timeout };
    let limit = call.timeout.map_or(limit, |t| t.min(limit));
    let deadline = guard.started() + limit;
    let extra = if upstream == call.caller.client { call.caller.passthrough_headers } else { &*NO_HEADERS };
    let path = translate::upstream_path(upstream, &call.target.model, stream);
    let body = match &call.handoff {
        Some((from, noted)) if conn.id != *from => noted.clone(),
        _ => call.body.clone(),
    };
    let post = state.upstream.post(&conn.endpoint, &path, body, stream, extra);
    let (until, execution_ends) = execution_bound(&guard, deadline);
    let sent = match tokio::time::timeout_at(until, post).await {
        Ok(sent) => sent,
        Err(_) if execution_ends => return Tried::Failed(execution_timeout(&mut guard)),
        Err(_) if stream => {
            let e = TransportError::Timeout(limit);
            return Tried::Failed(transport_failure(&mut guard, &e, Some(FailureCode::ReadinessTimeout)));
        }
        Err(_) => {
            let e = TransportError::Timeout(limit);
            return Tried::Failed(transport_failure(&mut guard, &e, None));
        }
    };
    let resp = match sent {
        Ok(resp) => resp,
        Err(e) => return Tried::Failed(transport_failure(&mut guard, &e, None)),
    };
    record_egress(state, &mut guard, &resp);
    queue::follow(guard.executing(), resp.headers());
    state.routing.quotas.observe(&conn.id, &call.target.model, resp.headers(), state.engine.now());
    if !resp.status().is_success() {
        return error_status(state, call, guard, resp, deadline).await;
    }
    if stream {
        streaming::open(state, call, guard, resp, deadline).await
    } else {
        answer::json(state, call, guard, resp).await
    }
}

/// The earlier of `deadline` and the end of the request's execution limit
/// (SPEC §R5), and whether it is the execution limit.
fn execution_bound(guard: &AttemptGuard, deadline: tokio::time::Instant) -> (tokio::time::Instant, bool) {
    match guard.executing() {
        Some(e) if e.deadline <= deadline => (e.deadline, true),
        _ => (deadline, false),
    }
}

/// The answer took longer than `executionMaxWaitMs`: the gateway's own
/// failure (a row, no engine report); the next connection may serve.
fn execution_timeout(guard: &mut AttemptGuard) -> Failure {
    let message = match guard.executing() {
        Some(e) => queue::execution_message(e.slot.queue(), e.limit),
        None => "the request exceeded its execution limit".to_owned(),
    };
    let code = FailureCode::ExecutionTimeout;
    guard.log_failure(Some(504), code.as_str(), &message);
    Failure { connection_id: guard.conn.id.clone(), status: Some(504), retry_after: None, message, code: Some(code) }
}

/// Remembers where the attempt left from (the log row, and the egress map
/// of egress-bucketed providers, SPEC §R7).
fn record_egress(state: &AppState, guard: &mut AttemptGuard, resp: &UpstreamResponse) {
    let Some(ip) = resp.egress_ip() else { return };
    if let Some(r) = guard.record() {
        r.egress_ip = Some(ip.to_string());
    }
    let provider = guard.conn.provider.id;
    if state.resilience.current().egress_ip_lock_providers.iter().any(|p| p == provider) {
        state.engine.record_egress(&guard.conn.id, ip);
    }
}

/// An upstream error status: its body (bounded in size and time) is
/// classified; the request fails over unless it is itself at fault.
async fn error_status(
    state: &AppState,
    call: &Call<'_>,
    mut guard: AttemptGuard,
    resp: UpstreamResponse,
    deadline: tokio::time::Instant,
) -> Tried {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let until = deadline.min(tokio::time::Instant::now() + ERROR_BODY_TIMEOUT);
    let Ok(raw) = tokio::time::timeout_at(until, resp.read_limited(MAX_ERROR_BODY)).await else {
        let e = TransportError::Timeout(ERROR_BODY_TIMEOUT);
        return Tried::Failed(transport_failure(&mut guard, &e, None));
    };
    let body = guard.conn.redact(&String::from_utf8_lossy(&raw));
    let failed = Failed { status: Some(status), headers: &headers, body: &body, stall: false };
    let outcome = guard.classify(&failed);
    queue::pace(state, guard.executing(), &guard.conn, call.caller.alias, status, &body);
    // A combo fails over from a refusal of the request's tools.
    let tools_refused = learn_tool_limit(state, call, status, &body);
    let fails_over = outcome.verdict.should_fallback || (tools_refused && call.combo);
    if !fails_over {
        guard.log_failure(Some(status), "client_error", &body);
        return Tried::Answer(answer::client_error(
            call,
            &guard.conn,
            status,
            &headers,
            body,
            outcome.retry_after_secs,
        ));
    }
    let message = answer::error_message(status, &body);
    guard.log_failure(outcome.status, outcome.verdict.reason.as_str(), &message);
    Tried::Failed(Failure {
        connection_id: guard.conn.id.clone(),
        status: outcome.status,
        retry_after: outcome.retry_after_secs,
        message: guard.conn.redact(&message),
        code: None,
    })
}

/// Remembers a refusal of the request's count of tools; whether it was one.
fn learn_tool_limit(state: &AppState, call: &Call<'_>, status: u16, body: &str) -> bool {
    let sent = call.caller.request.map_or(0, |r| r.tool_count());
    let Some(refused_from) = tool_limits::refusal(status, body, sent) else { return false };
    let (provider, model) = (call.target.provider.id, &call.target.model);
    tracing::warn!(provider, model = %model, tools = sent, refused_from, "the upstream refused the request's tool count; later requests with as many skip it in combos");
    state.routing.tool_limits.learn(provider, model, refused_from);
    true
}

/// A failure with no HTTP answer (connect, reset, timeout): the engine
/// classifies it like any other.
fn transport_failure(guard: &mut AttemptGuard, e: &TransportError, code: Option<FailureCode>) -> Failure {
    let message = e.to_string();
    guard.failed(
        &Failed { status: None, headers: &NO_HEADERS, body: &message, stall: false },
        Some(e.kind()),
        &message,
    );
    Failure { connection_id: guard.conn.id.clone(), status: None, retry_after: None, message, code }
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
    let snapshot = state.routing.connections.snapshot();
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

/// The log row of a request to its target, before any connection is
/// chosen (also the row of a request that gave up waiting for a cooldown).
fn log_row(caller: &Caller<'_>, target: &Target) -> AttemptRecord {
    AttemptRecord { provider: target.provider.id.to_owned(), model: target.model.clone(), ..caller_row(caller) }
}

/// The log row of `caller`'s request, before a target is known.
fn caller_row(caller: &Caller<'_>) -> AttemptRecord {
    crate::store::AttemptRecord::request(caller.request_id, caller.endpoint, caller.stream)
}

/// A plan nothing could even be tried on (breaker open, every connection
/// cooling or locked, no connection): the client's answer, logged as the
/// gateway's own refusal — under the combo's name, or the single target.
fn refused(state: &AppState, caller: &Caller<'_>, plan: &Plan, trail: Trail) -> DispatchError {
    let row = match (&plan.combo, plan.targets.first()) {
        (Some(combo), _) => AttemptRecord { model: combo.name.clone(), ..caller_row(caller) },
        (None, Some(planned)) => match &planned.target {
            Some(target) => log_row(caller, target),
            None => AttemptRecord { model: planned.spec.clone(), ..caller_row(caller) },
        },
        (None, None) => caller_row(caller),
    };
    let e = ProxyError::from(DispatchError::exhausted(plan, trail));
    super::errors::log_refused(state, row, &e);
    DispatchError::Request(e)
}

#[cfg(test)]
mod tests;
