//! What the dispatch loop's steps hand each other: who asks (`Caller`),
//! one request for one target (`Call`), a target's connections and
//! breaker admission (`TargetRun`), and what an attempt came to.

use app::types::Protocol;
use axum::{http::HeaderMap, response::Response};
use bytes::Bytes;
use std::{sync::Arc, time::Duration};

use super::{deadline::RequestDeadline, permits};
use crate::proxy::{request::ClientRequest, stream::relay::Resumes};
use crate::{
    auth::api_keys::KeyEntry,
    resilience::{
        breaker::BreakerConfig,
        engine::{Exclusion, Probe},
    },
    routing::{
        affinity::{PinKey, SessionId},
        leases::Lease,
        registry::LiveConnection,
        resolve::Target,
        view::Asker,
    },
    store::AttemptRecord,
};

pub(super) static NO_HEADERS: std::sync::LazyLock<HeaderMap> = std::sync::LazyLock::new(HeaderMap::new);

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
    pub resume: Option<&'a dyn Resumes>,
    /// This request continues a stream that failed on this connection:
    /// only other connections of a prefix-continuing provider serve it.
    pub continuing: Option<&'a str>,
    /// A `context-relay` handoff (`proxy::handoff`): every connection but
    /// the one named serves the request carrying the handoff's note.
    pub handoff: Option<(&'a str, &'a ClientRequest)>,
    /// The time budget its attempts share.
    pub deadline: RequestDeadline,
    /// How long the gateway itself held it, not yet on a log row.
    pub held: Held,
}

/// The time the gateway itself held a request — request queue,
/// concurrency slot, cooldown and combo waits — until the next log row of
/// the request (an attempt or the refusal) takes it as its `waitMs`: the
/// rows of one request add up to the whole time it was held.
#[derive(Debug, Default)]
pub struct Held(std::sync::atomic::AtomicU64);

impl Held {
    /// The request was held since `since`.
    pub fn since(&self, since: tokio::time::Instant) {
        self.ms(u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX));
    }

    /// The request was held `ms`.
    pub fn ms(&self, ms: u64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// What is not yet on a row, without taking it.
    pub fn pending(&self) -> i64 {
        i64::try_from(self.0.load(std::sync::atomic::Ordering::Relaxed)).unwrap_or(i64::MAX)
    }

    /// Takes it for a row.
    pub fn take(&self) -> i64 {
        i64::try_from(self.0.swap(0, std::sync::atomic::Ordering::Relaxed)).unwrap_or(i64::MAX)
    }
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
    /// Another combo target follows: an attempt that times out passes the
    /// request on to it rather than to this target's next connection.
    pub next_target: bool,
}

/// Why one attempt did not produce the answer.
pub struct Failure {
    pub(super) connection_id: String,
    /// `None` for transport errors.
    pub(super) status: Option<u16>,
    pub(super) retry_after: Option<u64>,
    pub(super) message: String,
    /// The client's error code when this failure is the last (a stream
    /// that never became ready).
    pub(super) code: Option<FailureCode>,
    /// The upstream took too long (a timeout, or an answer that stopped
    /// arriving).
    pub(super) timed_out: bool,
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
    /// `504 REQUEST_DEADLINE_EXCEEDED`: the request's time budget ran out
    /// (`deadline`).
    RequestDeadline,
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
            Self::RequestDeadline => (S::GATEWAY_TIMEOUT, "server_error", "REQUEST_DEADLINE_EXCEEDED"),
        }
    }
}

/// What one attempt came to.
pub(super) enum Tried {
    /// The answer for the client (served, or the request's own fault).
    Answer(Response),
    /// Try the next connection.
    Failed(Failure),
    /// The same connection may be tried once more, unmarked: the stream
    /// ended before its first useful event, or an OAuth token was
    /// refreshed after a 401.
    Again(Failure),
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
    /// The request's session, when a subscription account may serve it:
    /// live there while an attempt runs (OAuth session occupancy).
    pub session: Option<SessionId>,
}

/// Why no connection of a target served: the failed attempts, and the
/// connections skipped without an attempt.
pub struct Unserved {
    pub(super) failures: Vec<Failure>,
    pub excluded: Vec<Exclusion>,
    /// Connections were left untried: the request's deadline had passed.
    pub(super) out_of_time: bool,
}

impl Unserved {
    /// Whether an upstream was called (a refusal of the gateway's own is not a call).
    pub fn attempted(&self) -> bool {
        self.failures.iter().any(|f| !f.code.is_some_and(FailureCode::is_local))
    }
}

/// The log row of a request to its target, before any connection is
/// chosen (also the row of a request that gave up waiting for a cooldown).
pub(super) fn log_row(caller: &Caller<'_>, target: &Target, now: i64) -> AttemptRecord {
    AttemptRecord { provider: target.provider.id.to_owned(), model: target.model.clone(), ..caller_row(caller, now) }
}

/// The log row of `caller`'s request, before a target is known.
pub(super) fn caller_row(caller: &Caller<'_>, now: i64) -> AttemptRecord {
    let row = crate::store::AttemptRecord::request(caller.request_id, caller.endpoint, caller.stream, now);
    AttemptRecord { key_id: caller.key.map(|k| k.id.clone()), ..row }
}
