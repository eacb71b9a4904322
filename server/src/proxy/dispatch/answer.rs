//! The answers the attempt loop gives: a served JSON body, an upstream
//! client error relayed, and the errors made from the attempt trail when
//! no connection served (every attempt failed, or none could be tried).

use axum::{
    body::Body,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use bytes::Bytes;

use super::{AttemptGuard, Call, Failure, StreamCode, Tried, transport_failure};
use crate::{
    db::now_ms,
    protocols::translate,
    proxy::{context::SELECTED_CONNECTION, errors::ProxyError, usage},
    resilience::{connection_health::TerminalStatus, engine::Exclusion},
    routing::registry::LiveConnection,
    state::AppState,
    upstream::executor::{TransportError, UpstreamResponse},
};

/// A non-stream success: the whole body (within `FETCH_TIMEOUT_MS`),
/// translated when the client speaks another protocol.
pub(super) async fn json(state: &AppState, call: &Call<'_>, mut guard: AttemptGuard, resp: UpstreamResponse) -> Tried {
    let upstream = guard.conn.provider.protocol;
    let client = call.caller.client;
    let body = match tokio::time::timeout(state.config.fetch_timeout, resp.bytes()).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => return Tried::Failed(transport_failure(&mut guard, &e, None)),
        Err(_) => {
            let e = TransportError::Timeout(state.config.fetch_timeout);
            return Tried::Failed(transport_failure(&mut guard, &e, None));
        }
    };
    let body = if upstream == client {
        if let (Some(u), Some(r)) = (usage::from_body(&body), guard.record()) {
            r.prompt_tokens = u.prompt_tokens;
            r.completion_tokens = u.completion_tokens;
            r.cached_tokens = u.cached();
        }
        body
    } else {
        match translate::response(upstream, &body, client, now_ms() / 1000) {
            Ok((translated, u)) => {
                if let Some(r) = guard.record() {
                    r.prompt_tokens = i64::try_from(u.input_tokens).ok();
                    r.completion_tokens = i64::try_from(u.output_tokens).ok();
                    r.cached_tokens = u.cached_tokens.and_then(|c| i64::try_from(c).ok());
                }
                translated
            }
            Err(e) => {
                let e = TransportError::Network(format!("the upstream answer could not be read: {e}"));
                return Tried::Failed(transport_failure(&mut guard, &e, None));
            }
        }
    };
    guard.served(200);
    Tried::Answer(json_response(StatusCode::OK, body, &guard.conn.id))
}

/// The request itself is at fault (the verdict says no other connection
/// would do better): the upstream's answer — as is when both sides speak
/// one protocol, else its message in the client's envelope — credential
/// redacted, with `Retry-After` when its status is retryable.
pub(super) fn client_error(
    call: &Call<'_>,
    conn: &LiveConnection,
    status: u16,
    headers: &HeaderMap,
    text: String,
    retry_after: Option<u64>,
) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    if conn.provider.protocol == call.caller.client {
        let mut resp = json_response(code, Bytes::from(text), &conn.id);
        if ProxyError::is_retryable(code) {
            let upstream = headers.get(header::RETRY_AFTER).cloned();
            let ours = HeaderValue::from(retry_after.unwrap_or(1).max(1));
            resp.headers_mut().insert(header::RETRY_AFTER, upstream.unwrap_or(ours));
        }
        return resp;
    }
    let message = translate::error_message(&text).unwrap_or(text);
    let mut e = ProxyError::new(code, "invalid_request_error", "upstream_error", message);
    e.retry_after = retry_after;
    e.connection_id = Some(conn.id.clone().into());
    e.into_response_as(call.caller.client)
}

pub(super) fn json_response(status: StatusCode, body: Bytes, connection_id: &str) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    insert_connection(response.headers_mut(), connection_id);
    response
}

pub(super) fn insert_connection(h: &mut HeaderMap, connection_id: &str) {
    if let Ok(v) = HeaderValue::from_str(connection_id) {
        h.insert(SELECTED_CONNECTION, v);
    }
}

/// The human message of an upstream error body (`error.message` when it
/// is JSON, else the text).
pub(super) fn error_message(status: u16, body: &str) -> String {
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

/// Every connection failed: answer with the last failure.
pub(super) fn all_failed(provider: &str, failures: Vec<Failure>) -> ProxyError {
    let n = failures.len();
    let Some(last) = failures.into_iter().next_back() else {
        return ProxyError::new(StatusCode::BAD_GATEWAY, "server_error", "upstream_error", "no attempt was made");
    };
    let message = format!("All {n} connection(s) of provider {provider} failed; last error: {}", last.message);
    let (status, kind, code) = match (last.code, last.status) {
        (Some(StreamCode::EarlyEof), _) => (StatusCode::BAD_GATEWAY, "stream_early_eof", "STREAM_EARLY_EOF"),
        (Some(StreamCode::ReadinessTimeout), _) => {
            (StatusCode::GATEWAY_TIMEOUT, "server_error", "STREAM_READINESS_TIMEOUT")
        }
        (None, Some(429)) => (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", "rate_limited"),
        (None, Some(401)) => (StatusCode::UNAUTHORIZED, "authentication_error", "upstream_auth_error"),
        (None, Some(403)) => (StatusCode::FORBIDDEN, "permission_error", "upstream_forbidden"),
        (None, Some(404)) => (StatusCode::NOT_FOUND, "invalid_request_error", "model_not_found"),
        (None, Some(s)) => {
            (StatusCode::from_u16(s).unwrap_or(StatusCode::BAD_GATEWAY), "server_error", "upstream_error")
        }
        (None, None) => (StatusCode::BAD_GATEWAY, "server_error", "upstream_unavailable"),
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
pub(super) fn all_excluded(provider: &str, model: &str, excluded: &[Exclusion]) -> ProxyError {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(status: Option<u16>, id: &str, code: Option<StreamCode>) -> Failure {
        Failure { connection_id: id.into(), status, retry_after: Some(7), message: "boom".into(), code }
    }

    #[test]
    fn all_failed_reports_the_last_failure() {
        let e = all_failed("openai", vec![failure(None, "a", None), failure(Some(429), "b", None)]);
        assert_eq!((e.status, e.code, e.retry_after), (StatusCode::TOO_MANY_REQUESTS, "rate_limited", Some(7)));
        assert!(e.message.starts_with("All 2 connection(s) of provider openai failed"));
        assert_eq!(all_failed("openai", vec![failure(None, "a", None)]).status, StatusCode::BAD_GATEWAY);
    }

    #[test]
    fn a_stream_that_never_became_ready_names_why() {
        let e = all_failed("openai", vec![failure(None, "a", Some(StreamCode::ReadinessTimeout))]);
        assert_eq!((e.status, e.code), (StatusCode::GATEWAY_TIMEOUT, "STREAM_READINESS_TIMEOUT"));
        let e = all_failed("openai", vec![failure(None, "a", Some(StreamCode::EarlyEof))]);
        assert_eq!((e.status, e.code, e.kind), (StatusCode::BAD_GATEWAY, "STREAM_EARLY_EOF", "stream_early_eof"));
    }
}
