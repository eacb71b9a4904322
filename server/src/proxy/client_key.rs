//! The guard of `/v1/*`: a client key with the `inference` scope, or
//! anonymous local use (`proxy::anonymous`) while no key exists or
//! `requireApiKey` is off. Refusals come in the envelope of the endpoint's
//! protocol, and each is a row of the request log.

use app::types::Scope;
use axum::{extract::Request, response::Response};
use std::sync::Arc;

use super::{
    anonymous,
    context::RequestId,
    errors::{ProxyError, log_refused},
    refusals::Refused,
    route::client_protocol,
};
use crate::{
    auth::{
        api_keys::KeyEntry,
        identity::{peer_ip, presented_key},
    },
    state::AppState,
    store::AttemptRecord,
};

/// Checks the client key of a `/v1/*` request: `None` when it is
/// admitted (its [`KeyEntry`] attached, so dispatch can honour
/// `allowedConnections`), else the refusal, in the envelope of the
/// endpoint's protocol.
pub fn refusal(state: &AppState, req: &mut Request) -> Option<Response> {
    let refused = |e: ProxyError, req: &Request| {
        let (protocol, endpoint) = client_protocol(req.uri().path());
        let request_id = req.extensions().get::<RequestId>().map_or("", |id| id.0.as_str());
        log_refused(state, AttemptRecord::request(request_id, endpoint, false, state.clock.now_ms()), &e);
        Some(e.into_response_as(protocol))
    };
    let key = presented_key(req.headers());
    if let Some(entry) = key.and_then(|k| state.auth.keys.lookup(k)) {
        if !entry.has(Scope::Inference) {
            return refused(Refused::InsufficientScope.because("this API key lacks the inference scope"), req);
        }
        req.extensions_mut().insert::<Arc<KeyEntry>>(entry);
        return None;
    }
    if state.auth.keys.any() {
        if key.is_some() {
            return refused(Refused::invalid_key(), req);
        }
        if state.resilience.current().require_api_key {
            return refused(
                Refused::MissingKey.because("Missing API key: send Authorization: Bearer <key> or x-api-key"),
                req,
            );
        }
    }
    // Anonymous (any key an agent sends before keys exist is ignored).
    let origin = anonymous::Origin {
        peer: peer_ip(req.extensions()),
        listen_host: &state.config.host,
        trust_proxy: state.config.trust_proxy,
    };
    if let Err(refusal) = anonymous::check(&origin, req.method(), req.headers()) {
        return refused(refusal.into(), req);
    }
    None
}
