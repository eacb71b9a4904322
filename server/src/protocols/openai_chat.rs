//! OpenAI Chat Completions (`/v1/chat/completions`) ⇄ the internal
//! representation: requests, complete responses, and stream chunks
//! (`data: {chunk}` … `data: [DONE]`). Reasoning travels as
//! `reasoning_content` (the field OpenAI-compatible reasoning models use).

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::{
    ir::{Event, ImageSource, Part, Request, Response, Role, StopReason, Tool, ToolChoice, Usage},
    json::{self as j, Invalid, invalid, path},
    sse,
};

// ---- requests ---------------------------------------------------------

pub fn read_request(body: &Value) -> j::Result<Request> {
    let o = j::object(body, "body")?;
    let mut req = Request {
        model: j::required_string(o, "model", "")?,
        stream: j::bool_field(o, "stream", "")?.unwrap_or(false),
        max_tokens: match j::u64_field(o, "max_completion_tokens", "")? {
            Some(n) => Some(n),
            None => j::u64_field(o, "max_tokens", "")?,
        },
        temperature: j::f64_field(o, "temperature", "")?,
        top_p: j::f64_field(o, "top_p", "")?,
        stop: j::strings(o, "stop", "")?,
        reasoning_effort: j::string(o, "reasoning_effort", "")?,
        parallel_tool_calls: j::bool_field(o, "parallel_tool_calls", "")?,
        ..Request::default()
    };
    let messages = j::array(o, "messages", "")?.ok_or_else(|| invalid("messages", "is required"))?;
    for (i, m) in messages.iter().enumerate() {
        read_message(m, &path("messages", i), &mut req)?;
    }
    if let Some(tools) = j::array(o, "tools", "")? {
        req.tools = tools.iter().enumerate().map(|(i, t)| read_tool(t, &path("tools", i))).collect::<j::Result<_>>()?;
    }
    req.tool_choice = j::field(o, "tool_choice").map(read_tool_choice).transpose()?;
    Ok(req)
}

fn read_message(m: &Value, at: &str, req: &mut Request) -> j::Result<()> {
    let o = j::object(m, at)?;
    let role = j::required_string(o, "role", at)?;
    let content = j::field(o, "content");
    match role.as_str() {
        "system" | "developer" => {
            let parts = content.map(|c| read_content(c, &path(at, "content"))).transpose()?.unwrap_or_default();
            req.system.extend(parts.into_iter().filter_map(|p| if let Part::Text(t) = p { Some(t) } else { None }));
        }
        "user" => {
            let parts = content.map(|c| read_content(c, &path(at, "content"))).transpose()?.unwrap_or_default();
            req.push(Role::User, parts);
        }
        "assistant" => {
            let mut parts = Vec::new();
            if let Some(r) = j::string(o, "reasoning_content", at)?.filter(|r| !r.is_empty()) {
                parts.push(Part::Reasoning { text: r, signature: None });
            }
            if let Some(c) = content {
                parts.extend(read_content(c, &path(at, "content"))?);
            }
            for (k, call) in j::array(o, "tool_calls", at)?.into_iter().flatten().enumerate() {
                let at = path(&path(at, "tool_calls"), k);
                let c = j::object(call, &at)?;
                let f = j::object(j::required(c, "function", &at)?, &path(&at, "function"))?;
                parts.push(Part::ToolCall {
                    id: j::required_string(c, "id", &at)?,
                    name: j::required_string(f, "name", &path(&at, "function"))?,
                    arguments: j::string(f, "arguments", &path(&at, "function"))?.unwrap_or_else(|| "{}".into()),
                });
            }
            req.push(Role::Assistant, parts);
        }
        "tool" | "function" => {
            let call_id = j::string(o, "tool_call_id", at)?
                .or(j::string(o, "name", at)?)
                .ok_or_else(|| invalid(path(at, "tool_call_id"), "is required"))?;
            let content = content.map(|c| read_content(c, &path(at, "content"))).transpose()?.unwrap_or_default();
            req.push(Role::User, vec![Part::ToolResult { call_id, content, is_error: false }]);
        }
        _ => return Err(invalid(path(at, "role"), "must be system, developer, user, assistant or tool")),
    }
    Ok(())
}

fn read_content(c: &Value, at: &str) -> j::Result<Vec<Part>> {
    match c {
        Value::String(s) => Ok(vec![Part::Text(s.clone())]),
        Value::Array(items) => {
            items.iter().enumerate().filter_map(|(i, item)| read_content_part(item, &path(at, i)).transpose()).collect()
        }
        _ => Err(invalid(at, "must be a string or a list of content parts")),
    }
}

fn read_content_part(item: &Value, at: &str) -> j::Result<Option<Part>> {
    let o = j::object(item, at)?;
    let kind = j::required_string(o, "type", at)?;
    Ok(match kind.as_str() {
        "text" | "input_text" | "output_text" => Some(Part::Text(j::required_string(o, "text", at)?)),
        "image_url" => {
            let url = match j::required(o, "image_url", at)? {
                Value::String(s) => s.clone(),
                v => j::required_string(j::object(v, &path(at, "image_url"))?, "url", &path(at, "image_url"))?,
            };
            Some(Part::Image(image_from_url(url)))
        }
        // Audio and files have no counterpart in the other protocols.
        _ => None,
    })
}

/// A `data:` URL becomes inline base64; anything else stays a URL.
pub fn image_from_url(url: String) -> ImageSource {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((meta, data)) = rest.split_once(',')
        && let Some(media_type) = meta.strip_suffix(";base64")
    {
        return ImageSource::Base64 { media_type: media_type.to_owned(), data: data.to_owned() };
    }
    ImageSource::Url(url)
}

pub fn image_url(src: &ImageSource) -> String {
    match src {
        ImageSource::Url(u) => u.clone(),
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
    }
}

fn read_tool(t: &Value, at: &str) -> j::Result<Tool> {
    let o = j::object(t, at)?;
    let f = j::object(j::required(o, "function", at)?, &path(at, "function"))?;
    let fat = path(at, "function");
    Ok(Tool {
        name: j::required_string(f, "name", &fat)?,
        description: j::string(f, "description", &fat)?,
        parameters: j::field(f, "parameters").cloned().unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    })
}

/// `auto` / `none` / `required` (both OpenAI APIs), else a named function:
/// `{"function":{"name"}}` in Chat Completions, `{"name"}` in Responses.
pub fn read_tool_choice(c: &Value) -> j::Result<ToolChoice> {
    match c {
        Value::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Required),
            _ => Err(invalid("tool_choice", "must be auto, none, required or a function")),
        },
        Value::Object(o) => Ok(ToolChoice::Named(match j::field(o, "function") {
            Some(f) => j::required_string(j::object(f, "tool_choice.function")?, "name", "tool_choice.function")?,
            None => j::required_string(o, "name", "tool_choice")?,
        })),
        _ => Err(invalid("tool_choice", "must be a string or an object")),
    }
}

/// The OpenAI form of a tool choice; `named` shapes the named variant.
pub fn write_tool_choice(c: &ToolChoice, named: impl Fn(&str) -> Value) -> Value {
    match c {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(n) => named(n),
    }
}

pub fn write_request(req: &Request) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system.join("\n\n")}));
    }
    for m in &req.messages {
        match m.role {
            Role::User => write_user(&m.parts, &mut messages),
            Role::Assistant => messages.push(write_assistant(&m.parts)),
        }
    }
    let mut o = Map::new();
    o.insert("model".into(), json!(req.model));
    o.insert("messages".into(), Value::Array(messages));
    if req.stream {
        o.insert("stream".into(), json!(true));
        o.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(n) = req.max_tokens {
        o.insert("max_tokens".into(), json!(n));
    }
    insert_opt(&mut o, "temperature", req.temperature);
    insert_opt(&mut o, "top_p", req.top_p);
    if !req.stop.is_empty() {
        o.insert("stop".into(), json!(req.stop));
    }
    if let Some(e) = &req.reasoning_effort {
        o.insert("reasoning_effort".into(), json!(e));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = json!({"name": t.name, "parameters": t.parameters});
                if let Some(d) = &t.description {
                    f["description"] = json!(d);
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        o.insert("tools".into(), Value::Array(tools));
        insert_opt(&mut o, "parallel_tool_calls", req.parallel_tool_calls);
    }
    if let Some(c) = &req.tool_choice {
        let choice = write_tool_choice(c, |n| json!({"type": "function", "function": {"name": n}}));
        o.insert("tool_choice".into(), choice);
    }
    Value::Object(o)
}

fn insert_opt<T: serde::Serialize>(o: &mut Map<String, Value>, key: &str, v: Option<T>) {
    if let Some(v) = v {
        o.insert(key.into(), json!(v));
    }
}

/// Tool results become `tool` messages (first, as OpenAI wants them right
/// after the assistant's calls); the rest one user message.
fn write_user(parts: &[Part], out: &mut Vec<Value>) {
    let mut content = Vec::new();
    for p in parts {
        match p {
            Part::ToolResult { call_id, content: result, is_error } => {
                let text = text_only(result);
                let text = if *is_error && !text.starts_with("Error") { format!("Error: {text}") } else { text };
                out.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
            }
            Part::Text(t) => content.push(json!({"type": "text", "text": t})),
            Part::Image(src) => content.push(json!({"type": "image_url", "image_url": {"url": image_url(src)}})),
            Part::ToolCall { .. } | Part::Reasoning { .. } => {}
        }
    }
    match content.as_slice() {
        [] => {}
        [one] if one["type"] == "text" => out.push(json!({"role": "user", "content": one["text"]})),
        _ => out.push(json!({"role": "user", "content": content})),
    }
}

fn write_assistant(parts: &[Part]) -> Value {
    let text: String =
        parts.iter().filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None }).collect();
    let calls: Vec<Value> = parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall { id, name, arguments } => {
                Some(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
            }
            _ => None,
        })
        .collect();
    let mut m = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        m["tool_calls"] = Value::Array(calls);
    }
    m
}

/// The text of parts that should be text (tool results); images are
/// dropped because OpenAI `tool` messages carry text only.
pub fn text_only(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---- complete responses -----------------------------------------------

pub fn read_response(body: &Value) -> Result<Response, Invalid> {
    let o = j::object(body, "response")?;
    let choice = j::array(o, "choices", "")?.and_then(|c| c.first()).ok_or_else(|| invalid("choices", "is empty"))?;
    let c = j::object(choice, "choices.0")?;
    let mut parts = Vec::new();
    if let Some(m) = j::field(c, "message").and_then(Value::as_object) {
        let reasoning = j::string(m, "reasoning_content", "")?.or(j::string(m, "reasoning", "")?);
        if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
            parts.push(Part::Reasoning { text: r, signature: None });
        }
        if let Some(t) = j::field(m, "content") {
            parts.extend(
                read_content(t, "choices.0.message.content")?
                    .into_iter()
                    .filter(|p| !matches!(p, Part::Text(t) if t.is_empty())),
            );
        }
        for (k, call) in j::array(m, "tool_calls", "")?.into_iter().flatten().enumerate() {
            let at = format!("choices.0.message.tool_calls.{k}");
            let co = j::object(call, &at)?;
            let f = j::object(j::required(co, "function", &at)?, &at)?;
            parts.push(Part::ToolCall {
                id: j::string(co, "id", &at)?.unwrap_or_else(|| format!("call_{k}")),
                name: j::required_string(f, "name", &at)?,
                arguments: j::string(f, "arguments", &at)?.unwrap_or_else(|| "{}".into()),
            });
        }
    }
    Ok(Response {
        id: j::string(o, "id", "")?.unwrap_or_default(),
        model: j::string(o, "model", "")?.unwrap_or_default(),
        stop: j::string(c, "finish_reason", "")?.as_deref().map_or(StopReason::EndTurn, stop_from),
        usage: j::field(o, "usage").map(read_usage).unwrap_or_default(),
        parts,
    })
}

pub fn read_usage(u: &Value) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64);
    Usage {
        input_tokens: n(u.get("prompt_tokens")).unwrap_or(0),
        output_tokens: n(u.get("completion_tokens")).unwrap_or(0),
        cached_tokens: n(u.pointer("/prompt_tokens_details/cached_tokens")),
    }
}

fn stop_from(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

fn stop_name(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::ContentFilter => "content_filter",
    }
}

fn usage_json(u: &Usage) -> Value {
    let mut v = json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
    });
    if let Some(c) = u.cached_tokens {
        v["prompt_tokens_details"] = json!({"cached_tokens": c});
    }
    v
}

pub fn write_response(r: &Response, created: i64) -> Value {
    let mut message = write_assistant(&r.parts);
    let reasoning: String = r
        .parts
        .iter()
        .filter_map(|p| if let Part::Reasoning { text, .. } = p { Some(text.as_str()) } else { None })
        .collect();
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    json!({
        "id": r.id,
        "object": "chat.completion",
        "created": created,
        "model": r.model,
        "choices": [{"index": 0, "message": message, "finish_reason": stop_name(r.stop)}],
        "usage": usage_json(&r.usage),
    })
}

// ---- streams ------------------------------------------------------------

/// Upstream chunks → events.
#[derive(Default)]
pub struct StreamReader {
    started: bool,
}

impl StreamReader {
    pub fn read(&mut self, ev: &sse::SseEvent) -> Vec<Event> {
        let mut out = Vec::new();
        let Ok(chunk) = serde_json::from_str::<Value>(&ev.data) else { return out };
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: chunk["id"].as_str().unwrap_or_default().to_owned(),
                model: chunk["model"].as_str().unwrap_or_default().to_owned(),
            });
        }
        if let Some(choice) = chunk["choices"].get(0) {
            let delta = &choice["delta"];
            for key in ["reasoning_content", "reasoning"] {
                if let Some(r) = delta[key].as_str().filter(|r| !r.is_empty()) {
                    out.push(Event::Reasoning(r.to_owned()));
                }
            }
            if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                out.push(Event::Text(t.to_owned()));
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = call["index"].as_u64().and_then(|i| usize::try_from(i).ok()).unwrap_or(0);
                if let Some(name) = call["function"]["name"].as_str() {
                    let id = call["id"].as_str().map_or_else(|| format!("call_{index}"), str::to_owned);
                    out.push(Event::ToolCallStart { index, id, name: name.to_owned() });
                }
                if let Some(a) = call["function"]["arguments"].as_str().filter(|a| !a.is_empty()) {
                    out.push(Event::ToolCallArguments { index, delta: a.to_owned() });
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                out.push(Event::Stop(stop_from(reason)));
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            out.push(Event::Usage(read_usage(u)));
        }
        out
    }
}

/// Events → client chunks. The finish chunk waits for the end of the
/// stream so that it can carry the final usage.
pub struct StreamWriter {
    id: String,
    model: String,
    created: i64,
    stop: Option<StopReason>,
    usage: Option<Usage>,
}

impl StreamWriter {
    pub fn new(created: i64) -> Self {
        Self { id: String::new(), model: String::new(), created, stop: None, usage: None }
    }

    fn chunk(&self, delta: Value) -> Bytes {
        let c = json!({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
        sse::frame(None, &c.to_string())
    }

    pub fn write(&mut self, ev: Event) -> Option<Bytes> {
        match ev {
            Event::Start { id, model } => {
                self.id = id;
                self.model = model;
                Some(self.chunk(json!({"role": "assistant", "content": ""})))
            }
            Event::Text(t) => Some(self.chunk(json!({"content": t}))),
            Event::Reasoning(r) => Some(self.chunk(json!({"reasoning_content": r}))),
            Event::ReasoningSignature(_) => None,
            Event::ToolCallStart { index, id, name } => Some(self.chunk(json!({"tool_calls": [
                {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}))),
            Event::ToolCallArguments { index, delta } => {
                Some(self.chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": delta}}]})))
            }
            Event::Usage(u) => {
                self.usage = Some(u);
                None
            }
            Event::Stop(s) => {
                self.stop = Some(s);
                None
            }
        }
    }

    /// The finish chunk, the usage chunk and `[DONE]`.
    pub fn finish(&mut self) -> Bytes {
        let mut out = Vec::new();
        let base =
            json!({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model});
        let mut fin = base.clone();
        fin["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": stop_name(self.stop.unwrap_or_default())}]);
        out.extend_from_slice(&sse::frame(None, &fin.to_string()));
        if let Some(u) = &self.usage {
            let mut usage = base;
            usage["choices"] = json!([]);
            usage["usage"] = usage_json(u);
            out.extend_from_slice(&sse::frame(None, &usage.to_string()));
        }
        out.extend_from_slice(&sse::frame(None, "[DONE]"));
        Bytes::from(out)
    }
}

/// The OpenAI error envelope.
pub fn error_body(kind: &str, code: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": code}})
}
