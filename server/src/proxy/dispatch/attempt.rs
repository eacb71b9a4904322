//! The attempt guard: one upstream attempt from its first byte sent to its
//! last byte relayed. It owns what must be finished exactly once — the
//! breaker probe slot, the outcome report to the engine and the log row —
//! and finishes on success, on failure, when the client goes away and on
//! drop. A committed stream carries it in its body ([`Finish`]), so the
//! engine hears how the stream ended (complete → success; broken, error
//! event, stall → failure; client gone → nothing), not that its headers
//! arrived.

use http::HeaderMap;
use std::sync::Arc;
use tokio::time::Instant;

use super::{
    call::{Call, Failure, FailureCode, NO_HEADERS, TargetRun, log_row},
    queue,
    queue::Executing,
    slots::Slots,
};
use crate::{
    protocols::ir,
    proxy::stream::relay::{Finish, StreamEnd},
    resilience::{
        breaker::BreakerConfig,
        classify::Verdict,
        connection_health::SharedBy,
        engine::{AttemptFailure, Outcome, Probe},
        lockout::QuotaScope,
    },
    routing::{
        affinity::PinKey,
        registry::{InFlight, LiveConnection},
    },
    state::AppState,
    store::AttemptRecord,
    upstream::executor::TransportError,
};
use app::types::settings::ResilienceSettings;

/// Longest error text kept in a log row.
const MAX_LOGGED_ERROR: usize = 500;

/// A failure as the engine classifies it.
pub struct Failed<'a> {
    /// `None` for transport errors (connect, reset, timeout, stall).
    pub status: Option<u16>,
    pub headers: &'a HeaderMap,
    /// The upstream's error text (credential already redacted).
    pub body: &'a str,
    /// A content stall: recorded, cooled only when `streamStallCooldown` is on.
    pub stall: bool,
}

pub struct AttemptGuard {
    state: Arc<AppState>,
    pub conn: Arc<LiveConnection>,
    model: String,
    cfg: BreakerConfig,
    probe: Option<Probe>,
    started: Instant,
    /// `Some` until the attempt finished.
    record: Option<AttemptRecord>,
    /// Its concurrency permit and request-queue start (SPEC §R4, §R5),
    /// given back when it finishes (the queue start already when the
    /// answer is had: a stream's commit).
    slots: Slots,
    /// The request's session on this provider (SPEC §R2.2): pinned here
    /// when the attempt serves, unpinned on a 429 or a terminal error.
    pin: Option<PinKey>,
    /// Counts it among the connection's attempts in flight.
    in_flight: InFlight,
    /// The second try on the same connection (`Tried::Again`).
    again: bool,
}

impl AttemptGuard {
    pub fn start(
        state: &Arc<AppState>,
        call: &Call<'_>,
        t: &mut TargetRun<'_>,
        conn: &Arc<LiveConnection>,
        slots: Slots,
    ) -> Self {
        let record = AttemptRecord {
            connection_id: Some(conn.id.clone()),
            wait_ms: call.caller.held.take(),
            ..log_row(call.caller, call.target, state.clock.now_ms())
        };
        Self {
            state: state.clone(),
            conn: conn.clone(),
            model: call.target.model.clone(),
            cfg: t.cfg.clone(),
            probe: t.probe.take(),
            started: Instant::now(),
            record: Some(record),
            slots,
            pin: t.pin,
            in_flight: conn.begin_attempt(t.session),
            again: false,
        }
    }

    /// Marks it the second try on its connection: it earns no third.
    pub fn again(mut self) -> Self {
        self.again = true;
        self
    }

    pub fn is_again(&self) -> bool {
        self.again
    }

    /// Its request-queue start, while the request executes.
    pub fn executing(&self) -> Option<&Executing> {
        self.slots.queue.as_ref()
    }

    /// The answer is had (a stream committed): the request queue may start
    /// the next request; the concurrency permit stays to the last byte.
    pub fn executed(&mut self) {
        self.slots.queue = None;
    }

    fn release(&mut self) {
        self.slots = Slots::default();
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// The log row, while the attempt runs.
    pub fn record(&mut self) -> Option<&mut AttemptRecord> {
        self.record.as_mut()
    }

    /// The answer's token counts, for the log row.
    pub fn count(&mut self, usage: Option<ir::Usage>) {
        if let (Some(u), Some(r)) = (usage, self.record.as_mut()) {
            r.prompt_tokens = i64::try_from(u.input_tokens).ok();
            r.completion_tokens = i64::try_from(u.output_tokens).ok();
            r.cached_tokens = u.cached_tokens.and_then(|c| i64::try_from(c).ok());
        }
    }

    /// The attempt served the client: the engine counts a success.
    pub fn served(&mut self, status: u16) {
        self.release();
        let Some(mut r) = self.record.take() else { return };
        let (provider, conn) = (self.conn.provider.id, &self.conn.id);
        self.state.engine.on_success(provider, conn, &self.model, &self.cfg, self.probe.take());
        if let Some(pin) = self.pin {
            self.state.routing.affinity.served(pin, conn, self.state.resilience.current().session_affinity_ttl_ms);
        }
        r.status = i32::from(status);
        r.latency_ms = self.elapsed_ms();
        self.in_flight.served(u64::try_from(r.latency_ms).unwrap_or(0));
        tracing::debug!(request_id = %r.request_id, provider, connection_id = %conn, model = %r.model, status, latency_ms = r.latency_ms, "request served");
        self.state.store.logs.record(r);
    }

    /// The attempt failed: the engine restates, classifies and applies the
    /// failure; the log row names the reason (`kind`, else the verdict's).
    pub fn failed(&mut self, f: &Failed<'_>, kind: Option<&'static str>, message: &str) -> Outcome {
        let outcome = self.classify(f);
        self.log_failure(outcome.status, kind.unwrap_or(outcome.verdict.reason.as_str()), message);
        outcome
    }

    /// The engine's verdict on a failure, applied (cooldown, lockout,
    /// breaker, egress siblings); the log row is still to be written.
    pub fn classify(&mut self, f: &Failed<'_>) -> Outcome {
        let settings = self.state.resilience.current();
        // What the engine keeps (`lastError`) never holds the credential.
        let body = self.conn.redact(f.body);
        let failure = AttemptFailure {
            provider: self.conn.provider.id,
            connection_id: &self.conn.id,
            model: &self.model,
            oauth: self.conn.oauth,
            disable_cooling: self.conn.disable_cooling,
            stall: f.stall,
            status: f.status,
            headers: f.headers,
            body: &body,
            egress_ip: self.record.as_ref().and_then(|r| r.egress_ip.as_deref()?.parse().ok()),
            quota_scope: QuotaScope::of(self.conn.provider.id, self.conn.provider.has_per_model_quota),
        };
        let outcome = self.state.engine.on_failure(&failure, &settings, &self.cfg, self.probe.as_mut());
        if let Some(pin) = &self.pin
            && (outcome.status == Some(429) || outcome.verdict.terminal.is_some())
        {
            self.state.routing.affinity.evict(pin, &self.conn.id);
        }
        if let Some(ip) = self.state.engine.egress_lock_ip(&failure, &outcome, &settings) {
            lock_egress_siblings(&self.state, &settings, &self.conn, ip, &outcome.verdict);
        }
        if let Some(status) = outcome.status.filter(|_| outcome.verdict.cools_provider()) {
            cool_provider_siblings(&self.state, &self.conn, status, &outcome.verdict);
        }
        outcome
    }

    /// Writes the failed attempt's row (once). Alone, without
    /// [`Self::classify`], the engine hears nothing of it (an early end of
    /// stream retried on the same connection).
    pub fn log_failure(&mut self, status: Option<u16>, kind: &'static str, message: &str) {
        self.release();
        let Some(mut r) = self.record.take() else { return };
        r.status = status.map_or(r.status, i32::from);
        r.latency_ms = self.elapsed_ms();
        r.error_kind = Some(kind.to_owned());
        r.error_message = Some(truncate(&self.conn.redact(message), MAX_LOGGED_ERROR));
        tracing::warn!(request_id = %r.request_id, provider = %r.provider, connection_id = %self.conn.id, model = %r.model, status = r.status, reason = kind, "upstream attempt failed");
        self.state.store.logs.record(r);
    }

    fn elapsed_ms(&self) -> i64 {
        i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX)
    }
}

impl Finish for AttemptGuard {
    fn relayed(&mut self) {
        let elapsed = self.elapsed_ms();
        if let Some(r) = self.record.as_mut() {
            r.ttfb_ms.get_or_insert(elapsed);
        }
    }

    fn redact(&self, text: &str) -> String {
        self.conn.redact(text)
    }

    fn finish(&mut self, end: StreamEnd, usage: Option<ir::Usage>) {
        self.count(usage);
        let message = end.message();
        match end {
            StreamEnd::Complete => self.served(200),
            StreamEnd::ClientGone | StreamEnd::Shutdown => self.ended_without_verdict(&end),
            StreamEnd::Broken(_)
            | StreamEnd::UpstreamError(_)
            | StreamEnd::Truncated
            | StreamEnd::Malformed(_)
            | StreamEnd::Stalled(_)
            | StreamEnd::TooSlow => {
                // The client saw a 200 and then the error event.
                if let Some(r) = self.record.as_mut() {
                    r.status = 200;
                }
                // A slow stream is treated as a stall: recorded, not cooled by default.
                let stall = matches!(end, StreamEnd::Stalled(_) | StreamEnd::TooSlow);
                let failed = Failed { status: None, headers: &HeaderMap::new(), body: &message, stall };
                self.failed(&failed, end.kind(), &message);
            }
        }
    }
}

impl AttemptGuard {
    /// The client went away, or the gateway is shutting down: counts for
    /// nothing (the probe slot is given back); the row keeps the status
    /// the client saw.
    fn ended_without_verdict(&mut self, end: &StreamEnd) {
        self.release();
        let Some(mut r) = self.record.take() else { return };
        r.latency_ms = self.elapsed_ms();
        r.error_kind = end.kind().map(str::to_owned);
        r.error_message = Some(end.message());
        self.state.store.logs.record(r);
    }
}

impl Drop for AttemptGuard {
    /// Dropped unfinished: the client went away, or — after the grace — the
    /// shutdown cut a request still waiting for its answer.
    fn drop(&mut self) {
        let end = if self.state.clients.shutdown.is_over() { StreamEnd::Shutdown } else { StreamEnd::ClientGone };
        self.ended_without_verdict(&end);
    }
}

/// `s` cut to at most `max` characters, with `…` when it was longer.
pub fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The answer took longer than `executionMaxWaitMs`: the gateway's own
/// failure; the next connection may serve.
pub(super) fn execution_timeout(guard: &mut AttemptGuard) -> Failure {
    let message = match guard.executing() {
        Some(e) => queue::execution_message(e.slot.queue(), e.limit),
        None => "the request exceeded its execution limit".to_owned(),
    };
    local_failure(guard, FailureCode::ExecutionTimeout, message)
}

/// A failure of the gateway's own on a started attempt (one of the
/// request's limits cut it short): a row with the code as its reason, no
/// engine report.
pub(super) fn local_failure(guard: &mut AttemptGuard, code: FailureCode, message: String) -> Failure {
    let status = code.answer().0.as_u16();
    guard.log_failure(Some(status), code.as_str(), &message);
    let connection_id = guard.conn.id.clone();
    Failure { connection_id, status: Some(status), retry_after: None, message, code: Some(code), timed_out: false }
}

/// A failure with no HTTP answer (connect, reset, timeout): the engine
/// classifies it like any other.
pub(super) fn transport_failure(guard: &mut AttemptGuard, e: &TransportError, code: Option<FailureCode>) -> Failure {
    let message = e.to_string();
    guard.failed(
        &Failed { status: None, headers: &NO_HEADERS, body: &message, stall: false },
        Some(e.kind()),
        &message,
    );
    let timed_out = matches!(e, TransportError::Timeout(_) | TransportError::Stalled(_));
    Failure { connection_id: guard.conn.id.clone(), status: None, retry_after: None, message, code, timed_out }
}

/// The egress-bucketed lock (SPEC §R7): a quota or rate-limit 429 on
/// `failing` also cools the allow-listed connections that left through the
/// same IP, except those that opt out of cooling.
pub(super) fn lock_egress_siblings(
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

/// An operator rule with `scope: "provider"` matched (SPEC §R7): every
/// other connection of the provider that may cool cools as long as
/// `failing`.
fn cool_provider_siblings(state: &AppState, failing: &LiveConnection, status: u16, verdict: &Verdict) {
    let snapshot = state.routing.connections.snapshot();
    let provider = failing.provider.id;
    let pool = snapshot.candidates(provider).iter().filter(|c| !c.disable_cooling).map(|c| c.id.as_str());
    let cooled = state.engine.cool_alongside(&failing.id, status, verdict, SharedBy::ProviderRule, pool);
    if !cooled.is_empty() {
        tracing::warn!(connection_id = %failing.id, provider, siblings = ?cooled, reason = verdict.reason.as_str(), "a provider-wide rule matched; every connection of the provider cools");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_counts_chars() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hi", 5), "hi");
    }
}
