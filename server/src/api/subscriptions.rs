//! Subscription accounts: `/api/oauth/{provider}/start|complete` (sign in
//! through the provider's page) and `/api/providers/import` (the file a
//! CLI already wrote). Each answers with the new connection, as adding an
//! API key does.

use app::types::subscription::{CompleteSignIn, ImportCredentials, SignInStarted};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{services::oauth, state::AppState};

pub async fn start(
    State(state): State<Arc<AppState>>,
    Path(provider): Path<String>,
) -> Result<Json<SignInStarted>, ApiError> {
    Ok(Json(oauth::start(&state, &provider)?))
}

pub async fn complete(
    State(state): State<Arc<AppState>>,
    Path(provider): Path<String>,
    StrictJson(body): StrictJson<CompleteSignIn>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let created = oauth::complete(&state, &provider, body).await?;
    Ok((StatusCode::CREATED, Json(json!({"connection": created}))))
}

pub async fn import(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<ImportCredentials>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let created = oauth::import(&state, body).await?;
    Ok((StatusCode::CREATED, Json(json!({"connection": created}))))
}
