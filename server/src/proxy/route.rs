//! From a client's request to a response, whatever its protocol (the
//! endpoint's path names it): a combo name plans the combo's targets
//! (a fusion or pipeline combo runs its own calls, `multi`), anything
//! else resolves to one target; the dispatch loop serves the plan. Errors
//! are answered in the client's protocol's envelope.

use app::types::{
    Protocol,
    combo::{ComboTarget, Strategy},
};
use axum::{
    Extension,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::{HeaderMap, Uri},
    response::Response,
};
use std::sync::Arc;

use super::{
    context::RequestId,
    dispatch,
    errors::ProxyError,
    handoff,
    leases::{self, LeaseContext},
    multi,
    refusals::{self, Refused},
    request::ClientRequest,
    resume::Resumer,
    stream::keepalive,
};
use crate::{
    auth::api_keys::KeyEntry,
    routing::{
        plan::Plan,
        registry::Snapshot,
        resolve::{Target, resolve},
        view::Asker,
    },
    state::AppState,
    store::AttemptRecord,
};

/// Who is asking, on which endpoint.
pub struct Inbound<'a> {
    pub protocol: Protocol,
    pub endpoint: &'static str,
    pub request_id: &'a str,
    pub key: Option<&'a KeyEntry>,
    /// Its exclusive session lease context (SPEC §R2.3), if it sends one.
    pub lease: Option<LeaseContext>,
    /// How its stream is continued if it fails after commit (§R6).
    pub resume: Option<Resumer>,
    /// It continues a stream that failed on this connection.
    pub continuing: Option<&'a str>,
}

/// The protocol and endpoint name of a `/v1` path (also for answers given
/// before a handler runs, such as a refused key).
pub fn client_protocol(path: &str) -> (Protocol, &'static str) {
    if path.starts_with("/v1beta/models/") {
        (Protocol::Gemini, "/v1beta/models")
    } else if path.starts_with("/v1/messages") {
        (Protocol::Anthropic, "/v1/messages")
    } else if path.starts_with("/v1/responses") {
        (Protocol::Responses, "/v1/responses")
    } else {
        (Protocol::OpenaiChat, "/v1/chat/completions")
    }
}

/// The handler of every chat endpoint (`/v1/chat/completions`,
/// `/v1/messages`, `/v1/responses`, Gemini's): parses the body for the
/// endpoint's protocol and serves it; any error in the client's envelope.
/// A stream request still waiting for its first upstream event after one
/// heartbeat interval is committed early and kept alive (see
/// `stream::keepalive`).
///
/// Not an `async fn`: the request's head and raw body are read here and
/// dropped before the answer is awaited, so a request in flight does not
/// hold them (nor the client connection's read buffer they point into).
pub fn handle(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    key: Option<Extension<Arc<KeyEntry>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> impl Future<Output = Response> {
    let (protocol, endpoint) = client_protocol(uri.path());
    let parsed = parse(protocol, &uri, &headers, body).and_then(|r| Ok((r, leases::context(&headers)?)));
    async move {
        let (req, lease) = match parsed {
            Ok(parsed) => parsed,
            Err(e) => return e.into_response_as(protocol),
        };
        let heartbeat = state.config.sse_heartbeat_interval;
        let shutdown = state.clients.shutdown.wait();
        let stream = req.stream;
        // Boxed: the serving future is large, and every layer above this
        // handler would otherwise move it by value.
        let answer = Box::pin(async move {
            let req = Arc::new(req);
            // Mid-stream recovery: not for a leased session, which its lease binds to one connection.
            let resume = (stream && state.config.stream_recovery_midstream && lease.is_none())
                .then(|| Resumer::new(&state, &req, &request_id.0, endpoint, key.as_ref().map(|k| k.0.clone())));
            let key = key.as_ref().map(|k| k.0.as_ref());
            let inbound =
                Inbound { protocol, endpoint, request_id: &request_id.0, key, lease, resume, continuing: None };
            serve(&state, &req, &inbound).await.unwrap_or_else(|e| e.into_response_as(protocol))
        });
        if stream { keepalive::serve(answer, protocol, heartbeat, shutdown).await } else { answer.await }
    }
}

/// The client's request, read for its endpoint's protocol.
fn parse(
    protocol: Protocol,
    uri: &Uri,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<ClientRequest, ProxyError> {
    let body = body.map_err(|e| Refused::BodyUnreadable(e.status()).because(e.body_text()))?;
    match protocol {
        Protocol::Gemini => {
            let (model, stream) = gemini_target(uri.path())?;
            ClientRequest::parse_gemini(body, model, stream, headers)
        }
        _ => ClientRequest::parse(protocol, body, headers),
    }
}

/// The model and streaming mode a Gemini path names:
/// `/v1beta/models/{provider/model}:generateContent` or
/// `…:streamGenerateContent`.
fn gemini_target(path: &str) -> Result<(&str, bool), ProxyError> {
    let target = path.strip_prefix("/v1beta/models/").unwrap_or_default();
    match target.rsplit_once(':') {
        Some((model, "generateContent")) if !model.is_empty() => Ok((model, false)),
        Some((model, "streamGenerateContent")) if !model.is_empty() => Ok((model, true)),
        _ => {
            Err(Refused::UnknownMethod
                .because("expected /v1beta/models/{model}:generateContent or :streamGenerateContent"))
        }
    }
}

pub async fn serve(state: &Arc<AppState>, req: &ClientRequest, inbound: &Inbound<'_>) -> Result<Response, ProxyError> {
    let mut response = planned(state, req, inbound).await?;
    if req.background_dropped {
        tracing::warn!(request_id = inbound.request_id, "{}", super::request::BACKGROUND_WARNING);
        response
            .headers_mut()
            .insert("x-omniroute-warning", http::HeaderValue::from_static(super::request::BACKGROUND_WARNING));
    }
    Ok(response)
}

/// Serves `req` by what its model names: a combo's plan, or one target.
async fn planned(state: &Arc<AppState>, req: &ClientRequest, inbound: &Inbound<'_>) -> Result<Response, ProxyError> {
    let snapshot = state.routing.connections.snapshot();
    // An alias stands for a combo or a provider/model (SPEC §A).
    let aliased = state.routing.aliases.resolve(&req.model);
    let model = aliased.as_deref().unwrap_or(&req.model);
    let plan = match state.routing.combos.get(model) {
        // fusion and pipeline make several calls of their own.
        Some(combo) if combo.strategy.is_multi_call() => return multi::serve(state, req, inbound, combo).await,
        Some(combo) => {
            let settings = state.resilience.current();
            let asker = match inbound.lease {
                Some(_) => Asker::unfenced(inbound.key),
                None => Asker::new(inbound.key, None),
            };
            Plan::combo(combo, &state.view(&snapshot, &settings), &asker, req.session())
        }
        None => {
            Plan::single(resolved(model, &snapshot).map_err(|e| unknown_model(state, req, inbound, model, e))?, None)
        }
    };
    let alias = aliased.is_some().then_some(req.model.as_str());
    let Some(relay) = plan.combo.clone().filter(|c| c.strategy == Strategy::ContextRelay) else {
        return serve_plan(state, req, inbound, &snapshot, &plan, alias, None).await;
    };
    let prepared = handoff::prepared(state, &relay, req)?;
    let noted = prepared.as_ref().map(|(h, noted)| (h.from_connection.as_str(), noted));
    let response = serve_plan(state, req, inbound, &snapshot, &plan, alias, noted).await?;
    handoff::after_served(state, &relay, &plan, req, inbound, &response);
    Ok(response)
}

/// Serves `req` by one target of a combo run by `multi` (its model, or
/// the combo it names, through the whole dispatch loop).
pub async fn serve_member(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    member: &ComboTarget,
) -> Result<Response, ProxyError> {
    if member.combo_ref().is_some() {
        return Box::pin(serve(state, req, inbound)).await;
    }
    let snapshot = state.routing.connections.snapshot();
    let plan = Plan::single(resolved(&member.model, &snapshot)?, member.connection_id.clone());
    serve_plan(state, req, inbound, &snapshot, &plan, None, None).await
}

/// A model that names no target: the answer, logged as a refusal (a typo
/// in an agent's settings shows on the Logs page).
fn unknown_model(
    state: &AppState,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    model: &str,
    e: ProxyError,
) -> ProxyError {
    let row = AttemptRecord {
        model: model.to_owned(),
        ..crate::store::AttemptRecord::request(inbound.request_id, inbound.endpoint, req.stream, state.clock.now_ms())
    };
    super::errors::log_refused(state, row, &e);
    e
}

/// The one target a model names.
fn resolved(model: &str, snapshot: &Snapshot) -> Result<Target, ProxyError> {
    resolve(model, snapshot).map_err(|e| refusals::unresolved(&e))
}

/// Runs `plan` through the dispatch loop (`handoff`: a context-relay note
/// for every connection but the one named).
async fn serve_plan(
    state: &Arc<AppState>,
    req: &ClientRequest,
    inbound: &Inbound<'_>,
    snapshot: &Snapshot,
    plan: &Plan,
    alias: Option<&str>,
    handoff: Option<(&str, &ClientRequest)>,
) -> Result<Response, ProxyError> {
    let lease = match &inbound.lease {
        Some(ctx) => Some(leases::fenced(state, inbound.key, ctx, plan).await?),
        None => None,
    };
    let caller = dispatch::Caller {
        request_id: inbound.request_id,
        endpoint: inbound.endpoint,
        client: req.protocol,
        stream: req.stream,
        key: inbound.key,
        passthrough_headers: &req.passthrough_headers,
        recovered: Default::default(),
        alias,
        request: Some(req),
        lease: lease.as_ref(),
        resume: inbound.resume.as_ref().map(|r| r as &dyn super::stream::relay::Resumes),
        continuing: inbound.continuing,
        handoff,
        deadline: dispatch::RequestDeadline::new(state.config.request_deadline),
        held: Default::default(),
    };
    let served = dispatch::run(state, snapshot, plan, &caller, |protocol, model| req.body_for(protocol, model));
    let mut response = served.await?;
    if let Some(lease) = &lease {
        response.headers_mut().insert(leases::GENERATION_HEADER, http::HeaderValue::from(lease.generation));
    }
    Ok(response)
}
