//! Anthropic Messages (`/v1/messages`) ⇄ the internal representation:
//! requests (system prompt also from `role:"system"` entries inside
//! `messages`, as Claude Code sends them), complete messages, and the
//! `message_start` … `message_stop` event stream with its content blocks.
//! Anthropic counts `input_tokens` without the cached part; the internal
//! usage counts all input, with `cached_tokens` the cache reads.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::{
    ir::{Event, ImageSource, Part, Request, Response, Role, StopReason, StreamFault, Tool, ToolChoice, Usage},
    json::{self as j, invalid, path},
    sse,
};

/// `max_tokens` sent upstream when the client gave none (Anthropic
/// requires one; every current model allows this many).
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

// ---- requests ---------------------------------------------------------

pub fn read_request(body: &Value) -> j::Result<Request> {
    let o = j::object(body, "body")?;
    let mut req = Request {
        model: j::required_string(o, "model", "")?,
        // Required by /v1/messages (checked there), not by count_tokens.
        max_tokens: j::u64_field(o, "max_tokens", "")?,
        stream: j::bool_field(o, "stream", "")?.unwrap_or(false),
        temperature: j::f64_field(o, "temperature", "")?,
        top_p: j::f64_field(o, "top_p", "")?,
        stop: j::strings(o, "stop_sequences", "")?,
        ..Request::default()
    };
    if let Some(s) = j::field(o, "system") {
        req.system.extend(text_blocks(s, "system")?);
    }
    let messages = j::array(o, "messages", "")?.ok_or_else(|| invalid("messages", "is required"))?;
    for (i, m) in messages.iter().enumerate() {
        let at = path("messages", i);
        let mo = j::object(m, &at)?;
        let role = j::required_string(mo, "role", &at)?;
        let content = j::required(mo, "content", &at)?;
        let role = match role.as_str() {
            "system" => {
                req.system.extend(text_blocks(content, &path(&at, "content"))?);
                continue;
            }
            "user" => Role::User,
            "assistant" => Role::Assistant,
            _ => return Err(invalid(path(&at, "role"), "must be user or assistant")),
        };
        let parts = read_blocks(content, &path(&at, "content"))?;
        req.push(role, parts);
    }
    if let Some(tools) = j::array(o, "tools", "")? {
        for (i, t) in tools.iter().enumerate() {
            let at = path("tools", i);
            let to = j::object(t, &at)?;
            // Server tools (web search, code execution, …) run at Anthropic
            // and have no counterpart elsewhere.
            if j::string(to, "type", &at)?.is_some_and(|k| k != "custom") {
                continue;
            }
            req.tools.push(Tool {
                name: j::required_string(to, "name", &at)?,
                description: j::string(to, "description", &at)?,
                parameters: j::field(to, "input_schema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
        }
    }
    if let Some(c) = j::field(o, "tool_choice") {
        let co = j::object(c, "tool_choice")?;
        req.tool_choice = Some(match j::required_string(co, "type", "tool_choice")?.as_str() {
            "auto" => ToolChoice::Auto,
            "any" => ToolChoice::Required,
            "none" => ToolChoice::None,
            "tool" => ToolChoice::Named(j::required_string(co, "name", "tool_choice")?),
            _ => return Err(invalid("tool_choice.type", "must be auto, any, tool or none")),
        });
        if j::bool_field(co, "disable_parallel_tool_use", "tool_choice")? == Some(true) {
            req.parallel_tool_calls = Some(false);
        }
    }
    if let Some(t) = j::field(o, "thinking") {
        let to = j::object(t, "thinking")?;
        if j::string(to, "type", "thinking")?.as_deref() == Some("enabled") {
            req.reasoning_budget = j::u64_field(to, "budget_tokens", "thinking")?;
        }
    }
    Ok(req)
}

/// A string, or text blocks (other blocks ignored), as texts.
fn text_blocks(v: &Value, at: &str) -> j::Result<Vec<String>> {
    Ok(read_blocks(v, at)?.into_iter().filter_map(|p| if let Part::Text(t) = p { Some(t) } else { None }).collect())
}

fn read_blocks(v: &Value, at: &str) -> j::Result<Vec<Part>> {
    match v {
        Value::String(s) => Ok(vec![Part::Text(s.clone())]),
        Value::Array(blocks) => {
            blocks.iter().enumerate().filter_map(|(i, b)| read_block(b, &path(at, i)).transpose()).collect()
        }
        _ => Err(invalid(at, "must be a string or a list of content blocks")),
    }
}

fn read_block(b: &Value, at: &str) -> j::Result<Option<Part>> {
    let o = j::object(b, at)?;
    Ok(match j::required_string(o, "type", at)?.as_str() {
        "text" => Some(Part::Text(j::required_string(o, "text", at)?)),
        "image" => {
            let sat = path(at, "source");
            let s = j::object(j::required(o, "source", at)?, &sat)?;
            Some(Part::Image(match j::required_string(s, "type", &sat)?.as_str() {
                "base64" => ImageSource::Base64 {
                    media_type: j::required_string(s, "media_type", &sat)?,
                    data: j::required_string(s, "data", &sat)?,
                },
                "url" => ImageSource::Url(j::required_string(s, "url", &sat)?),
                _ => return Err(invalid(path(&sat, "type"), "must be base64 or url")),
            }))
        }
        "tool_use" => Some(Part::ToolCall {
            id: j::required_string(o, "id", at)?,
            name: j::required_string(o, "name", at)?,
            arguments: j::field(o, "input").map_or_else(|| "{}".to_owned(), Value::to_string),
        }),
        "tool_result" => Some(Part::ToolResult {
            call_id: j::required_string(o, "tool_use_id", at)?,
            content: j::field(o, "content")
                .map(|c| read_blocks(c, &path(at, "content")))
                .transpose()?
                .unwrap_or_default(),
            is_error: j::bool_field(o, "is_error", at)?.unwrap_or(false),
        }),
        "thinking" => Some(Part::Reasoning {
            text: j::string(o, "thinking", at)?.unwrap_or_default(),
            signature: j::string(o, "signature", at)?,
        }),
        // redacted_thinking, documents, search results, server tool blocks.
        _ => None,
    })
}

pub fn write_request(req: &Request) -> Value {
    let mut o = Map::new();
    o.insert("model".into(), json!(req.model));
    let budget = req.reasoning_budget.or_else(|| req.reasoning_effort.as_deref().map(budget_for_effort));
    let max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    // With thinking on, the answer needs room beyond the thinking budget.
    let max_tokens = budget.map_or(max_tokens, |b| max_tokens.max(b + DEFAULT_MAX_TOKENS));
    o.insert("max_tokens".into(), json!(max_tokens));
    if !req.system.is_empty() {
        o.insert("system".into(), json!(req.system.join("\n\n")));
    }
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let role = if m.role == Role::User { "user" } else { "assistant" };
            json!({"role": role, "content": m.parts.iter().filter_map(write_block).collect::<Vec<_>>()})
        })
        .filter(|m| m["content"].as_array().is_some_and(|c| !c.is_empty()))
        .collect();
    o.insert("messages".into(), Value::Array(messages));
    if req.stream {
        o.insert("stream".into(), json!(true));
    }
    if let Some(t) = req.temperature.filter(|_| budget.is_none()) {
        o.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p.filter(|_| budget.is_none()) {
        o.insert("top_p".into(), json!(p));
    }
    if !req.stop.is_empty() {
        o.insert("stop_sequences".into(), json!(req.stop));
    }
    if let Some(b) = budget {
        o.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": b}));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut v = json!({"name": t.name, "input_schema": t.parameters});
                if let Some(d) = &t.description {
                    v["description"] = json!(d);
                }
                v
            })
            .collect();
        o.insert("tools".into(), Value::Array(tools));
    }
    let mut choice = req.tool_choice.as_ref().map(|c| match c {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Named(n) => json!({"type": "tool", "name": n}),
    });
    if req.parallel_tool_calls == Some(false) && !req.tools.is_empty() {
        choice.get_or_insert_with(|| json!({"type": "auto"}))["disable_parallel_tool_use"] = json!(true);
    }
    if let Some(c) = choice.filter(|_| !req.tools.is_empty()) {
        o.insert("tool_choice".into(), c);
    }
    Value::Object(o)
}

/// Thinking budget for an OpenAI-style reasoning effort.
fn budget_for_effort(effort: &str) -> u64 {
    match effort {
        "minimal" | "low" => 1024,
        "medium" => 4096,
        _ => 16_384,
    }
}

fn write_block(p: &Part) -> Option<Value> {
    Some(match p {
        Part::Text(t) if t.is_empty() => return None,
        Part::Text(t) => json!({"type": "text", "text": t}),
        Part::Image(ImageSource::Base64 { media_type, data }) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        Part::Image(ImageSource::Url(url)) => json!({"type": "image", "source": {"type": "url", "url": url}}),
        Part::ToolCall { id, name, arguments } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": arguments_object(arguments)})
        }
        Part::ToolResult { call_id, content, is_error } => {
            let content: Vec<Value> = content.iter().filter_map(write_block).collect();
            json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error})
        }
        // Anthropic only takes back thinking it signed itself.
        Part::Reasoning { text, signature: Some(sig) } => {
            json!({"type": "thinking", "thinking": text, "signature": sig})
        }
        Part::Reasoning { signature: None, .. } => return None,
    })
}

/// Tool-call arguments as an object (a model's malformed JSON becomes `{}`
/// rather than a request Anthropic would refuse).
fn arguments_object(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments).ok().filter(Value::is_object).unwrap_or_else(|| json!({}))
}

// ---- complete responses -----------------------------------------------

pub fn read_response(body: &Value) -> j::Result<Response> {
    let o = j::object(body, "response")?;
    let content = j::array(o, "content", "")?.map(Vec::as_slice).unwrap_or_default();
    let parts = content
        .iter()
        .enumerate()
        .filter_map(|(i, b)| read_block(b, &path("content", i)).transpose())
        .collect::<j::Result<Vec<_>>>()?;
    Ok(Response {
        id: j::string(o, "id", "")?.unwrap_or_default(),
        model: j::string(o, "model", "")?.unwrap_or_default(),
        stop: j::string(o, "stop_reason", "")?.as_deref().map_or(StopReason::EndTurn, stop_from),
        usage: j::field(o, "usage").map(read_usage).unwrap_or_default(),
        parts,
    })
}

fn read_usage(u: &Value) -> Usage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let cached = n("cache_read_input_tokens");
    Usage {
        input_tokens: n("input_tokens").unwrap_or(0)
            + cached.unwrap_or(0)
            + n("cache_creation_input_tokens").unwrap_or(0),
        output_tokens: n("output_tokens").unwrap_or(0),
        cached_tokens: cached,
    }
}

fn usage_json(u: &Usage) -> Value {
    let cached = u.cached_tokens.unwrap_or(0);
    json!({
        "input_tokens": u.input_tokens.saturating_sub(cached),
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    })
}

fn stop_from(reason: &str) -> StopReason {
    match reason {
        "max_tokens" => StopReason::MaxTokens,
        "tool_use" => StopReason::ToolUse,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

fn stop_name(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::ToolUse => "tool_use",
        StopReason::StopSequence => "stop_sequence",
        StopReason::ContentFilter => "refusal",
    }
}

pub fn write_response(r: &Response) -> Value {
    json!({
        "id": message_id(&r.id),
        "type": "message",
        "role": "assistant",
        "model": r.model,
        "content": r.parts.iter().filter_map(write_response_block).collect::<Vec<_>>(),
        "stop_reason": stop_name(r.stop),
        "stop_sequence": null,
        "usage": usage_json(&r.usage),
    })
}

/// Like [`write_block`], but unsigned reasoning is still shown to the
/// client (it came from another protocol's model).
fn write_response_block(p: &Part) -> Option<Value> {
    match p {
        Part::Reasoning { text, signature: None } => {
            Some(json!({"type": "thinking", "thinking": text, "signature": ""}))
        }
        other => write_block(other),
    }
}

/// Anthropic ids start with `msg_`; other protocols' ids get the prefix.
fn message_id(id: &str) -> String {
    if id.starts_with("msg_") { id.to_owned() } else { format!("msg_{}", id.trim_start_matches("chatcmpl-")) }
}

// ---- streams ------------------------------------------------------------

/// Upstream events → internal events.
#[derive(Default)]
pub struct StreamReader {
    /// Content block index → tool-call index, for `input_json_delta`.
    tool_blocks: Vec<(u64, usize)>,
    usage: Usage,
}

impl StreamReader {
    pub fn read(&mut self, ev: &sse::SseEvent) -> Result<Vec<Event>, StreamFault> {
        let Ok(v) = serde_json::from_str::<Value>(&ev.data) else { return Ok(Vec::new()) };
        let kind = ev.event.as_deref().or(v["type"].as_str()).unwrap_or_default();
        let index = v["index"].as_u64().unwrap_or(0);
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                let m = &v["message"];
                out.push(Event::Start {
                    id: m["id"].as_str().unwrap_or_default().to_owned(),
                    model: m["model"].as_str().unwrap_or_default().to_owned(),
                });
                self.usage = read_usage(&m["usage"]);
            }
            "content_block_start" => {
                let b = &v["content_block"];
                if b["type"] == "tool_use" {
                    let tool = self.tool_blocks.len();
                    self.tool_blocks.push((index, tool));
                    out.push(Event::ToolCallStart {
                        index: tool,
                        id: b["id"].as_str().unwrap_or_default().to_owned(),
                        name: b["name"].as_str().unwrap_or_default().to_owned(),
                    });
                }
            }
            "content_block_delta" => {
                let d = &v["delta"];
                let s = |k: &str| d[k].as_str().unwrap_or_default().to_owned();
                match d["type"].as_str().unwrap_or_default() {
                    "text_delta" => out.push(Event::Text(s("text"))),
                    "thinking_delta" => out.push(Event::Reasoning(s("thinking"))),
                    "signature_delta" => out.push(Event::ReasoningSignature(s("signature"))),
                    "input_json_delta" => {
                        if let Some((_, tool)) = self.tool_blocks.iter().find(|(b, _)| *b == index) {
                            out.push(Event::ToolCallArguments { index: *tool, delta: s("partial_json") });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                let u = &v["usage"];
                if let Some(o) = u["output_tokens"].as_u64() {
                    self.usage.output_tokens = o;
                }
                if u.get("input_tokens").is_some() {
                    let later = read_usage(u);
                    self.usage.input_tokens = later.input_tokens.max(self.usage.input_tokens);
                    self.usage.cached_tokens = later.cached_tokens.or(self.usage.cached_tokens);
                }
                out.push(Event::Usage(self.usage));
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    out.push(Event::Stop(stop_from(r)));
                }
            }
            "error" => {
                let message = v["error"]["message"].as_str().unwrap_or("upstream stream error");
                return Err(StreamFault(message.to_owned()));
            }
            _ => {}
        }
        Ok(out)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    Tool(usize),
}

/// Internal events → Anthropic frames, opening and closing content blocks
/// as the kind of content changes. The closing `message_delta` waits for
/// the end of the stream so that it carries the final usage.
#[derive(Default)]
pub struct StreamWriter {
    started: bool,
    open: Option<(Block, usize)>,
    next_index: usize,
    tool_blocks: Vec<(usize, usize)>,
    stop: Option<StopReason>,
    usage: Usage,
}

impl StreamWriter {
    pub fn write(&mut self, ev: Event) -> Option<Bytes> {
        let mut out = Vec::new();
        match ev {
            Event::Start { id, model } => self.start(&id, &model, &mut out),
            Event::Text(t) => {
                let i = self.block(Block::Text, json!({"type": "text", "text": ""}), &mut out);
                delta(i, json!({"type": "text_delta", "text": t}), &mut out);
            }
            Event::Reasoning(r) => {
                let i =
                    self.block(Block::Thinking, json!({"type": "thinking", "thinking": "", "signature": ""}), &mut out);
                delta(i, json!({"type": "thinking_delta", "thinking": r}), &mut out);
            }
            Event::ReasoningSignature(s) => {
                let i =
                    self.block(Block::Thinking, json!({"type": "thinking", "thinking": "", "signature": ""}), &mut out);
                delta(i, json!({"type": "signature_delta", "signature": s}), &mut out);
            }
            Event::ToolCallStart { index, id, name } => {
                self.close(&mut out);
                let i = self.block(
                    Block::Tool(index),
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    &mut out,
                );
                self.tool_blocks.push((index, i));
            }
            Event::ToolCallArguments { index, delta: d } => {
                self.ensure_started(&mut out);
                if let Some((_, i)) = self.tool_blocks.iter().find(|(t, _)| *t == index) {
                    delta(*i, json!({"type": "input_json_delta", "partial_json": d}), &mut out);
                }
            }
            Event::Usage(u) => self.usage = u,
            Event::Stop(s) => self.stop = Some(s),
        }
        (!out.is_empty()).then(|| Bytes::from(out))
    }

    fn start(&mut self, id: &str, model: &str, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let m = json!({"type": "message_start", "message": {"id": message_id(id), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage_json(&self.usage)}});
        out.extend_from_slice(&sse::frame(Some("message_start"), &m.to_string()));
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        self.start("msg_omniroute", "", out);
    }

    /// The index of an open block of this kind, opening one if needed.
    fn block(&mut self, kind: Block, start: Value, out: &mut Vec<u8>) -> usize {
        self.ensure_started(out);
        if let Some((open, i)) = self.open
            && open == kind
        {
            return i;
        }
        self.close(out);
        let i = self.next_index;
        self.next_index += 1;
        self.open = Some((kind, i));
        let ev = json!({"type": "content_block_start", "index": i, "content_block": start});
        out.extend_from_slice(&sse::frame(Some("content_block_start"), &ev.to_string()));
        i
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if let Some((_, i)) = self.open.take() {
            let ev = json!({"type": "content_block_stop", "index": i});
            out.extend_from_slice(&sse::frame(Some("content_block_stop"), &ev.to_string()));
        }
    }

    /// Closes the open block, then `message_delta` and `message_stop`.
    pub fn finish(&mut self) -> Bytes {
        let mut out = Vec::new();
        self.ensure_started(&mut out);
        self.close(&mut out);
        let d = json!({"type": "message_delta", "delta": {"stop_reason": stop_name(self.stop.unwrap_or_default()), "stop_sequence": null},
                       "usage": usage_json(&self.usage)});
        out.extend_from_slice(&sse::frame(Some("message_delta"), &d.to_string()));
        out.extend_from_slice(&sse::frame(Some("message_stop"), r#"{"type":"message_stop"}"#));
        Bytes::from(out)
    }

    /// The stream failed mid-way: an `error` event ends it.
    pub fn fail(&mut self, kind: &str, message: &str) -> Bytes {
        sse::frame(Some("error"), &error_body(kind, message).to_string())
    }
}

fn delta(index: usize, d: Value, out: &mut Vec<u8>) {
    let ev = json!({"type": "content_block_delta", "index": index, "delta": d});
    out.extend_from_slice(&sse::frame(Some("content_block_delta"), &ev.to_string()));
}

/// The Anthropic error envelope.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
