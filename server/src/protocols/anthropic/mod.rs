//! Anthropic Messages (`/v1/messages`) ⇄ the internal representation:
//! requests (system prompt also from `role:"system"` entries inside
//! `messages`, as Claude Code sends them), complete messages, and the
//! `message_start` … `message_stop` event stream with its content blocks.
//! Anthropic counts `input_tokens` without the cached part; the internal
//! usage counts all input, with `cached_tokens` the cache reads.
//!
//! Requests are read and written here; complete messages in `response`,
//! the event stream in `stream`.

use serde_json::{Map, Value, json};

use super::{
    ir::{ImageSource, Part, Request, Role, Tool, ToolChoice},
    json::{self as j, invalid, path},
};

pub mod identity;
mod response;
mod stream;

pub use response::{read_response, write_response};
pub use stream::{StreamReader, StreamWriter, error_body};

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

pub(super) fn read_block(b: &Value, at: &str) -> j::Result<Option<Part>> {
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
    let budget = thinking_budget(req);
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
/// The thinking budget an Anthropic request for `req` asks for: its own,
/// else one for its reasoning effort (`none`: no thinking).
pub fn thinking_budget(req: &Request) -> Option<u64> {
    req.reasoning_budget.or_else(|| match req.reasoning_effort.as_deref()? {
        "none" => None,
        "minimal" | "low" => Some(1024),
        "medium" => Some(4096),
        _ => Some(16_384),
    })
}

pub(super) fn write_block(p: &Part) -> Option<Value> {
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
