//! The emergency fallback (SPEC §R8; `OMNIROUTE_EMERGENCY_FALLBACK`,
//! Settings → Feature flags · Emergency fallback): one `provider/model`
//! tried when no target of a request could serve it — every one excluded
//! or failed, and no cooldown wait left — before the request fails. It
//! passes the same gates as any target (a broken fallback is not called),
//! is tried once, and says so in `x-omniroute-emergency-fallback`. When it
//! fails too, the request's own error is the answer: it explains the
//! targets the client asked for.

use axum::response::Response;
use bytes::Bytes;
use http::HeaderValue;
use std::sync::Arc;

use app::types::{Protocol, settings::ResilienceSettings};

use super::{
    call::Caller,
    error::DispatchError,
    target::{To, serve_target},
};
use crate::routing::plan::Plan;
use crate::{
    proxy::errors::ProxyError,
    routing::{registry::Snapshot, resolve},
    state::AppState,
};

/// Names the emergency target on the answer it served.
pub const HEADER: &str = "x-omniroute-emergency-fallback";

/// The emergency target's answer, when one is set, not already part of
/// `plan`, and it serves.
pub async fn fallback(
    state: &Arc<AppState>,
    snapshot: &Snapshot,
    plan: &Plan,
    caller: &Caller<'_>,
    settings: &ResilienceSettings,
    body_for: &impl Fn(Protocol, &str) -> Result<Bytes, ProxyError>,
) -> Result<Option<Response>, DispatchError> {
    let spec = settings.emergency_fallback.as_str();
    if spec.is_empty() || plan.targets.iter().any(|p| p.spec == spec) {
        return Ok(None);
    }
    let Ok(target) = resolve::resolve(spec, snapshot) else {
        tracing::warn!(target = spec, "the emergency fallback names no known provider; it is not tried");
        return Ok(None);
    };
    tracing::warn!(
        request_id = caller.request_id,
        target = spec,
        "no target could serve the request; trying the emergency fallback"
    );
    match serve_target(
        state,
        snapshot,
        To { target: &target, pinned: None, combo: false, timeout: None, next_target: false },
        caller,
        settings,
        body_for,
    )
    .await?
    {
        Ok(mut response) => {
            if let Ok(value) = HeaderValue::from_str(spec) {
                response.headers_mut().insert(HEADER, value);
            }
            Ok(Some(response))
        }
        Err(_) => {
            tracing::warn!(
                request_id = caller.request_id,
                target = spec,
                "the emergency fallback could not serve either"
            );
            Ok(None)
        }
    }
}
