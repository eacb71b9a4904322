//! `GET /v1/models`: every routable `provider/model` id — the catalog's
//! models of each active provider, then the models its connections' last
//! passing tests listed (the only source for a custom `openai-compatible`
//! upstream) — then the combos and the aliases.

use axum::{Json, extract::State};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::state::AppState;

pub async fn list(State(state): State<Arc<AppState>>) -> Json<Value> {
    let snapshot = state.routing.connections.snapshot();
    let mut data: Vec<Value> = Vec::new();
    for (p, models) in snapshot.served_models() {
        for m in models {
            data.push(json!({"id": format!("{}/{m}", p.id), "object": "model", "created": 0, "owned_by": p.id}));
        }
    }
    data.extend(
        state
            .routing
            .combos
            .all()
            .iter()
            .map(|c| json!({"id": c.name, "object": "model", "created": 0, "owned_by": "combo"})),
    );
    data.extend(
        state
            .routing
            .aliases
            .all()
            .into_iter()
            .map(|a| json!({"id": a.alias, "object": "model", "created": 0, "owned_by": "alias"})),
    );
    Json(json!({"object": "list", "data": data}))
}
