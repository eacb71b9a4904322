//! `GET /v1/models`: every routable `provider/model` id, then the combos
//! and the aliases.

use axum::{Json, extract::State};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::state::AppState;

pub async fn list(State(state): State<Arc<AppState>>) -> Json<Value> {
    let snapshot = state.connections.snapshot();
    let mut data: Vec<Value> = snapshot
        .active_providers()
        .flat_map(|p| {
            p.models
                .iter()
                .map(move |m| json!({"id": format!("{}/{m}", p.id), "object": "model", "created": 0, "owned_by": p.id}))
        })
        .collect();
    data.extend(
        state.combos.all().iter().map(|c| json!({"id": c.name, "object": "model", "created": 0, "owned_by": "combo"})),
    );
    data.extend(
        state
            .aliases
            .all()
            .into_iter()
            .map(|a| json!({"id": a.alias, "object": "model", "created": 0, "owned_by": "alias"})),
    );
    Json(json!({"object": "list", "data": data}))
}
