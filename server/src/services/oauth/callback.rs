//! ChatGPT's sign-in page sends the browser back to the Codex CLI's own
//! listener, `http://localhost:1455/auth/callback?code=…&state=…`. When
//! the dashboard that started a ChatGPT sign-in runs in a browser on the
//! gateway's machine (the request came from a loopback address), the
//! gateway listens there itself for the sign-in's lifetime, completes the
//! sign-in when the browser arrives, and sends the browser back to the
//! dashboard — nothing to paste. Anywhere else, or when the port is taken
//! (a Codex CLI signing in at the same time), the pasted address works as
//! before. The listener takes loopback connections only, and closes when
//! no sign-in has been started for ten minutes.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use app::types::subscription::CompleteSignIn;
use axum::{
    Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
    routing::get,
};

use crate::{
    auth::{
        identity,
        sign_ins::{SIGN_IN_TTL_MS, SignIn},
    },
    services::stash,
    state::AppState,
};

/// How often the listener looks whether its window has closed.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Where the browser behind a dashboard request is: on the gateway's
/// machine or not (a sign-in's listener and the import of this machine's
/// credentials files are offered only to a local one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Browser {
    /// A browser on the gateway's own machine.
    pub local: bool,
    /// The dashboard's address as that browser uses it (`scheme://host`).
    pub dashboard: Option<String>,
}

impl Browser {
    /// From a request's peer and headers (a trusted proxy's forwarding
    /// headers name the client; `OMNIROUTE_TRUST_PROXY`).
    pub fn of(state: &AppState, extensions: &http::Extensions, headers: &HeaderMap) -> Self {
        let peer = identity::peer_ip(extensions);
        let client = identity::client_of(peer, headers, state.config.trust_proxy);
        Self { local: client.is_some_and(|ip| ip.is_loopback()), dashboard: dashboard_of(headers) }
    }
}

/// The dashboard's origin: the request's `Origin`, else `http://` + its `Host`.
fn dashboard_of(headers: &HeaderMap) -> Option<String> {
    let value = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let origin =
        value(header::ORIGIN).map(str::to_owned).or_else(|| value(header::HOST).map(|h| format!("http://{h}")))?;
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"))?;
    let plain = !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c));
    plain.then_some(origin)
}

/// Opens (or keeps open for another sign-in lifetime) the listener at
/// `localhost:1455`; whether it listens.
pub fn listen(state: &Arc<AppState>) -> bool {
    let now = state.clock.now_ms();
    let window = &state.auth.callback.open_until;
    if window.load(Ordering::SeqCst) > now {
        window.store(now + SIGN_IN_TTL_MS, Ordering::SeqCst);
        return true;
    }
    // `localhost` may resolve to either loopback address.
    let listeners: Vec<tokio::net::TcpListener> = [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)]
        .into_iter()
        .filter_map(|ip| bind(SocketAddr::new(ip, state.config.oauth_callback_port)))
        .collect();
    if listeners.is_empty() {
        let port = state.config.oauth_callback_port;
        tracing::info!(port, "the sign-in redirect port is taken; the sign-in completes with the pasted address");
        return false;
    }
    window.store(now + SIGN_IN_TTL_MS, Ordering::SeqCst);
    let app = Router::new().route("/auth/callback", get(arrived)).with_state(state.clone());
    for listener in listeners {
        let (app, weak) = (app.clone(), Arc::downgrade(state));
        #[expect(clippy::disallowed_methods, reason = "the listener ends when its window closes")]
        tokio::spawn(async move {
            let closed = async move {
                let mut tick = tokio::time::interval(CHECK_EVERY);
                loop {
                    tick.tick().await;
                    let Some(state) = weak.upgrade() else { return };
                    if state.auth.callback.open_until.load(Ordering::SeqCst) <= state.clock.now_ms() {
                        return;
                    }
                }
            };
            let served = axum::serve(listener, app).with_graceful_shutdown(closed).await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "the sign-in redirect listener failed");
            }
        });
    }
    tracing::info!(port = state.config.oauth_callback_port, "listening for ChatGPT sign-ins on this machine");
    true
}

fn bind(addr: SocketAddr) -> Option<tokio::net::TcpListener> {
    let listener = std::net::TcpListener::bind(addr).ok()?;
    listener.set_nonblocking(true).ok()?;
    tokio::net::TcpListener::from_std(listener).ok()
}

/// The browser, back from ChatGPT's sign-in page: the sign-in completes,
/// and the browser goes back to the dashboard it started from.
async fn arrived(State(state): State<Arc<AppState>>, Query(query): Query<HashMap<String, String>>) -> Response {
    let (Some(code), Some(sign_in_state)) = (query.get("code"), query.get("state")) else {
        let why = query.get("error_description").or(query.get("error")).map_or("no code came back", String::as_str);
        return page(
            StatusCode::BAD_REQUEST,
            &format!("The sign-in did not complete: {why}. Start it again on the dashboard."),
        );
    };
    let waiting = stash::peek::<SignIn>(&state, sign_in_state).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "reading a waiting sign-in failed");
        None
    });
    let Some(dashboard) = waiting.map(|s| s.dashboard) else {
        return page(
            StatusCode::BAD_REQUEST,
            "No sign-in is waiting for this address (a sign-in lasts 10 minutes and completes once). Start it again on the dashboard.",
        );
    };
    let input = CompleteSignIn { state: sign_in_state.clone(), code: code.clone(), name: None };
    match super::complete(&state, "codex", input).await {
        Ok(_) => match dashboard {
            Some(dashboard) => Redirect::to(&format!("{dashboard}/providers")).into_response(),
            None => page(StatusCode::OK, "Signed in: the ChatGPT subscription was added. Return to the dashboard."),
        },
        Err(e) => page(
            StatusCode::BAD_REQUEST,
            &format!("The sign-in did not complete: {e}. Start it again on the dashboard."),
        ),
    }
}

fn page(status: StatusCode, message: &str) -> Response {
    let text = message.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let html = format!("<!doctype html><meta charset=utf-8><title>OmniRoute sign-in</title><p>{text}</p>");
    (status, Html(html)).into_response()
}
