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
use serde::Deserialize;
use serde_json::value::RawValue;
use std::{ops::Range, sync::Arc};

use super::{combo, context::RequestId, dispatch, errors::ProxyError};
use crate::{
    auth::api_keys::KeyEntry,
    routing::resolve::{ResolveError, resolve},
    state::AppState,
};

/// The fields the gateway reads, borrowed from the body; everything else
/// is skipped by the parser and passes through byte for byte.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stream: Option<&'a RawValue>,
}

/// A validated chat request: the client's body plus where its `model`
/// value sits, so the upstream body is the client's with only that span
/// replaced (no re-serialization, unknown fields untouched).
#[derive(Debug)]
pub struct ChatRequest {
    pub model: String,
    pub stream: bool,
    body: Bytes,
    model_span: Range<usize>,
}

fn invalid_json(detail: impl std::fmt::Display) -> ProxyError {
    ProxyError::new(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        "invalid_json",
        format!("Request body is not a JSON object: {detail}"),
    )
}

impl ChatRequest {
    pub fn parse(body: Bytes) -> Result<Self, ProxyError> {
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(invalid_json("expected `{`"));
        }
        let head: Head<'_> = serde_json::from_slice(&body).map_err(invalid_json)?;
        let (model, model_span) = match head.model {
            None => return Err(ProxyError::bad_field("model", "`model` is required")),
            Some(raw) => match serde_json::from_str::<String>(raw.get()) {
                Ok(m) if !m.trim().is_empty() => {
                    let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
                    (m, start..start + raw.get().len())
                }
                _ => return Err(ProxyError::bad_field("model", "`model` must be a non-empty string")),
            },
        };
        match head.messages.map(|m| m.get().trim_start().strip_prefix('[').map(str::trim_start)) {
            None => return Err(ProxyError::bad_field("messages", "`messages` is required")),
            Some(Some(rest)) if !rest.starts_with(']') => {}
            Some(_) => return Err(ProxyError::bad_field("messages", "`messages` must be a non-empty array")),
        }
        let stream = match head.stream.map(|v| v.get()) {
            None | Some("null") | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(ProxyError::bad_field("stream", "`stream` must be a boolean")),
        };
        Ok(Self { model, stream, body, model_span })
    }

    /// The body to send upstream: the client's, with `model` replaced.
    pub fn upstream_body(&self, model: &str) -> Bytes {
        let model_json = serde_json::Value::from(model).to_string();
        let mut out = Vec::with_capacity(self.body.len() + model_json.len());
        out.extend_from_slice(&self.body[..self.model_span.start]);
        out.extend_from_slice(model_json.as_bytes());
        out.extend_from_slice(&self.body[self.model_span.end..]);
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
    let req = ChatRequest::parse(body)?;
    let snapshot = state.connections.snapshot();
    let key = key.as_ref().map(|k| k.0.as_ref());
    if let Some(combo) = state.combos.get(&req.model) {
        let call = combo::ComboCall {
            request_id: &request_id.0,
            endpoint: "/v1/chat/completions",
            upstream_path: "/chat/completions",
            stream: req.stream,
            key,
        };
        return combo::run(&state, &snapshot, &combo, call, |model| req.upstream_body(model)).await;
    }
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
        key,
    };
    dispatch::run(&state, &snapshot, call).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_only_the_model_and_keeps_unknown_fields() {
        let body = r#"{"messages":[{"role":"user","content":"hi"}], "model" : "openai/gpt-4o","x_custom":{"a":[1,2]},"stream":true}"#;
        let req = ChatRequest::parse(Bytes::from_static(body.as_bytes())).unwrap();
        assert!(req.stream);
        assert_eq!(req.model, "openai/gpt-4o");
        let out = req.upstream_body("gpt-4o");
        assert_eq!(out, body.replace(r#""openai/gpt-4o""#, r#""gpt-4o""#).as_bytes(), "only the model span changes");
    }

    #[test]
    fn bad_bodies_name_the_field() {
        let param = |b: &'static [u8]| ChatRequest::parse(Bytes::from_static(b)).unwrap_err().param;
        assert_eq!(param(br#"{"messages":[{}]}"#), Some("model"));
        assert_eq!(param(br#"{"model":"m","messages":[]}"#), Some("messages"));
        assert_eq!(param(br#"{"model":5,"messages":[{}]}"#), Some("model"));
        assert_eq!(param(br#"{"model":"m","messages":[{}],"stream":"yes"}"#), Some("stream"));
        assert_eq!(param(br#"{"model":"m"}"#), Some("messages"));
        assert_eq!(ChatRequest::parse(Bytes::from_static(b"{not json")).unwrap_err().code, "invalid_json");
        assert_eq!(ChatRequest::parse(Bytes::from_static(br#"["m",[{}]]"#)).unwrap_err().code, "invalid_json");
    }
}
