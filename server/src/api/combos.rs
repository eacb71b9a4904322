//! `/api/combos`: list, create (`POST`), read, replace (`PUT`), delete;
//! `/api/aliases`: list, create or re-point (`PUT {alias, model}`),
//! delete (`DELETE {alias}`).

use app::types::{
    alias::{Alias, AliasList, AliasName},
    combo::{Combo, ComboList},
};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use std::sync::Arc;

use super::{error::ApiError, json::StrictJson};
use crate::{
    services::{aliases, combos},
    state::AppState,
};

pub async fn list(State(state): State<Arc<AppState>>) -> Json<ComboList> {
    Json(combos::list(&state))
}

pub async fn create(
    State(state): State<Arc<AppState>>,
    StrictJson(combo): StrictJson<Combo>,
) -> Result<(StatusCode, Json<Combo>), ApiError> {
    if state.routing.combos.get(&combo.name).is_some() {
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

pub async fn aliases(State(state): State<Arc<AppState>>) -> Json<AliasList> {
    Json(aliases::list(&state))
}

pub async fn put_alias(
    State(state): State<Arc<AppState>>,
    StrictJson(alias): StrictJson<Alias>,
) -> Result<Json<Alias>, ApiError> {
    Ok(Json(aliases::put(&state, alias).await?))
}

pub async fn delete_alias(
    State(state): State<Arc<AppState>>,
    StrictJson(name): StrictJson<AliasName>,
) -> Result<StatusCode, ApiError> {
    aliases::delete(&state, &name.alias).await?;
    Ok(StatusCode::NO_CONTENT)
}
