//! `POST /v1/chat/completions`: validate the body, resolve the model,
//! rewrite only `model`, and hand the rest to dispatch untouched.

use app::types::Protocol;
use axum::{
    Extension,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::StatusCode,
    response::Response,
};
use serde_json::value::RawValue;
use std::{collections::BTreeMap, sync::Arc};

use super::{context::RequestId, dispatch, errors::ProxyError};
use crate::{
    auth::api_keys::KeyEntry,
    routing::resolve::{ResolveError, resolve},
    state::AppState,
};

/// The fields the gateway reads; everything else passes through as raw JSON.
#[derive(Debug)]
pub struct ChatRequest {
    pub model: String,
    pub stream: bool,
    fields: BTreeMap<String, Box<RawValue>>,
}

impl ChatRequest {
    pub fn parse(body: &[u8]) -> Result<Self, ProxyError> {
        let fields: BTreeMap<String, Box<RawValue>> = serde_json::from_slice(body).map_err(|e| {
            ProxyError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_json",
                format!("Request body is not a JSON object: {e}"),
            )
        })?;
        let model = match fields.get("model").map(|v| serde_json::from_str::<String>(v.get())) {
            Some(Ok(m)) if !m.trim().is_empty() => m,
            Some(_) => return Err(ProxyError::bad_field("model", "`model` must be a non-empty string")),
            None => return Err(ProxyError::bad_field("model", "`model` is required")),
        };
        match fields.get("messages").map(|v| serde_json::from_str::<Vec<&RawValue>>(v.get())) {
            Some(Ok(m)) if !m.is_empty() => {}
            Some(_) => return Err(ProxyError::bad_field("messages", "`messages` must be a non-empty array")),
            None => return Err(ProxyError::bad_field("messages", "`messages` is required")),
        }
        let stream = match fields.get("stream").map(|v| v.get()) {
            None | Some("null") | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(ProxyError::bad_field("stream", "`stream` must be a boolean")),
        };
        Ok(Self { model, stream, fields })
    }

    /// The body to send upstream: the client's, with `model` replaced.
    pub fn upstream_body(&self, model: &str) -> Bytes {
        let mut out = Vec::with_capacity(self.fields.values().map(|v| v.get().len() + 16).sum());
        out.push(b'{');
        let model_json = serde_json::Value::from(model).to_string();
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(serde_json::Value::from(k.as_str()).to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(if k == "model" { model_json.as_bytes() } else { v.get().as_bytes() });
        }
        out.push(b'}');
        Bytes::from(out)
    }
}

pub async fn handle(
    State(state): State<Arc<AppState>>,
    Extension(request_id): Extension<RequestId>,
    key: Option<Extension<Arc<KeyEntry>>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ProxyError> {
    let body = body.map_err(|e| ProxyError::new(e.status(), "invalid_request_error", "invalid_body", e.body_text()))?;
    let req = ChatRequest::parse(&body)?;
    let snapshot = state.connections.snapshot();
    let target = resolve(&req.model, &snapshot).map_err(|e| match e {
        ResolveError::Ambiguous(..) => ProxyError::bad_field("model", e.to_string()),
        ResolveError::Unknown(_) => ProxyError {
            param: Some("model"),
            ..ProxyError::new(StatusCode::NOT_FOUND, "invalid_request_error", "model_not_found", e.to_string())
        },
    })?;
    if target.provider.protocol != Protocol::OpenaiChat {
        return Err(ProxyError::bad_field(
            "model",
            format!(
                "provider {} speaks the {} protocol, which /v1/chat/completions cannot reach yet",
                target.provider.id,
                target.provider.protocol.as_str()
            ),
        ));
    }
    let call = dispatch::Call {
        request_id: &request_id.0,
        endpoint: "/v1/chat/completions",
        upstream_path: "/chat/completions",
        body: req.upstream_body(&target.model),
        target: &target,
        stream: req.stream,
        key: key.as_ref().map(|k| k.0.as_ref()),
    };
    dispatch::run(&state, &snapshot, call).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_only_the_model_and_keeps_unknown_fields() {
        let req = ChatRequest::parse(br#"{"model":"openai/gpt-4o","messages":[{"role":"user","content":"hi"}],"x_custom":{"a":[1,2]},"stream":true}"#).unwrap();
        assert!(req.stream);
        let out: serde_json::Value = serde_json::from_slice(&req.upstream_body("gpt-4o")).unwrap();
        assert_eq!(out["model"], "gpt-4o");
        assert_eq!(out["x_custom"]["a"][1], 2);
        assert_eq!(out["messages"][0]["content"], "hi");
    }

    #[test]
    fn bad_bodies_name_the_field() {
        let param = |b: &[u8]| ChatRequest::parse(b).unwrap_err().param;
        assert_eq!(param(br#"{"messages":[{}]}"#), Some("model"));
        assert_eq!(param(br#"{"model":"m","messages":[]}"#), Some("messages"));
        assert_eq!(param(br#"{"model":5,"messages":[{}]}"#), Some("model"));
        assert_eq!(param(br#"{"model":"m","messages":[{}],"stream":"yes"}"#), Some("stream"));
        assert_eq!(ChatRequest::parse(b"{not json").unwrap_err().code, "invalid_json");
    }
}
