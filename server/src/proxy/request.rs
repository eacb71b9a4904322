//! A client's request as the gateway needs it: checked against its
//! protocol's required fields, the model it asks for, whether it streams,
//! and the body each target gets — the client's own bytes with only the
//! `model` span replaced when the target speaks the client's protocol
//! (unknown fields pass through untouched, nothing is re-serialized), a
//! translation through the internal representation otherwise.

use app::types::Protocol;
use axum::http::{HeaderMap, HeaderName};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::{ops::Range, sync::OnceLock};

use super::{
    errors::ProxyError,
    refusals::{Refused, bad_field},
    session::{BodyIds, body_session_key, first_text_session_key, session_key},
};
use crate::{
    protocols::{anthropic, ir, json::Invalid, translate},
    routing::affinity::SessionId,
};

/// Client headers an upstream of the client's own protocol receives.
const PASSTHROUGH_HEADERS: [HeaderName; 2] =
    [HeaderName::from_static("anthropic-version"), HeaderName::from_static("anthropic-beta")];

/// The fields the gateway reads, borrowed from the body; everything else
/// is skipped by the parser.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stream: Option<&'a RawValue>,
    #[serde(borrow, default)]
    max_tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    background: Option<&'a RawValue>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
    #[serde(borrow, default)]
    conversation_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    prompt_cache_key: Option<&'a RawValue>,
}

#[derive(Debug)]
pub struct ClientRequest {
    pub protocol: Protocol,
    pub model: String,
    pub stream: bool,
    body: Bytes,
    /// Where `model` sits in the body (`None`: Gemini puts it in the URL).
    model_span: Option<Range<usize>>,
    /// The request read into the internal representation, on first need.
    ir: OnceLock<Result<ir::Request, Invalid>>,
    /// Headers for an upstream of the same protocol (`anthropic-beta`, …).
    pub passthrough_headers: HeaderMap,
    /// The client session's key from its session headers or body ids
    /// (for session affinity, §R2.2); never forwarded, never logged.
    session_key: Option<String>,
    /// The session's hash, on first need.
    session: OnceLock<Option<SessionId>>,
    /// A Responses request asked for `background: true`, which the gateway
    /// cannot hold for a later poll: it runs synchronously instead, without
    /// the field (SPEC §R8), and the answer says so.
    pub background_dropped: bool,
    /// A continuation made by the gateway: every target's body is written
    /// from the internal representation, never spliced from `body`.
    continuation: bool,
}

/// Said by the answer to a request whose `background: true` was dropped.
pub const BACKGROUND_WARNING: &str =
    "background mode is not supported by this gateway; the response was produced synchronously";

fn invalid_json(detail: impl std::fmt::Display) -> ProxyError {
    Refused::InvalidJson.because(format!("Request body is not a JSON object: {detail}"))
}

impl ClientRequest {
    pub fn parse(protocol: Protocol, body: Bytes, headers: &HeaderMap) -> Result<Self, ProxyError> {
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(invalid_json("expected `{`"));
        }
        let head: Head<'_> = serde_json::from_slice(&body).map_err(invalid_json)?;
        let (model, model_span) = match head.model {
            None => return Err(bad_field("model", "`model` is required")),
            Some(raw) => match serde_json::from_str::<String>(raw.get()) {
                Ok(m) if !m.trim().is_empty() => {
                    let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
                    (m, start..start + raw.get().len())
                }
                _ => return Err(bad_field("model", "`model` must be a non-empty string")),
            },
        };
        if protocol == Protocol::Responses && head.background.is_some_and(|b| b.get() == "true") {
            // Rare: re-serialize without the field, then read it as usual.
            let mut doc: serde_json::Map<String, serde_json::Value> =
                serde_json::from_slice(&body).map_err(invalid_json)?;
            doc.remove("background");
            let body = Bytes::from(serde_json::to_vec(&doc).map_err(invalid_json)?);
            return Self::parse(protocol, body, headers).map(|r| Self { background_dropped: true, ..r });
        }
        if protocol == Protocol::Responses {
            match head.input.map(|i| i.get().trim_start()) {
                None => return Err(bad_field("input", "`input` is required")),
                Some(i) if i.starts_with('"') && i != "\"\"" => {}
                Some(i) if i.strip_prefix('[').is_some_and(|rest| !rest.trim_start().starts_with(']')) => {}
                Some(_) => return Err(bad_field("input", "`input` must be a non-empty string or array")),
            }
        } else {
            match head.messages.map(|m| m.get().trim_start().strip_prefix('[').map(str::trim_start)) {
                None => return Err(bad_field("messages", "`messages` is required")),
                Some(Some(rest)) if !rest.starts_with(']') => {}
                Some(_) => return Err(bad_field("messages", "`messages` must be a non-empty array")),
            }
        }
        if protocol == Protocol::Anthropic {
            match head.max_tokens.map(|v| v.get().parse::<u64>()) {
                None => return Err(bad_field("max_tokens", "`max_tokens` is required")),
                Some(Ok(n)) if n > 0 => {}
                Some(_) => return Err(bad_field("max_tokens", "`max_tokens` must be a positive integer")),
            }
        }
        let stream = match head.stream.map(|v| v.get()) {
            None | Some("null") | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(bad_field("stream", "`stream` must be a boolean")),
        };
        let ids = BodyIds {
            metadata: head.metadata,
            conversation_id: head.conversation_id,
            session_id: head.session_id,
            prompt_cache_key: head.prompt_cache_key,
        };
        let session_key = session_key(headers).or_else(|| body_session_key(&ids));
        Ok(Self::new(protocol, model, stream, body, Some(model_span), session_key, headers))
    }

    /// A Gemini request: the model and streaming come from the URL, the
    /// body needs a non-empty `contents` list.
    pub fn parse_gemini(body: Bytes, model: &str, stream: bool, headers: &HeaderMap) -> Result<Self, ProxyError> {
        #[derive(Deserialize)]
        struct GeminiHead<'a> {
            #[serde(borrow, default)]
            contents: Option<&'a RawValue>,
        }
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(invalid_json("expected `{`"));
        }
        let head: GeminiHead<'_> = serde_json::from_slice(&body).map_err(invalid_json)?;
        match head.contents.map(|c| c.get().trim_start().strip_prefix('[').map(str::trim_start)) {
            Some(Some(rest)) if !rest.starts_with(']') => {}
            _ => return Err(bad_field("contents", "`contents` must be a non-empty array")),
        }
        Ok(Self::new(Protocol::Gemini, model.to_owned(), stream, body, None, session_key(headers), headers))
    }

    fn new(
        protocol: Protocol,
        model: String,
        stream: bool,
        body: Bytes,
        model_span: Option<Range<usize>>,
        session_key: Option<String>,
        headers: &HeaderMap,
    ) -> Self {
        let mut passthrough_headers = HeaderMap::new();
        for name in PASSTHROUGH_HEADERS {
            for v in headers.get_all(&name) {
                passthrough_headers.append(name.clone(), v.clone());
            }
        }
        Self {
            protocol,
            model,
            stream,
            body,
            model_span,
            ir: OnceLock::new(),
            passthrough_headers,
            session_key,
            session: OnceLock::new(),
            background_dropped: false,
            continuation: false,
        }
    }

    /// This request continued after `prefix`, the assistant text a broken
    /// stream already gave the client (mid-stream recovery, SPEC §R6): the
    /// prefix becomes the assistant's last turn (without trailing
    /// whitespace, which Anthropic refuses there), which an upstream that
    /// prefills continues.
    /// Whether a continuation may be asked for: an upstream that continues
    /// a prefilled answer (Anthropic) refuses one with thinking on (400),
    /// so a request that thinks is never continued — the call would cost
    /// and help nothing.
    pub fn may_continue(&self) -> Result<(), &'static str> {
        match self.ir() {
            Ok(ir) if anthropic::thinking_budget(ir).is_some() => Err(
                "the request asks for extended thinking, and an upstream refuses to continue a prefilled answer with thinking on",
            ),
            _ => Ok(()),
        }
    }

    pub fn continued(&self, prefix: &str) -> Result<Self, ProxyError> {
        let prefix = prefix.trim_end();
        self.derived(&self.model, self.stream, |ir| {
            if !prefix.is_empty() {
                ir.push(ir::Role::Assistant, vec![ir::Part::Text(prefix.to_owned())]);
            }
        })
    }

    /// A request the gateway makes from this one for `model` (a fusion
    /// panel's or judge's, a pipeline step's, a continuation): `edit`
    /// changes its internal representation, and every target's body is
    /// written from that, never spliced from the client's.
    pub fn derived(&self, model: &str, stream: bool, edit: impl FnOnce(&mut ir::Request)) -> Result<Self, ProxyError> {
        let mut ir = self.ir().map_err(|e| bad_field(e.field.clone(), e.to_string()))?.clone();
        edit(&mut ir);
        let ir_cell = OnceLock::new();
        let _ = ir_cell.set(Ok(ir));
        Ok(Self {
            stream,
            body: Bytes::new(),
            model_span: None,
            ir: ir_cell,
            continuation: true,
            ..self.retargeted(model)
        })
    }

    /// This very request for `model` instead (the client's body, spliced as
    /// usual).
    pub fn retargeted(&self, model: &str) -> Self {
        Self {
            protocol: self.protocol,
            model: model.to_owned(),
            stream: self.stream,
            body: self.body.clone(),
            model_span: self.model_span.clone(),
            ir: self.ir.clone(),
            passthrough_headers: self.passthrough_headers.clone(),
            session_key: self.session_key.clone(),
            session: OnceLock::new(),
            background_dropped: false,
            continuation: self.continuation,
        }
    }

    /// Whether the request offers tools the model may call (`tools` and a
    /// `tool_choice` other than none).
    pub fn offers_tools(&self) -> bool {
        self.ir().is_ok_and(|r| !r.tools.is_empty() && r.tool_choice != Some(ir::ToolChoice::None))
    }

    /// The client session (SPEC §R2.2): its headers or body ids, else its
    /// first user text — read through the internal representation, so
    /// only a request without ids that meets a choice of connections
    /// pays for it.
    pub fn session(&self) -> Option<SessionId> {
        *self.session.get_or_init(|| {
            let key = match &self.session_key {
                Some(k) => k.clone(),
                None => first_text_session_key(self.ir().ok()?)?,
            };
            Some(SessionId::of(&key))
        })
    }

    /// The request in the internal representation (read once).
    /// How many tools the request declares (read on first need).
    pub fn tool_count(&self) -> usize {
        self.ir().map_or(0, |r| r.tools.len())
    }

    fn ir(&self) -> Result<&ir::Request, &Invalid> {
        self.ir
            .get_or_init(|| {
                let v = serde_json::from_slice(&self.body)
                    .map_err(|e| Invalid { field: "body".into(), message: e.to_string() })?;
                translate::read_request(self.protocol, &v)
            })
            .as_ref()
    }

    /// The body for a target of protocol `target` serving `model`.
    pub fn body_for(&self, target: Protocol, model: &str) -> Result<Bytes, ProxyError> {
        if target == self.protocol && !self.continuation {
            return Ok(self.spliced(model));
        }
        let ir = self.ir().map_err(|e| bad_field(e.field.clone(), e.to_string()))?;
        let mut req = ir.clone();
        req.model = model.to_owned();
        req.stream = self.stream;
        translate::write_request(target, &req).map_err(|e| bad_field(e.field.clone(), e.to_string()))
    }

    /// The client's body with `model` replaced (as is when the model is
    /// not in the body).
    fn spliced(&self, model: &str) -> Bytes {
        let Some(span) = &self.model_span else { return self.body.clone() };
        let model_json = serde_json::Value::from(model).to_string();
        let mut out = Vec::with_capacity(self.body.len() + model_json.len());
        out.extend_from_slice(&self.body[..span.start]);
        out.extend_from_slice(model_json.as_bytes());
        out.extend_from_slice(&self.body[span.end..]);
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(protocol: Protocol, body: &'static [u8]) -> Result<ClientRequest, ProxyError> {
        ClientRequest::parse(protocol, Bytes::from_static(body), &HeaderMap::new())
    }

    #[test]
    fn rewrites_only_the_model_and_keeps_unknown_fields() {
        let body = r#"{"messages":[{"role":"user","content":"hi"}], "model" : "openai/gpt-4o","x_custom":{"a":[1,2]},"stream":true}"#;
        let req = parse(Protocol::OpenaiChat, body.as_bytes()).unwrap();
        assert!(req.stream);
        assert_eq!(req.model, "openai/gpt-4o");
        let out = req.body_for(Protocol::OpenaiChat, "gpt-4o").unwrap();
        assert_eq!(out, body.replace(r#""openai/gpt-4o""#, r#""gpt-4o""#).as_bytes(), "only the model span changes");
    }

    #[test]
    fn bad_bodies_name_the_field() {
        let param = |p, b| parse(p, b).unwrap_err().param;
        let chat = Protocol::OpenaiChat;
        assert_eq!(param(chat, br#"{"messages":[{}]}"#).as_deref(), Some("model"));
        assert_eq!(param(chat, br#"{"model":"m","messages":[]}"#).as_deref(), Some("messages"));
        assert_eq!(param(chat, br#"{"model":5,"messages":[{}]}"#).as_deref(), Some("model"));
        assert_eq!(param(chat, br#"{"model":"m","messages":[{}],"stream":"yes"}"#).as_deref(), Some("stream"));
        assert_eq!(param(chat, br#"{"model":"m"}"#).as_deref(), Some("messages"));
        assert_eq!(parse(chat, b"{not json").unwrap_err().code, "invalid_json");
        assert_eq!(parse(chat, br#"["m",[{}]]"#).unwrap_err().code, "invalid_json");
        let anthropic = Protocol::Anthropic;
        assert_eq!(param(anthropic, br#"{"model":"m","messages":[{}]}"#).as_deref(), Some("max_tokens"));
        assert_eq!(
            param(anthropic, br#"{"model":"m","messages":[{}],"max_tokens":"9"}"#).as_deref(),
            Some("max_tokens")
        );
        assert!(parse(chat, br#"{"model":"m","messages":[{}]}"#).is_ok(), "max_tokens is optional for OpenAI");
        let responses = Protocol::Responses;
        assert!(parse(responses, br#"{"model":"m","input":"hi"}"#).is_ok());
        assert!(parse(responses, br#"{"model":"m","input":[{"role":"user","content":"hi"}]}"#).is_ok());
        for bad in [
            &br#"{"model":"m"}"#[..],
            br#"{"model":"m","input":""}"#,
            br#"{"model":"m","input":[]}"#,
            br#"{"model":"m","input":5}"#,
        ] {
            assert_eq!(param(responses, bad).as_deref(), Some("input"), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_translated_body_names_the_offending_field() {
        let req =
            parse(Protocol::Anthropic, br#"{"model":"m","max_tokens":5,"messages":[{"role":"robot","content":"x"}]}"#)
                .unwrap();
        let e = req.body_for(Protocol::OpenaiChat, "gpt").unwrap_err();
        assert_eq!((e.status.as_u16(), e.param.as_deref()), (400, Some("messages.0.role")));
        let ok =
            parse(Protocol::Anthropic, br#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}"#)
                .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&ok.body_for(Protocol::OpenaiChat, "gpt").unwrap()).unwrap();
        assert_eq!(v["model"], "gpt");
        assert_eq!(v["messages"][0], serde_json::json!({"role": "user", "content": "x"}));
    }

    #[test]
    fn a_continuation_ends_with_the_prefix_as_the_assistant_turn_for_every_target() {
        let req = parse(
            Protocol::Anthropic,
            br#"{"model":"combo","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        )
        .unwrap();
        let continued = req.continued("Hello there \n").unwrap();
        let body: serde_json::Value =
            serde_json::from_slice(&continued.body_for(Protocol::Anthropic, "claude").unwrap()).unwrap();
        assert_eq!(body["model"], "claude", "written for the target, not spliced from the client's body");
        let last = &body["messages"][1];
        assert_eq!(last["role"], "assistant");
        assert!(last["content"].to_string().contains("Hello there\""), "no trailing whitespace: {last}");
        assert!(body["stream"].as_bool().unwrap());
    }
}
