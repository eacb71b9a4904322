//! Browser-facing routes: the server-rendered, hydrated dashboard pages,
//! its server functions under `/sfn`, the `/pkg` assets (compressed), and
//! `/` (`HEAD /` answered cheaply: Claude Code probes it at start).
//! Pages and server functions need an admin session; unauthenticated page
//! requests are redirected to `/login`.

mod backend;

use app::{App, backend::SharedBackend, shell};
use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::StatusCode,
    middleware::{Next, from_fn_with_state},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use leptos::prelude::{LeptosOptions, provide_context};
use leptos_axum::{LeptosRoutes, generate_route_list, handle_server_fns_with_context};
use std::sync::Arc;
use tower_http::{compression::CompressionLayer, services::ServeDir};

use crate::{auth::identity::is_admin, state::AppState};

/// Paths reachable without a session.
const PUBLIC_PAGES: [&str; 1] = ["/login"];
const PUBLIC_SERVER_FNS: [&str; 1] = ["/sfn/login"];

pub fn router(state: &Arc<AppState>) -> Router {
    let site_root = state.config.site_root.clone();
    let options =
        LeptosOptions::builder().output_name("app").site_root(site_root.to_string_lossy().into_owned()).build();
    let backend: SharedBackend = Arc::new(backend::WebBackend::new(state.clone()));
    let context = {
        let backend = backend.clone();
        move || provide_context(backend.clone())
    };
    let pages = Router::new()
        .leptos_routes_with_context(&options, generate_route_list(App), context.clone(), {
            let options = options.clone();
            move || shell(options.clone())
        })
        .with_state(options);
    let server_fns = Router::new().route(
        "/sfn/{*fn_name}",
        post({
            let context = context.clone();
            move |req: Request<Body>| handle_server_fns_with_context(context.clone(), req)
        })
        .get(move |req: Request<Body>| handle_server_fns_with_context(context.clone(), req)),
    );
    let assets =
        Router::new().nest_service("/pkg", ServeDir::new(site_root.join("pkg"))).layer(CompressionLayer::new());
    let root_routes = Router::new().route("/", get(root).head(|| async { StatusCode::OK })).with_state(state.clone());
    Router::new()
        .merge(pages)
        .merge(server_fns)
        .layer(from_fn_with_state(state.clone(), require_session))
        .merge(root_routes)
        .merge(assets)
}

/// Pages redirect to `/login`, server functions answer 401.
async fn require_session(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if PUBLIC_PAGES.contains(&path) || PUBLIC_SERVER_FNS.contains(&path) || is_admin(&state, req.headers()) {
        return next.run(req).await;
    }
    if path.starts_with("/sfn/") {
        return (StatusCode::UNAUTHORIZED, "Please sign in again").into_response();
    }
    Redirect::to("/login").into_response()
}

async fn root(State(state): State<Arc<AppState>>, req: Request) -> Redirect {
    Redirect::to(if is_admin(&state, req.headers()) { "/monitoring/health" } else { "/login" })
}
