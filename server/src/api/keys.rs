//! `/api/keys*`: client API keys.

use app::types::{ApiKeyList, CreateApiKey, CreatedApiKey};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{services::keys, state::AppState};

pub async fn list(State(state): State<Arc<AppState>>) -> Result<Json<ApiKeyList>, ApiError> {
    Ok(Json(keys::list(&state).await?))
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<CreateApiKey>,
) -> Result<(StatusCode, Json<CreatedApiKey>), ApiError> {
    Ok((StatusCode::CREATED, Json(keys::create(&state, body).await?)))
}

pub async fn revoke(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    keys::revoke(&state, &id).await?;
    Ok(Json(serde_json::json!({"ok": true})))
}
