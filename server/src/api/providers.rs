//! `/api/providers*`: catalog, connections CRUD and the live test.

use app::types::{
    CatalogEntry, ConnectionList, ConnectionTestResult, ConnectionView, CreateConnection, UpdateConnection,
};
use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{services::connections, state::AppState, upstream::catalog};

pub async fn catalog() -> Json<Vec<CatalogEntry>> {
    Json(catalog::all().iter().map(|p| p.entry()).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    provider: Option<String>,
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    Query(q): Query<ListQuery>,
) -> Result<Json<ConnectionList>, ApiError> {
    Ok(Json(connections::list(&state, q.provider.as_deref()).await?))
}

pub async fn get(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"connection": connections::get(&state, &id).await?})))
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    StrictJson(body): StrictJson<CreateConnection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let created: ConnectionView = connections::create(&state, body).await?;
    Ok((StatusCode::CREATED, Json(json!({"connection": created}))))
}

pub async fn update(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    StrictJson(body): StrictJson<UpdateConnection>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"connection": connections::update(&state, &id, body).await?})))
}

pub async fn delete(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    connections::delete(&state, &id).await?;
    Ok(Json(json!({"ok": true})))
}

pub async fn test(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<ConnectionTestResult>, ApiError> {
    Ok(Json(connections::test(&state, &id).await?))
}
