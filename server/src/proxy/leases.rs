//! `POST /api/v1/session-leases` (SPEC §R2.3, reference §2.12): an agent
//! acquires, renews and releases an exclusive session lease with its API
//! key (scope `lease:exclusive` and allowed connections) and its owner
//! token in `X-OmniRoute-Lease-Owner`. Also the lease context of inference
//! requests: the owner and `X-OmniRoute-Lease-Generation`, checked at the
//! fence before any upstream call. The owner token is never logged,
//! stored (only its hash) or answered; the answer never names the
//! connection or its credential.

use app::types::Scope;
use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{
    errors::ProxyError,
    refusals::{self, Refused},
};
use crate::{
    auth::{api_keys::KeyEntry, identity::presented_key},
    routing::{
        leases::{Lease, Owner, Stale},
        plan::Plan,
    },
    services::leases::{self as service, DEFAULT_TTL_MS, LeaseError, MAX_TTL_MS, MIN_TTL_MS},
    state::AppState,
};

pub const OWNER_HEADER: &str = "x-omniroute-lease-owner";
pub const GENERATION_HEADER: &str = "x-omniroute-lease-generation";

fn required(field: &str, message: &str) -> ProxyError {
    Refused::LeaseContextRequired.of_field(field, message)
}

fn invalid(field: &str, message: impl Into<String>) -> ProxyError {
    Refused::LeaseContextInvalid.of_field(field, message)
}

pub fn stale(why: Stale) -> ProxyError {
    Refused::LeaseFenceStale.because(why.message())
}

/// The owner a header names: missing → `LEASE_CONTEXT_REQUIRED`,
/// malformed → `LEASE_CONTEXT_INVALID`.
fn owner_of(headers: &HeaderMap) -> Result<Owner, ProxyError> {
    let raw = headers.get(OWNER_HEADER).ok_or_else(|| {
        required("X-OmniRoute-Lease-Owner", "send X-OmniRoute-Lease-Owner: vlo_ followed by 43 base64url characters")
    })?;
    raw.to_str()
        .ok()
        .and_then(Owner::parse)
        .ok_or_else(|| invalid("X-OmniRoute-Lease-Owner", "must be vlo_ followed by 43 base64url characters"))
}

/// A request's lease context: both headers, or neither.
pub struct LeaseContext {
    pub owner: Owner,
    pub generation: u64,
}

/// The lease context of an inference request, if it sends one.
pub fn context(headers: &HeaderMap) -> Result<Option<LeaseContext>, ProxyError> {
    let generation = headers.get(GENERATION_HEADER);
    if headers.get(OWNER_HEADER).is_none() && generation.is_none() {
        return Ok(None);
    }
    let owner = owner_of(headers)?;
    let generation = generation
        .ok_or_else(|| required("X-OmniRoute-Lease-Generation", "a leased request sends its lease generation"))?;
    let generation = generation
        .to_str()
        .ok()
        .and_then(|g| g.trim().parse::<u64>().ok())
        .filter(|g| *g > 0)
        .ok_or_else(|| invalid("X-OmniRoute-Lease-Generation", "must be a positive integer"))?;
    Ok(Some(LeaseContext { owner, generation }))
}

/// The fence of a leased inference request, before any upstream call: the
/// lease its context names, if current and taken through this key — moved
/// to an eligible connection when its own is no longer (a single model's
/// lockouts count; a combo's targets are checked as they are tried).
pub async fn fenced(
    state: &AppState,
    key: Option<&KeyEntry>,
    ctx: &LeaseContext,
    plan: &Plan,
) -> Result<Lease, ProxyError> {
    let key = key.ok_or_else(|| stale(Stale::ForeignKey))?;
    let lease = service::fence(state, &ctx.owner, ctx.generation, &key.id).await.map_err(|e| match e {
        LeaseError::Stale(why) => stale(why),
        _ => store_unavailable(key),
    })?;
    let model = match (&plan.combo, plan.targets.first().and_then(|t| t.target.as_ref())) {
        (None, Some(target)) if target.provider.id == lease.provider => target.model.clone(),
        _ => String::new(),
    };
    service::follow_health(state, key, lease, &model).await.map_err(|e| match e {
        LeaseError::Stale(why) => stale(why),
        _ => store_unavailable(key),
    })
}

fn store_unavailable(key: &KeyEntry) -> ProxyError {
    tracing::error!(key_id = %key.id, "storing a session lease failed");
    Refused::LeaseStoreUnavailable.because("the lease could not be stored; retry")
}

/// `OPTIONS`: which headers a lease request may send.
pub async fn options() -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    let h = r.headers_mut();
    h.insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("POST, OPTIONS"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, x-omniroute-lease-owner, x-omniroute-lease-generation"),
    );
    r
}

pub async fn handle(State(state): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    match lifecycle(&state, &headers, &body).await {
        Ok(answer) => answer,
        Err(e) => e.into_response(),
    }
}

/// One lifecycle call, checked in the order of the response matrix:
/// authentication, scope, content type, owner, body.
async fn lifecycle(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<Response, ProxyError> {
    let key = presented_key(headers).and_then(|k| state.auth.keys.lookup(k)).ok_or_else(Refused::invalid_key)?;
    if !key.has(Scope::LeaseExclusive) || key.allowed_connections.as_ref().is_none_or(Vec::is_empty) {
        return Err(Refused::InsufficientScope
            .because("this API key lacks the lease:exclusive scope or allowed connections for its leases"));
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        let message = "send the lease request as Content-Type: application/json";
        return Err(Refused::LeaseContentTypeRequired.because(message));
    }
    let owner = owner_of(headers)?;
    let action = Action::read(body)?;
    let done = match action {
        Action::Acquire { model, ttl_ms } => service::acquire(state, &key, owner, &model, ttl_ms).await.map(Some),
        Action::Renew { generation, ttl_ms } => service::renew(state, &key, owner, generation, ttl_ms).await.map(Some),
        Action::Release { generation, reason } => {
            service::release(state, &key, owner, generation, reason.as_deref()).await.map(|()| None)
        }
    };
    match done {
        Ok(Some(lease)) => Ok(active(&lease, state.routing.leases.now())),
        Ok(None) => Ok(axum::Json(json!({"state": "RELEASED"})).into_response()),
        Err(e) => answer_error(e, &key),
    }
}

fn active(lease: &Lease, now: i64) -> Response {
    let body = json!({
        "state": "ACTIVE",
        "generation": lease.generation,
        "expiresAt": lease.expires_at,
        "ttlMs": (lease.expires_at - now).max(0),
    });
    let mut r = axum::Json(body).into_response();
    r.headers_mut().insert(GENERATION_HEADER, HeaderValue::from(lease.generation));
    r
}

fn answer_error(e: LeaseError, key: &KeyEntry) -> Result<Response, ProxyError> {
    match e {
        LeaseError::Stale(why) => Err(stale(why)),
        LeaseError::Model(e) => Err(refusals::unresolved(&e)),
        LeaseError::NoCredentials { provider } => Err(Refused::LeaseNoCredentials
            .because(format!("No active credentials for provider: {provider} among this key's allowed connections"))),
        LeaseError::BreakerOpen { provider } => {
            Err(Refused::LeaseBreakerOpen.because(format!("Provider {provider} circuit breaker is open")))
        }
        LeaseError::AllCooling { provider } => Err(Refused::LeaseAllCooling
            .because(format!("Every allowed connection of {provider} is cooling down or unavailable"))),
        LeaseError::Capacity { retry_after_secs } => {
            let (status, _, code) = Refused::LeaseCapacity.answer();
            let body = json!({
                "state": "WAITING_FOR_CAPACITY",
                "reason": "NO_FREE_ELIGIBLE_CONNECTION",
                "freeCount": 0,
                "retryAfter": retry_after_secs,
                "error": {
                    "code": code,
                    "message": "every eligible connection is held by another session's lease",
                },
            });
            let mut r = (status, axum::Json(body)).into_response();
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            Ok(r)
        }
        LeaseError::Db(e) => {
            tracing::error!(error = %e, "a session lease change failed in the database");
            Err(store_unavailable(key))
        }
    }
}

/// A lifecycle body, checked field by field.
enum Action {
    Acquire { model: String, ttl_ms: u64 },
    Renew { generation: u64, ttl_ms: u64 },
    Release { generation: u64, reason: Option<String> },
}

impl Action {
    fn read(body: &[u8]) -> Result<Self, ProxyError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| invalid("body", format!("not JSON: {e}")))?;
        let Value::Object(doc) = v else { return Err(invalid("body", "must be a JSON object")) };
        let generation = || match doc.get("generation") {
            Some(g) => g.as_u64().filter(|g| *g > 0).ok_or_else(|| invalid("generation", "must be a positive integer")),
            None => Err(invalid("generation", "is required")),
        };
        let ttl = || match doc.get("ttlMs") {
            None => Ok(DEFAULT_TTL_MS),
            Some(t) => t
                .as_u64()
                .filter(|t| (MIN_TTL_MS..=MAX_TTL_MS).contains(t))
                .ok_or_else(|| invalid("ttlMs", format!("must be an integer from {MIN_TTL_MS} to {MAX_TTL_MS}"))),
        };
        match doc.get("action").and_then(Value::as_str) {
            Some("acquire") => {
                let model = doc.get("model").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty());
                let model = model
                    .ok_or_else(|| invalid("model", "is required: the provider/model to lease a connection for"))?;
                Ok(Self::Acquire { model: model.to_owned(), ttl_ms: ttl()? })
            }
            Some("renew") => Ok(Self::Renew { generation: generation()?, ttl_ms: ttl()? }),
            Some("release") => {
                let reason = match doc.get("reason") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(r)) if r.chars().count() <= 200 => Some(r.clone()),
                    Some(_) => return Err(invalid("reason", "must be a string of at most 200 characters")),
                };
                Ok(Self::Release { generation: generation()?, reason })
            }
            _ => Err(invalid("action", "must be acquire, renew or release")),
        }
    }
}
