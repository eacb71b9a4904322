//! The Get started page's facts: how far set-up is, the gateway's URL as
//! the browser reached it, and a model the snippets can name.

use app::types::onboarding::GetStarted;
use axum::http::HeaderMap;

use super::{ServiceError, connections, keys};
use crate::{
    auth::cross_site::{is_https, public_host},
    state::AppState,
    upstream::catalog,
};

/// The example model when no connection names a better one.
const FALLBACK_MODEL: &str = "openai/gpt-4o-mini";

/// The dashboard's first page: Get started until a connection and a key
/// exist, then Health.
pub fn landing(state: &AppState) -> &'static str {
    let set_up = state.auth.keys.any() && state.routing.connections.snapshot().active_providers().next().is_some();
    if set_up { "/monitoring/health" } else { app::paths::GET_STARTED }
}

pub async fn get_started(state: &AppState, headers: &HeaderMap) -> Result<GetStarted, ServiceError> {
    let list = connections::list(state, None).await?.connections;
    let keys = keys::list(state).await?.keys.len();
    let trust_proxy = state.config.trust_proxy;
    let scheme = if is_https(headers, trust_proxy) { "https" } else { "http" };
    let host = public_host(headers, trust_proxy).unwrap_or("127.0.0.1:20128");
    let example_model = list
        .iter()
        .filter_map(|c| catalog::find(&c.provider))
        .find_map(|p| p.models.first().map(|m| format!("{}/{m}", p.id)))
        .unwrap_or_else(|| FALLBACK_MODEL.to_owned());
    Ok(GetStarted {
        connections: list.len(),
        tested: list.iter().filter(|c| c.test_status.as_deref() == Some("ok")).count(),
        keys,
        base_url: format!("{scheme}://{host}"),
        example_model,
    })
}
