//! The `/api/*` management REST API. Handlers extract and delegate to
//! `services`; every route but login needs an admin (guard).

pub mod admin;
pub mod auth;
pub mod combos;
pub mod error;
pub mod json;
pub mod keys;
pub mod logs;
pub mod monitoring;
pub mod providers;
pub mod resilience;
pub mod subscriptions;

use axum::{
    Router,
    extract::{Request, State},
    middleware::{Next, from_fn_with_state},
    response::Response,
    routing::{delete, get, post},
};
use std::sync::Arc;

use crate::{
    api::{admin::is_admin, error::ApiError},
    state::AppState,
};

pub fn router(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    let protected = Router::new()
        .route("/api/providers/catalog", get(providers::catalog))
        .route("/api/providers", get(providers::list).post(providers::create))
        .route("/api/providers/{id}", get(providers::get).put(providers::update).delete(providers::delete))
        .route("/api/providers/{id}/test", post(providers::test))
        .route("/api/providers/import", post(subscriptions::import))
        .route("/api/providers/import/local", get(subscriptions::local_files))
        .route("/api/quotas", get(subscriptions::list_quotas))
        .route("/api/oauth/{provider}/start", post(subscriptions::start))
        .route("/api/oauth/{provider}/complete", post(subscriptions::complete))
        .route("/api/combos", get(combos::list).post(combos::create))
        .route("/api/combos/{name}", get(combos::get).put(combos::replace).delete(combos::delete))
        .route("/api/aliases", get(combos::aliases).put(combos::put_alias).delete(combos::delete_alias))
        .route("/api/keys", get(keys::list).post(keys::create))
        .route("/api/keys/{id}", delete(keys::revoke))
        .route("/api/logs", get(logs::list))
        .route("/api/usage", get(logs::usage))
        .route("/api/resilience", get(resilience::get).patch(resilience::patch))
        .route("/api/resilience/env", get(resilience::env))
        .route("/api/rate-limits", get(resilience::rate_limits).post(resilience::set_rate_limit))
        .route("/api/resilience/reset", post(monitoring::reset))
        .route(
            "/api/resilience/model-cooldowns",
            get(monitoring::model_cooldowns).delete(monitoring::clear_model_cooldowns),
        )
        .route("/api/resilience/cooldowns", get(monitoring::cooldowns).post(monitoring::clear_cooldowns))
        .route("/api/resilience/connections", get(monitoring::connections))
        .route("/api/monitoring/health", get(monitoring::health).delete(monitoring::reset_all))
        .route("/api/monitoring/traffic", get(monitoring::traffic))
        .layer(from_fn_with_state(state.clone(), require_admin));
    // Signing in is open to anyone: its body is a password, read small.
    let sign_in = Router::new()
        .route("/api/auth/login", post(auth::login))
        .layer(axum::extract::DefaultBodyLimit::max(auth::MAX_LOGIN_BODY_BYTES));
    Router::new()
        .merge(sign_in)
        .route("/api/auth/logout", post(auth::logout))
        .route("/api/ready", get(monitoring::ready))
        .merge(protected)
}

/// Middleware for `/api/*`: 401 JSON when not an admin, never a redirect.
async fn require_admin(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Result<Response, ApiError> {
    if is_admin(&state, req.headers()).await { Ok(next.run(req).await) } else { Err(ApiError::Unauthorized) }
}
