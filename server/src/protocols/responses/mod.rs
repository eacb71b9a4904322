//! OpenAI Responses (`/v1/responses`, what Codex CLI speaks) ⇄ the
//! internal representation. Conversation state travels in `input` items
//! (`message`, `function_call`, `function_call_output`, `reasoning`); the
//! answer is a list of output items, streamed as `response.*` events in
//! which every item is announced (`output_item.added`), filled by deltas
//! and closed (`output_item.done` with the whole item — Codex records the
//! conversation from those), then `response.completed` carries it all.
//!
//! Requests are read and written here; complete answers in `response`,
//! the event stream in `stream`.

use serde_json::{Map, Value, json};

use super::{
    ir::{Message, Part, Request, Role, Tool},
    json::{self as j, invalid, path},
    openai_chat::{image_from_url, image_url, read_tool_choice, text_only, write_tool_choice},
};

pub mod codex;
mod response;
mod stream;

pub use response::{read_response, write_response};
pub use stream::{StreamReader, StreamWriter, failed_event, failed_event_with_code};

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
