//! A stream attempt up to its commit point (SPEC §R6): the upstream
//! answered 2xx; the readiness gate reads until its first useful event.
//! Only then does the client get a response — the relay, carrying the
//! attempt guard to the stream's last byte. A stream that times out,
//! breaks or reports an error before that fails like any attempt; one that
//! ends early is retried once on the same connection without marking it.
//! With stream recovery on, the commit point is the end of the hold-back
//! window instead (see `readiness::hold_back`).

use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::Response,
};
use std::sync::atomic::Ordering;

use super::{
    answer::insert_connection,
    attempt::{AttemptGuard, Failed},
    call::{Call, Failure, FailureCode, NO_HEADERS, Tried},
    limit::{EndedBy, Limit},
};
use crate::{
    protocols::{code_assist, translate::StreamTranslator},
    proxy::stream::{
        progress::Watch,
        readiness::{self, NotReady},
        relay::{Budgets, Committed, Relay, StreamEnd},
    },
    state::AppState,
    upstream::{catalog::Wire, executor::UpstreamResponse},
};

pub(super) async fn open(
    state: &AppState,
    call: &Call<'_>,
    mut guard: AttemptGuard,
    resp: UpstreamResponse,
    limit: Limit,
) -> Tried {
    let conn = guard.conn.clone();
    let upstream = conn.provider.protocol;
    let client = call.caller.client;
    let content_type = (upstream == client)
        .then(|| resp.headers().get(header::CONTENT_TYPE).and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()))
        .flatten();
    let mut body = match conn.provider.wire {
        Wire::CodeAssist => code_assist::unwrap_stream(resp.into_stream()),
        _ => resp.into_stream(),
    };
    let mut watch = Watch::new(upstream);
    let mut ready = match readiness::first_event(&mut body, &mut watch, limit.at).await {
        Ok(ready) => ready,
        Err(NotReady::Timeout) if !matches!(limit.by, EndedBy::Own(_)) => {
            return Tried::Failed(limit.expired(&mut guard, None));
        }
        Err(why) => return not_ready(&mut guard, why, state),
    };
    let recovered = &call.caller.recovered;
    if state.config.stream_recovery && recovered.load(Ordering::Relaxed) < readiness::MAX_EARLY_RECOVERIES {
        ready = match readiness::hold_back(&mut body, &mut watch, ready).await {
            Ok(ready) => ready,
            Err(why) => {
                recovered.fetch_add(1, Ordering::Relaxed);
                return not_ready(&mut guard, why, state);
            }
        };
    }
    // Committed: the request has its answer; its queue may start the next.
    guard.executed();
    // A stream that may be continued elsewhere is followed event by event,
    // even in the client's own protocol.
    let resume = call.caller.resume.map(|r| r.after(&conn.id));
    let translator = (upstream != client || resume.is_some()).then(|| {
        let t = StreamTranslator::new(upstream, client, state.clock.now_ms() / 1000);
        if resume.is_some() { t.with_transcript() } else { t }
    });
    let committed = Committed { held: ready.held, ended: ready.ended, watch, whole: ready.whole };
    let watchdog = state.resilience.current().stream_recovery.throughput_watchdog.clone();
    let budgets = Budgets {
        stall: state.config.stream_idle_timeout,
        heartbeat: state.config.sse_heartbeat_interval,
        throughput: watchdog.enabled.then_some(watchdog),
    };
    let mut relay =
        Relay::new(body, committed, budgets, client, translator, guard).until(state.clients.shutdown.wait());
    if let Some(resume) = resume {
        relay = relay.resumable(resume);
    }
    let mut response = Response::new(Body::from_stream(relay));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, content_type.unwrap_or(HeaderValue::from_static("text/event-stream")));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    insert_connection(h, &conn.id);
    Tried::Answer(response)
}

/// The stream failed before its commit point.
fn not_ready(guard: &mut AttemptGuard, why: NotReady, state: &AppState) -> Tried {
    let failure = |guard: &AttemptGuard, message: String, code| Failure {
        connection_id: guard.conn.id.clone(),
        status: None,
        retry_after: None,
        message,
        code,
        timed_out: code == Some(FailureCode::ReadinessTimeout),
    };
    let (message, kind, code) = match why {
        NotReady::EarlyEof => {
            let message = "the upstream stream ended before its first event".to_owned();
            guard.log_failure(Some(200), "stream_early_eof", &message);
            return Tried::Again(failure(guard, message, Some(FailureCode::EarlyEof)));
        }
        NotReady::Timeout => {
            let ms = state.config.stream_readiness_timeout.as_millis();
            let message = format!("Stream produced no non-ping SSE event within {ms}ms");
            (message, "timeout", Some(FailureCode::ReadinessTimeout))
        }
        NotReady::Broken(e) => (format!("the upstream stream was interrupted: {e}"), "network_error", None),
        NotReady::Failed(e) => (format!("the upstream stream failed: {e}"), "stream_error", None),
        NotReady::Truncated => (StreamEnd::Truncated.message(), "stream_truncated", None),
        NotReady::Malformed(e) => (StreamEnd::Malformed(e).message(), "stream_malformed", None),
    };
    guard.failed(&Failed { status: None, headers: &NO_HEADERS, body: &message, stall: false }, Some(kind), &message);
    Tried::Failed(failure(guard, message, code))
}
