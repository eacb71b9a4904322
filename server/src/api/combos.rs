//! `/api/combos`: list, create (`POST`), read, replace (`PUT`), delete.

use app::types::combo::{Combo, ComboList};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{services::combos, state::AppState};

pub async fn list(State(state): State<Arc<AppState>>) -> Json<ComboList> {
    Json(combos::list(&state))
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    StrictJson(combo): StrictJson<Combo>,
) -> Result<(StatusCode, Json<Combo>), ApiError> {
    if state.combos.get(&combo.name).is_some() {
        return Err(ApiError::Body(
            StatusCode::CONFLICT,
            format!("combo {:?} exists; use PUT to replace it", combo.name),
        ));
    }
    Ok((StatusCode::CREATED, Json(combos::put(&state, combo).await?)))
}

pub async fn get(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Result<Json<Combo>, ApiError> {
    Ok(Json(combos::get(&state, &name)?))
}

pub async fn replace(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    StrictJson(combo): StrictJson<Combo>,
) -> Result<Json<Combo>, ApiError> {
    if combo.name != name {
        return Err(ApiError::Invalid(vec![app::types::FieldError::new("name", "must match the combo in the path")]));
    }
    Ok(Json(combos::put(&state, combo).await?))
}

pub async fn delete(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Result<StatusCode, ApiError> {
    combos::delete(&state, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
