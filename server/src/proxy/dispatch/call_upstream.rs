//! One attempt on one connection: the upstream call within its budgets,
//! and what its answer means — an answer for the client, or a failure the
//! engine classifies (cooldown, lockout, breaker, tool limit, egress
//! siblings) before the next connection is tried.

use std::{borrow::Cow, sync::Arc, time::Duration};

use super::{
    answer,
    attempt::{AttemptGuard, Failed, transport_failure},
    call::{Call, Failure, FailureCode, NO_HEADERS, Tried},
    limit::Limit,
    oauth, queue, streaming, usage_wall,
};
use crate::{
    protocols::{code_assist, translate},
    resilience::tool_limits,
    state::AppState,
    upstream::{
        catalog::Wire,
        executor::{TransportError, UpstreamResponse},
    },
};

/// Largest upstream error body read (the rest is ignored).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Longest wait for an error body once its status arrived: an error body
/// that takes longer comes from a stuck upstream.
const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// One attempt on one connection, to its answer or its failure.
pub(super) async fn attempt(state: &Arc<AppState>, call: &Call<'_>, mut guard: AttemptGuard) -> Tried {
    if guard.conn.oauth
        && let Err(failure) = oauth::ready(state, &mut guard).await
    {
        return Tried::Failed(failure);
    }
    let conn = guard.conn.clone();
    let upstream = conn.provider.protocol;
    let stream = call.caller.stream;
    // A stream's readiness budget covers the wait for its headers too.
    let own = if stream { state.config.stream_readiness_timeout } else { state.config.fetch_timeout };
    let own = call.timeout.map_or(own, |t| t.min(own));
    let limit = Limit::of(&guard, &call.caller.deadline, guard.started(), own);
    let extra = if upstream == call.caller.client { call.caller.passthrough_headers } else { &*NO_HEADERS };
    let wire = conn.provider.wire;
    let path = wire
        .chat_path(stream || wire.streams_only())
        .map_or_else(|| translate::upstream_path(upstream, &call.target.model, stream), Cow::Borrowed);
    let body = match &call.handoff {
        Some((from, noted)) if conn.id != *from => noted.clone(),
        _ => call.body.clone(),
    };
    let body = match wire {
        Wire::CodeAssist => code_assist::envelope(&body, &call.target.model, conn.account_id.as_deref()),
        _ => body,
    };
    let mut wall = usage_wall::Wall::of(state, &conn);
    let resp = loop {
        let headers = wall.as_ref().map_or(Cow::Borrowed(extra), |w| w.headers(extra));
        let post = state.upstream.post(&conn.endpoint, &path, body.clone(), stream || wire.streams_only(), &headers);
        let Ok(sent) = tokio::time::timeout_at(limit.at, post).await else {
            return Tried::Failed(limit.expired(&mut guard, stream.then_some(FailureCode::ReadinessTimeout)));
        };
        let resp = match sent {
            Ok(resp) => resp,
            Err(e) => return Tried::Failed(transport_failure(&mut guard, &e, None)),
        };
        let Some(wall) = wall.as_mut() else { break resp };
        match wall.after(state, &conn, resp, limit.at).await {
            usage_wall::Next::Answer(resp) => break resp,
            usage_wall::Next::Again => {}
        }
    };
    if let (Some(w), Some(r)) = (&wall, guard.record()) {
        r.wait_ms += i64::try_from(w.waited().as_millis()).unwrap_or(i64::MAX);
    }
    record_egress(state, &mut guard, &resp);
    queue::follow(guard.executing(), resp.headers());
    state.routing.quotas.observe(&conn.id, &call.target.model, resp.headers(), state.engine.now());
    if !resp.status().is_success() {
        return error_status(state, call, guard, resp, limit).await;
    }
    if stream {
        streaming::open(state, call, guard, resp, limit).await
    } else {
        answer::json(state, call, guard, resp).await
    }
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
    limit: Limit,
) -> Tried {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let own = tokio::time::Instant::now() + ERROR_BODY_TIMEOUT;
    let Ok(raw) = tokio::time::timeout_at(own.min(limit.at), resp.read_limited(MAX_ERROR_BODY)).await else {
        if limit.at < own {
            return Tried::Failed(limit.expired(&mut guard, None));
        }
        let e = TransportError::Timeout(ERROR_BODY_TIMEOUT);
        return Tried::Failed(transport_failure(&mut guard, &e, None));
    };
    let body = guard.conn.redact(&String::from_utf8_lossy(&raw));
    if status == 401 && !guard.is_again() && oauth::refreshed(state, &guard.conn).await {
        let message = answer::error_message(status, &body);
        guard.log_failure(Some(status), "auth_refreshed", &message);
        let failure = Failure {
            connection_id: guard.conn.id.clone(),
            status: Some(status),
            retry_after: None,
            message,
            code: None,
            timed_out: false,
        };
        return Tried::Again(failure);
    }
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
        timed_out: false,
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
