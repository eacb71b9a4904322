//! `GET`/`PATCH /api/resilience` (SPEC §S) and `GET /api/resilience/env`.
//! The body of GET is exactly what PATCH accepts, so a script can read,
//! edit and send it back.

use app::types::{
    rate_limits::{RateLimitList, RateLimitProtectionSet, SetRateLimitProtection},
    settings::{EnvSource, ResilienceSettings},
};
use axum::{Json, extract::State};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{
    services::{rate_limits, resilience},
    state::AppState,
};

pub async fn get(State(state): State<Arc<AppState>>) -> Json<ResilienceSettings> {
    Json(state.resilience.current().as_ref().clone())
}

/// Partial and strict: unknown keys, wrong types and invalid values are a
/// 400 naming each field, and nothing is saved.
pub async fn patch(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<Value>,
) -> Result<Json<ResilienceSettings>, ApiError> {
    Ok(Json(resilience::patch(&state, &body).await?))
}

/// Which fields the environment sets, and whether it beats stored values.
pub async fn env(State(state): State<Arc<AppState>>) -> Json<Value> {
    let sources: &[EnvSource] = state.resilience.env();
    Json(json!({ "sources": sources }))
}

/// `GET /api/rate-limits`: each connection's protection switch and queue.
pub async fn rate_limits(State(state): State<Arc<AppState>>) -> Result<Json<RateLimitList>, ApiError> {
    Ok(Json(rate_limits::list(&state).await?))
}

/// `POST /api/rate-limits {connectionId, enabled}` — the only way to
/// change a connection's protection (`PUT /api/providers/{id}` cannot).
pub async fn set_rate_limit(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<SetRateLimitProtection>,
) -> Result<Json<RateLimitProtectionSet>, ApiError> {
    Ok(Json(rate_limits::set(&state, body).await?))
}
