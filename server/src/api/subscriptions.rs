//! Subscription accounts: `/api/oauth/{provider}/start|complete` (sign in
//! through the provider's page) and `/api/providers/import` (the file a
//! CLI already wrote), each answering with the new connection, as adding
//! an API key does; and `/api/quotas`, their plan windows.

use app::types::{
    FieldError,
    subscription::{CompleteSignIn, ImportCredentials, LocalCredentials, QuotaList, SignInStarted},
};
use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use serde_json::{Value, json};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{
    services::{oauth, quotas},
    state::AppState,
};

pub async fn start(
    State(state): State<Arc<AppState>>,
    Path(provider): Path<String>,
    request: axum::http::request::Parts,
) -> Result<Json<SignInStarted>, ApiError> {
    let from = oauth::Browser::of(&state, &request.extensions, &request.headers);
    Ok(Json(oauth::start(&state, &provider, &from).await?))
}

/// `GET /api/providers/import/local`: the CLIs' credentials files on the
/// gateway's machine, for a browser on it.
pub async fn local_files(
    State(state): State<Arc<AppState>>,
    request: axum::http::request::Parts,
) -> Json<LocalCredentials> {
    Json(oauth::local_files(&state, &oauth::Browser::of(&state, &request.extensions, &request.headers)))
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
    request: axum::http::request::Parts,
    StrictJson(body): StrictJson<ImportCredentials>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let browser = oauth::Browser::of(&state, &request.extensions, &request.headers);
    let created = oauth::import(&state, body, &browser).await?;
    Ok((StatusCode::CREATED, Json(json!({"connection": created}))))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaQuery {
    /// Read every account's usage endpoint now, not only those due.
    #[serde(default)]
    refresh: bool,
}

/// `GET /api/quotas[?refresh=true]`: each subscription account's plan windows.
pub async fn list_quotas(
    State(state): State<Arc<AppState>>,
    q: Result<Query<QuotaQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<QuotaList>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::Invalid(vec![FieldError::new("query", e.body_text())]))?;
    if q.refresh {
        quotas::refresh(&state, true).await;
    }
    Ok(Json(quotas::list(&state)))
}
