//! Browser-facing routes: the server-rendered, hydrated dashboard pages
//! (compressed), its server functions under `/sfn`, the static files
//! ([`assets`]), and `/` (`HEAD /` answered cheaply: Claude Code probes it
//! at start).
//! Pages and server functions need an admin session; unauthenticated page
//! requests are redirected to `/login`. Every browser-facing answer carries
//! the framing, sniffing and referrer headers; pages add their CSP.

mod assets;
pub(crate) mod backend;
pub mod cross_site;

use app::{App, backend::SharedBackend, session, shell};
use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::{Next, from_fn_with_state},
    response::{IntoResponse, Redirect, Response},
    routing::get,
};
use leptos::prelude::{LeptosOptions, provide_context};
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::sync::Arc;
use tower_http::compression::CompressionLayer;

use crate::{
    api::{admin::is_admin, error::not_found},
    state::AppState,
};

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
    let assets_root = assets::root(&site_root);
    let app_shell = {
        let (options, assets_root) = (options.clone(), assets_root.clone());
        move || shell(options.clone(), assets_root.clone())
    };
    let not_found_page = leptos_axum::render_app_to_stream_with_context(context.clone(), app_shell.clone());
    let pages = Router::new()
        .leptos_routes_with_context(&options, generate_route_list(App), context.clone(), app_shell)
        .fallback(move |req: Request| async move {
            if is_machine_path(req.uri().path()) {
                not_found().await.into_response()
            } else {
                not_found_page(req).await
            }
        })
        .with_state(options)
        .layer(CompressionLayer::new());
    let assets = assets::router(&site_root, &assets_root);
    let root_routes = Router::new().route("/", get(root).head(|| async { StatusCode::OK })).with_state(state.clone());
    Router::new()
        .merge(pages)
        .layer(axum::middleware::from_fn(arguments_are_client_errors))
        .layer(axum::middleware::from_fn(back_without_stale_outcome))
        .layer(from_fn_with_state(state.clone(), require_session))
        .merge(root_routes)
        .merge(assets)
}

/// Paths of the proxy, the management API and the asset bundle: their
/// unknown URLs get a JSON 404, never a page or a redirect.
fn is_machine_path(path: &str) -> bool {
    path.starts_with("/api/") || path == "/api" || path.starts_with("/v1") || path.starts_with("/assets/")
}

/// Without a session, pages and plain (no-JS) form posts go to
/// `/login?next=` the page they came from; server functions called by the
/// hydrated app answer 401 with [`session::SIGNED_OUT`], encoded as
/// server_fn encodes errors, so the app reads it and makes the same trip.
async fn require_session(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if is_machine_path(path)
        || PUBLIC_PAGES.contains(&path)
        || PUBLIC_SERVER_FNS.contains(&path)
        || is_admin(&state, req.headers()).await
    {
        return next.run(req).await;
    }
    if !path.starts_with("/sfn/") {
        let here = req.uri().path_and_query().map_or(path, |p| p.as_str());
        return Redirect::to(&session::login_url(here)).into_response();
    }
    let accepts_html =
        req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"));
    if accepts_html {
        let came_from =
            req.headers().get(header::REFERER).and_then(|v| v.to_str().ok()?.parse::<axum::http::Uri>().ok());
        let here = came_from.as_ref().and_then(|u| u.path_and_query()).map_or("", |p| p.as_str());
        return Redirect::to(&session::login_url(here)).into_response();
    }
    let mut resp = (StatusCode::UNAUTHORIZED, format!("ServerError|{}", session::SIGNED_OUT)).into_response();
    resp.headers_mut().insert("serverfnerror", HeaderValue::from_static("1"));
    resp
}

/// A plain form post that succeeded goes back to its page (its Referer)
/// without the last refusal in the address: no `?error=` banner and no
/// refused settings card outlives a later success. server_fn sends a
/// post back to the Referer's absolute URL (its query re-encoded); a
/// refusal is sent to a path of its own.
async fn back_without_stale_outcome(req: Request, next: Next) -> Response {
    let back = req.uri().path().starts_with("/sfn/").then(|| req.headers().get(header::REFERER).cloned()).flatten();
    let mut resp = next.run(req).await;
    let page = |url: &str| url.split(['?', '#']).next().unwrap_or_default().to_owned();
    let location = resp.headers().get(header::LOCATION).and_then(|l| l.to_str().ok());
    let going_back = match (back.as_ref().and_then(|b| b.to_str().ok()), location) {
        (Some(back), Some(location)) => page(back) == page(location),
        _ => false,
    };
    let clean = location.filter(|_| going_back).and_then(without_outcome).and_then(|u| HeaderValue::from_str(&u).ok());
    if let Some(clean) = clean {
        resp.headers_mut().insert(header::LOCATION, clean);
    }
    resp
}

/// `url` without the query parameters that carry a refusal (`error`, and
/// a settings card's `refused` and `f.<path>`) or an open form (`edit`:
/// it was saved); `None` when it has none.
fn without_outcome(url: &str) -> Option<String> {
    use app::{
        paths::EDIT,
        types::settings::{REFUSED, TYPED},
    };
    let base = url.split_once('#').map_or(url, |(base, _)| base);
    let (path, query) = base.split_once('?')?;
    let stale = |pair: &&str| {
        let key = pair.split_once('=').map_or(*pair, |(k, _)| k);
        key == "error" || key == REFUSED || key == EDIT || key.starts_with(TYPED)
    };
    let pairs: Vec<&str> = query.split('&').collect();
    if !pairs.iter().any(stale) {
        return None;
    }
    let kept: Vec<&str> = pairs.into_iter().filter(|p| !stale(p)).collect();
    Some(if kept.is_empty() { path.to_owned() } else { format!("{path}?{}", kept.join("&")) })
}

/// Bodies a server function could not decode are the caller's mistake:
/// 400 (server_fn itself answers 500 for them). Only server-function
/// answers carry the `serverfnerror` header.
async fn arguments_are_client_errors(req: Request, next: Next) -> Response {
    /// Prefixes of server_fn's encoded argument errors.
    const ARGUMENT_ERRORS: [&[u8]; 3] = [b"Args|", b"MissingArg|", b"Deserialization|"];
    /// Larger error bodies are not argument errors.
    const LIMIT: usize = 64 * 1024;
    let resp = next.run(req).await;
    if resp.status() != StatusCode::INTERNAL_SERVER_ERROR || !resp.headers().contains_key("serverfnerror") {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, LIMIT).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "Internal error; see the server log").into_response();
    };
    if ARGUMENT_ERRORS.iter().any(|p| bytes.starts_with(p)) {
        parts.status = StatusCode::BAD_REQUEST;
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Headers every browser-facing answer carries: no framing, no MIME
/// sniffing, the referrer only to this origin (plain form posts are sent
/// back to their page by it).
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers.entry(name).or_insert(HeaderValue::from_static(value));
    }
    resp
}

/// `/`: Get started until a connection and a key exist, then Health.
async fn root(State(state): State<Arc<AppState>>, req: Request) -> Redirect {
    if !is_admin(&state, req.headers()).await {
        return Redirect::to("/login");
    }
    Redirect::to(crate::services::onboarding::landing(&state))
}

#[cfg(test)]
mod tests {
    use super::without_outcome;

    #[test]
    fn going_back_drops_only_a_refusals_parameters() {
        let refused =
            "http://gw/settings/resilience?refused=session-affinity&f.sessionAffinityTtlMs=25%20h#session-affinity";
        assert_eq!(without_outcome(refused).as_deref(), Some("http://gw/settings/resilience"));
        let mixed = "http://gw/logs?provider=openai&error=Not+found&window=24h";
        assert_eq!(without_outcome(mixed).as_deref(), Some("http://gw/logs?provider=openai&window=24h"));
        assert_eq!(without_outcome("http://gw/logs?provider=openai"), None);
        assert_eq!(without_outcome("http://gw/keys"), None);
        // A card saved from its form opened without JS: back to the folded page.
        let edited = "http://gw/settings/resilience?edit=request-queue";
        assert_eq!(without_outcome(edited).as_deref(), Some("http://gw/settings/resilience"));
    }
}
