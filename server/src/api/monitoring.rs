//! Monitoring and resilience management routes (SPEC §R1–§R3):
//! `GET|DELETE /api/monitoring/health`, `POST /api/resilience/reset`,
//! `GET|DELETE /api/resilience/model-cooldowns`,
//! `GET|POST /api/resilience/cooldowns`, `GET /api/resilience/connections`,
//! `GET /api/monitoring/traffic?window=1h|24h`; and `GET /api/ready`,
//! open to load balancers.

use app::types::monitoring::{
    ClearCooldowns, ClearCooldownsResult, ClearModelCooldowns, ConnectionStates, CooldownList, HealthReport,
    ModelCooldownList, ResetBreakers, ResetResult,
};
use app::types::traffic::TrafficReport;
use axum::{
    Json,
    extract::{Query, State},
    http::StatusCode,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use super::{
    error::ApiError,
    json::{OptionalJson, StrictJson},
};
use crate::{
    services::{self, monitoring},
    state::AppState,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderQuery {
    provider: Option<String>,
}

pub async fn health(State(state): State<Arc<AppState>>) -> Json<HealthReport> {
    Json(monitoring::health(&state).await)
}

/// Resets every breaker and lockout.
pub async fn reset_all(State(state): State<Arc<AppState>>) -> Json<ResetResult> {
    Json(monitoring::reset(&state, None))
}

/// Body `{provider?}` (or none): one provider's breaker, or all.
pub async fn reset(
    State(state): State<Arc<AppState>>,
    OptionalJson(body): OptionalJson<ResetBreakers>,
) -> Json<ResetResult> {
    Json(monitoring::reset(&state, body.provider.as_deref()))
}

pub async fn model_cooldowns(State(state): State<Arc<AppState>>) -> Json<ModelCooldownList> {
    Json(monitoring::model_cooldowns(&state))
}

pub async fn clear_model_cooldowns(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<ClearModelCooldowns>,
) -> Result<Json<Value>, ApiError> {
    let removed = monitoring::clear_model_cooldowns(&state, &body)?;
    Ok(Json(json!({"ok": true, "removed": removed})))
}

pub async fn cooldowns(
    State(state): State<Arc<AppState>>,
    Query(q): Query<ProviderQuery>,
) -> Result<Json<CooldownList>, ApiError> {
    Ok(Json(monitoring::cooldowns(&state, q.provider.as_deref()).await?))
}

pub async fn clear_cooldowns(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<ClearCooldowns>,
) -> Result<Json<ClearCooldownsResult>, ApiError> {
    Ok(Json(monitoring::clear_cooldowns(&state, &body).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowQuery {
    window: Option<String>,
}

/// `?window=1h|24h`: Health's traffic charts.
pub async fn traffic(
    State(state): State<Arc<AppState>>,
    q: Result<Query<WindowQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TrafficReport>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::Invalid(vec![app::types::FieldError::new("query", e.body_text())]))?;
    Ok(Json(services::traffic::report(&state, q.window.as_deref())?))
}

pub async fn connections(
    State(state): State<Arc<AppState>>,
    Query(q): Query<ProviderQuery>,
) -> Result<Json<ConnectionStates>, ApiError> {
    Ok(Json(monitoring::connection_states(&state, q.provider.as_deref()).await?))
}

/// `GET /api/ready`, for load balancers' health checks (no sign-in; it
/// tells nothing but readiness): 200 once this instance has read what the
/// other instances on its database changed (at once on SQLite), 503 while
/// it is catching up.
pub async fn ready(State(state): State<Arc<AppState>>) -> (StatusCode, Json<Value>) {
    if *state.store.caught_up.borrow() {
        (StatusCode::OK, Json(json!({"ready": true})))
    } else {
        let reason = "catching up with the other instances on the database";
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"ready": false, "reason": reason})))
    }
}
