//! OpenAI Responses (`/v1/responses`, what Codex CLI speaks) ⇄ the
//! internal representation. Conversation state travels in `input` items
//! (`message`, `function_call`, `function_call_output`, `reasoning`); the
//! answer is a list of output items, streamed as `response.*` events in
//! which every item is announced (`output_item.added`), filled by deltas
//! and closed (`output_item.done` with the whole item — Codex records the
//! conversation from those), then `response.completed` carries it all.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::{
    ir::{Event, Message, Part, Request, Response, Role, StopReason, StreamFault, Tool, Usage},
    json::{self as j, invalid, path},
    openai_chat::{image_from_url, image_url, read_tool_choice, text_only, write_tool_choice},
    sse,
};

// ---- requests ---------------------------------------------------------

pub fn read_request(body: &Value) -> j::Result<Request> {
    let o = j::object(body, "body")?;
    let mut req = Request {
        model: j::required_string(o, "model", "")?,
        stream: j::bool_field(o, "stream", "")?.unwrap_or(false),
        max_tokens: j::u64_field(o, "max_output_tokens", "")?,
        temperature: j::f64_field(o, "temperature", "")?,
        top_p: j::f64_field(o, "top_p", "")?,
        parallel_tool_calls: j::bool_field(o, "parallel_tool_calls", "")?,
        ..Request::default()
    };
    if let Some(i) = j::string(o, "instructions", "")? {
        req.system.push(i);
    }
    match j::required(o, "input", "")? {
        Value::String(s) => req.messages.push(Message { role: Role::User, parts: vec![Part::Text(s.clone())] }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                read_item(item, &path("input", i), &mut req)?;
            }
        }
        _ => return Err(invalid("input", "must be a string or a list of items")),
    }
    if let Some(tools) = j::array(o, "tools", "")? {
        for (i, t) in tools.iter().enumerate() {
            let at = path("tools", i);
            let to = j::object(t, &at)?;
            // Built-in tools (web search, file search, …) run at OpenAI.
            if j::string(to, "type", &at)?.as_deref() != Some("function") {
                continue;
            }
            req.tools.push(Tool {
                name: j::required_string(to, "name", &at)?,
                description: j::string(to, "description", &at)?,
                parameters: j::field(to, "parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
        }
    }
    req.tool_choice = j::field(o, "tool_choice").map(read_tool_choice).transpose()?;
    if let Some(r) = j::field(o, "reasoning") {
        req.reasoning_effort = j::string(j::object(r, "reasoning")?, "effort", "reasoning")?;
    }
    Ok(req)
}

fn read_item(item: &Value, at: &str, req: &mut Request) -> j::Result<()> {
    let o = j::object(item, at)?;
    let kind = j::string(o, "type", at)?;
    match kind.as_deref().unwrap_or("message") {
        "message" => {
            let role = j::required_string(o, "role", at)?;
            let parts = read_content(j::required(o, "content", at)?, &path(at, "content"))?;
            match role.as_str() {
                "system" | "developer" => {
                    req.system
                        .extend(parts.into_iter().filter_map(|p| if let Part::Text(t) = p { Some(t) } else { None }));
                }
                "user" => req.push(Role::User, parts),
                "assistant" => req.push(Role::Assistant, parts),
                _ => return Err(invalid(path(at, "role"), "must be user, assistant, system or developer")),
            }
        }
        "function_call" => {
            let call = Part::ToolCall {
                id: j::required_string(o, "call_id", at)?,
                name: j::required_string(o, "name", at)?,
                arguments: j::string(o, "arguments", at)?.unwrap_or_else(|| "{}".into()),
            };
            req.push(Role::Assistant, vec![call]);
        }
        "function_call_output" => {
            let content = match j::required(o, "output", at)? {
                Value::String(s) => vec![Part::Text(s.clone())],
                other => read_content(other, &path(at, "output"))?,
            };
            let call_id = j::required_string(o, "call_id", at)?;
            req.push(Role::User, vec![Part::ToolResult { call_id, content, is_error: false }]);
        }
        "reasoning" => {
            let text: Vec<&str> = j::array(o, "summary", at)?
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("text").and_then(Value::as_str))
                .collect();
            if !text.is_empty() {
                req.push(Role::Assistant, vec![Part::Reasoning { text: text.join("\n"), signature: None }]);
            }
        }
        // Built-in tool calls and references have no counterpart elsewhere.
        _ => {}
    }
    Ok(())
}

fn read_content(c: &Value, at: &str) -> j::Result<Vec<Part>> {
    match c {
        Value::String(s) => Ok(vec![Part::Text(s.clone())]),
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let pat = path(at, i);
                let o = j::object(item, &pat)?;
                match j::required_string(o, "type", &pat)?.as_str() {
                    "input_text" | "output_text" | "text" => {
                        parts.push(Part::Text(j::required_string(o, "text", &pat)?))
                    }
                    "refusal" => parts.push(Part::Text(j::required_string(o, "refusal", &pat)?)),
                    "input_image" => {
                        if let Some(url) = j::string(o, "image_url", &pat)? {
                            parts.push(Part::Image(image_from_url(url)));
                        }
                    }
                    _ => {}
                }
            }
            Ok(parts)
        }
        _ => Err(invalid(at, "must be a string or a list of content parts")),
    }
}

pub fn write_request(req: &Request) -> Value {
    let mut input = Vec::new();
    for m in &req.messages {
        let mut content = Vec::new();
        let flush = |content: &mut Vec<Value>, input: &mut Vec<Value>| {
            if !content.is_empty() {
                let role = if m.role == Role::User { "user" } else { "assistant" };
                input.push(json!({"type": "message", "role": role, "content": std::mem::take(content)}));
            }
        };
        for p in &m.parts {
            match p {
                Part::Text(t) if m.role == Role::User => content.push(json!({"type": "input_text", "text": t})),
                Part::Text(t) => content.push(json!({"type": "output_text", "text": t})),
                Part::Image(src) => content.push(json!({"type": "input_image", "image_url": image_url(src)})),
                Part::ToolCall { id, name, arguments } => {
                    flush(&mut content, &mut input);
                    input.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments}));
                }
                Part::ToolResult { call_id, content: result, .. } => {
                    flush(&mut content, &mut input);
                    input
                        .push(json!({"type": "function_call_output", "call_id": call_id, "output": text_only(result)}));
                }
                // Reasoning goes back only as the provider's own encrypted
                // items, which other protocols do not carry.
                Part::Reasoning { .. } => {}
            }
        }
        flush(&mut content, &mut input);
    }
    let mut o = Map::new();
    o.insert("model".into(), json!(req.model));
    o.insert("input".into(), Value::Array(input));
    if !req.system.is_empty() {
        o.insert("instructions".into(), json!(req.system.join("\n\n")));
    }
    o.insert("store".into(), json!(false));
    if req.stream {
        o.insert("stream".into(), json!(true));
    }
    if let Some(n) = req.max_tokens {
        o.insert("max_output_tokens".into(), json!(n));
    }
    if let Some(t) = req.temperature {
        o.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        o.insert("top_p".into(), json!(p));
    }
    if let Some(e) = &req.reasoning_effort {
        o.insert("reasoning".into(), json!({"effort": e}));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        o.insert("tools".into(), Value::Array(tools));
        if let Some(p) = req.parallel_tool_calls {
            o.insert("parallel_tool_calls".into(), json!(p));
        }
    }
    if let Some(c) = &req.tool_choice {
        o.insert("tool_choice".into(), write_tool_choice(c, |n| json!({"type": "function", "name": n})));
    }
    Value::Object(o)
}

// ---- complete responses -----------------------------------------------

pub fn read_response(body: &Value) -> j::Result<Response> {
    let o = j::object(body, "response")?;
    let mut parts = Vec::new();
    for item in j::array(o, "output", "")?.into_iter().flatten() {
        match item["type"].as_str().unwrap_or_default() {
            "message" => {
                for c in item["content"].as_array().into_iter().flatten() {
                    if let Some(t) = c["text"].as_str().or(c["refusal"].as_str()) {
                        parts.push(Part::Text(t.to_owned()));
                    }
                }
            }
            "reasoning" => {
                let text: Vec<&str> = ["summary", "content"]
                    .iter()
                    .flat_map(|k| item[*k].as_array().into_iter().flatten())
                    .filter_map(|s| s["text"].as_str())
                    .collect();
                if !text.is_empty() {
                    parts.push(Part::Reasoning { text: text.join("\n"), signature: None });
                }
            }
            "function_call" => parts.push(Part::ToolCall {
                id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                name: item["name"].as_str().unwrap_or_default().to_owned(),
                arguments: item["arguments"].as_str().unwrap_or("{}").to_owned(),
            }),
            _ => {}
        }
    }
    let incomplete = o.get("incomplete_details").and_then(|d| d["reason"].as_str());
    let stop = match incomplete {
        Some("max_output_tokens") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::ContentFilter,
        _ if parts.iter().any(|p| matches!(p, Part::ToolCall { .. })) => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    };
    Ok(Response {
        id: j::string(o, "id", "")?.unwrap_or_default(),
        model: j::string(o, "model", "")?.unwrap_or_default(),
        stop,
        usage: o.get("usage").map(read_usage).unwrap_or_default(),
        parts,
    })
}

fn read_usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        cached_tokens: u.pointer("/input_tokens_details/cached_tokens").and_then(Value::as_u64),
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens.unwrap_or(0)},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

/// Responses ids start with `resp_`; other protocols' ids get the prefix.
fn response_id(id: &str) -> String {
    if id.starts_with("resp_") {
        id.to_owned()
    } else {
        format!("resp_{}", id.trim_start_matches("chatcmpl-").trim_start_matches("msg_"))
    }
}

/// The response object around `output`.
fn response_object(
    id: &str,
    model: &str,
    created: i64,
    stop: Option<StopReason>,
    output: Vec<Value>,
    usage: Option<&Usage>,
) -> Value {
    let (status, incomplete) = match stop {
        None => ("in_progress", Value::Null),
        Some(StopReason::MaxTokens) => ("incomplete", json!({"reason": "max_output_tokens"})),
        Some(StopReason::ContentFilter) => ("incomplete", json!({"reason": "content_filter"})),
        Some(_) => ("completed", Value::Null),
    };
    json!({
        "id": response_id(id), "object": "response", "created_at": created, "status": status,
        "model": model, "output": output, "incomplete_details": incomplete, "error": null,
        "usage": usage.map(usage_json),
    })
}

pub fn write_response(r: &Response, created: i64) -> Value {
    let mut output = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    let flush = |texts: &mut Vec<&str>, output: &mut Vec<Value>| {
        if !texts.is_empty() {
            let n = output.len();
            output.push(message_item(&format!("msg_{n}"), &texts.concat(), "completed"));
            texts.clear();
        }
    };
    for p in &r.parts {
        match p {
            Part::Text(t) => texts.push(t),
            Part::Reasoning { text, .. } => {
                flush(&mut texts, &mut output);
                let n = output.len();
                output.push(reasoning_item(&format!("rs_{n}"), text));
            }
            Part::ToolCall { id, name, arguments } => {
                flush(&mut texts, &mut output);
                let n = output.len();
                output.push(call_item(&format!("fc_{n}"), id, name, arguments, "completed"));
            }
            Part::Image(_) | Part::ToolResult { .. } => {}
        }
    }
    flush(&mut texts, &mut output);
    response_object(&r.id, &r.model, created, Some(r.stop), output, Some(&r.usage))
}

fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({"type": "message", "id": id, "status": status, "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn reasoning_item(id: &str, text: &str) -> Value {
    json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": text}]})
}

fn call_item(id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments, "status": status})
}

// ---- streams ------------------------------------------------------------

/// Upstream `response.*` events → internal events.
#[derive(Default)]
pub struct StreamReader {
    /// Item id → tool-call index.
    calls: Vec<(String, usize)>,
}

impl StreamReader {
    pub fn read(&mut self, ev: &sse::SseEvent) -> Result<Vec<Event>, StreamFault> {
        let Ok(v) = serde_json::from_str::<Value>(&ev.data) else { return Ok(Vec::new()) };
        let kind = v["type"].as_str().or(ev.event.as_deref()).unwrap_or_default();
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let mut out = Vec::new();
        match kind {
            "response.created" => out.push(Event::Start {
                id: v["response"]["id"].as_str().unwrap_or_default().to_owned(),
                model: v["response"]["model"].as_str().unwrap_or_default().to_owned(),
            }),
            "response.output_item.added" if v["item"]["type"] == "function_call" => {
                let index = self.calls.len();
                self.calls.push((v["item"]["id"].as_str().unwrap_or_default().to_owned(), index));
                out.push(Event::ToolCallStart {
                    index,
                    id: v["item"]["call_id"].as_str().unwrap_or_default().to_owned(),
                    name: v["item"]["name"].as_str().unwrap_or_default().to_owned(),
                });
            }
            "response.function_call_arguments.delta" => {
                let item = s("item_id");
                if let Some((_, index)) = self.calls.iter().find(|(id, _)| *id == item) {
                    out.push(Event::ToolCallArguments { index: *index, delta: s("delta") });
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => out.push(Event::Text(s("delta"))),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.push(Event::Reasoning(s("delta")));
            }
            "response.completed" | "response.incomplete" => {
                let r = read_response(&v["response"]).unwrap_or_default();
                out.push(Event::Usage(r.usage));
                let called = !self.calls.is_empty();
                out.push(Event::Stop(if called && r.stop == StopReason::EndTurn {
                    StopReason::ToolUse
                } else {
                    r.stop
                }));
            }
            "response.failed" | "error" => {
                let message = v.pointer("/response/error/message").or(v.get("message")).and_then(Value::as_str);
                return Err(StreamFault(message.unwrap_or("upstream stream error").to_owned()));
            }
            _ => {}
        }
        Ok(out)
    }
}

enum Item {
    Reasoning { id: String, text: String },
    Message { id: String, text: String },
    Call { id: String, call_id: String, name: String, arguments: String, tool: usize },
}

/// Internal events → `response.*` events, announcing, filling and closing
/// one output item at a time; `response.completed` (or `.incomplete`)
/// repeats every finished item and carries the usage.
pub struct StreamWriter {
    id: String,
    model: String,
    created: i64,
    seq: u64,
    started: bool,
    open: Option<Item>,
    done: Vec<Value>,
    stop: Option<StopReason>,
    usage: Option<Usage>,
}

impl StreamWriter {
    pub fn new(created: i64) -> Self {
        Self {
            id: String::new(),
            model: String::new(),
            created,
            seq: 0,
            started: false,
            open: None,
            done: Vec::new(),
            stop: None,
            usage: None,
        }
    }

    fn emit(&mut self, kind: &str, mut data: Value, out: &mut Vec<u8>) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.extend_from_slice(&sse::frame(Some(kind), &data.to_string()));
    }

    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let r = response_object(&self.id, &self.model, self.created, None, Vec::new(), None);
        self.emit("response.created", json!({"response": r}), out);
        self.emit("response.in_progress", json!({"response": r}), out);
    }

    fn output_index(&self) -> usize {
        self.done.len()
    }

    /// Announces a new item (the previous one is closed by then, so
    /// that its id and output index agree).
    fn open_item(&mut self, item: Item, out: &mut Vec<u8>) {
        let index = self.output_index();
        let added = match &item {
            Item::Reasoning { id, .. } => json!({"type": "reasoning", "id": id, "summary": []}),
            Item::Message { id, .. } => {
                json!({"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []})
            }
            Item::Call { id, call_id, name, .. } => call_item(id, call_id, name, "", "in_progress"),
        };
        self.emit("response.output_item.added", json!({"output_index": index, "item": added}), out);
        match &item {
            Item::Reasoning { id, .. } => {
                let part = json!({"item_id": id, "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}});
                self.emit("response.reasoning_summary_part.added", part, out);
            }
            Item::Message { id, .. } => {
                let part = json!({"item_id": id, "output_index": index, "content_index": 0,
                                  "part": {"type": "output_text", "text": "", "annotations": []}});
                self.emit("response.content_part.added", part, out);
            }
            Item::Call { .. } => {}
        }
        self.open = Some(item);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        let Some(item) = self.open.take() else { return };
        let index = self.output_index();
        let done = match item {
            Item::Reasoning { id, text } => {
                let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
                self.emit("response.reasoning_summary_text.done", with(&at, "text", &text), out);
                self.emit(
                    "response.reasoning_summary_part.done",
                    with(&at, "part", &json!({"type": "summary_text", "text": text})),
                    out,
                );
                reasoning_item(&id, &text)
            }
            Item::Message { id, text } => {
                let at = json!({"item_id": id, "output_index": index, "content_index": 0});
                self.emit("response.output_text.done", with(&at, "text", &text), out);
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                self.emit("response.content_part.done", with(&at, "part", &part), out);
                message_item(&id, &text, "completed")
            }
            Item::Call { id, call_id, name, arguments, .. } => {
                let at = json!({"item_id": id, "output_index": index});
                self.emit("response.function_call_arguments.done", with(&at, "arguments", &arguments), out);
                call_item(&id, &call_id, &name, &arguments, "completed")
            }
        };
        self.emit("response.output_item.done", json!({"output_index": index, "item": done}), out);
        self.done.push(done);
    }

    pub fn write(&mut self, ev: Event) -> Option<Bytes> {
        let mut out = Vec::new();
        match ev {
            Event::Start { id, model } => {
                self.id = id;
                self.model = model;
                self.start(&mut out);
            }
            Event::Text(t) => {
                self.start(&mut out);
                if !matches!(self.open, Some(Item::Message { .. })) {
                    self.close(&mut out);
                    let id = format!("msg_{}", self.output_index());
                    self.open_item(Item::Message { id, text: String::new() }, &mut out);
                }
                if let Some(Item::Message { id, text }) = &mut self.open {
                    text.push_str(&t);
                    let d = json!({"item_id": id, "output_index": self.done.len(), "content_index": 0, "delta": t});
                    self.emit("response.output_text.delta", d, &mut out);
                }
            }
            Event::Reasoning(r) => {
                self.start(&mut out);
                if !matches!(self.open, Some(Item::Reasoning { .. })) {
                    self.close(&mut out);
                    let id = format!("rs_{}", self.output_index());
                    self.open_item(Item::Reasoning { id, text: String::new() }, &mut out);
                }
                if let Some(Item::Reasoning { id, text }) = &mut self.open {
                    text.push_str(&r);
                    let d = json!({"item_id": id, "output_index": self.done.len(), "summary_index": 0, "delta": r});
                    self.emit("response.reasoning_summary_text.delta", d, &mut out);
                }
            }
            Event::ReasoningSignature(_) => {}
            Event::ToolCallStart { index, id: call_id, name } => {
                self.start(&mut out);
                self.close(&mut out);
                let id = format!("fc_{}", self.output_index());
                self.open_item(Item::Call { id, call_id, name, arguments: String::new(), tool: index }, &mut out);
            }
            Event::ToolCallArguments { index, delta } => {
                if let Some(Item::Call { id, arguments, tool, .. }) = &mut self.open
                    && *tool == index
                {
                    arguments.push_str(&delta);
                    let d = json!({"item_id": id, "output_index": self.done.len(), "delta": delta});
                    self.emit("response.function_call_arguments.delta", d, &mut out);
                }
            }
            Event::Usage(u) => self.usage = Some(u),
            Event::Stop(s) => self.stop = Some(s),
        }
        (!out.is_empty()).then(|| Bytes::from(out))
    }

    /// Closes the open item, then `response.completed` / `.incomplete`.
    pub fn finish(&mut self) -> Bytes {
        let mut out = Vec::new();
        self.start(&mut out);
        self.close(&mut out);
        let stop = self.stop.unwrap_or_default();
        let r =
            response_object(&self.id, &self.model, self.created, Some(stop), self.done.clone(), self.usage.as_ref());
        let kind = if r["status"] == "incomplete" { "response.incomplete" } else { "response.completed" };
        self.emit(kind, json!({"response": r}), &mut out);
        Bytes::from(out)
    }

    /// `response.failed`: the stream ends with the error.
    pub fn fail(&mut self, message: &str) -> Bytes {
        let mut out = Vec::new();
        self.start(&mut out);
        let mut r = response_object(&self.id, &self.model, self.created, None, self.done.clone(), self.usage.as_ref());
        r["status"] = json!("failed");
        r["error"] = json!({"code": "server_error", "message": message});
        self.emit("response.failed", json!({"response": r}), &mut out);
        Bytes::from(out)
    }
}

/// A lone `response.failed` event (for a stream the upstream started).
pub fn failed_event(message: &str) -> Bytes {
    failed_event_with_code("server_error", message)
}

/// A `response.failed` event carrying the gateway's error `code`.
pub fn failed_event_with_code(code: &str, message: &str) -> Bytes {
    let data = json!({"type": "response.failed", "response": {"object": "response", "status": "failed",
                      "error": {"code": code, "message": message}}});
    sse::frame(Some("response.failed"), &data.to_string())
}

/// `base` with one more field.
fn with(base: &Value, key: &str, value: &impl serde::Serialize) -> Value {
    let mut v = base.clone();
    v[key] = json!(value);
    v
}
