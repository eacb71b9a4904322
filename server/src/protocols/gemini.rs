//! Google Gemini `generateContent` / `streamGenerateContent?alt=sse` as an
//! upstream: requests written from the internal representation (the model
//! goes in the URL, tool results need their function's name, so it is
//! looked up from the call), answers and stream chunks read back. Each
//! stream chunk is a whole `GenerateContentResponse`; a function call
//! arrives complete in one chunk.

use serde_json::{Map, Value, json};

use super::{
    ir::{Event, ImageSource, Part, Request, Response, Role, StopReason, ToolChoice, Usage},
    json as j,
    openai_chat::text_only,
    sse,
};

/// The request path under the connection's base URL.
pub fn path(model: &str, stream: bool) -> String {
    if stream {
        format!("/models/{model}:streamGenerateContent?alt=sse")
    } else {
        format!("/models/{model}:generateContent")
    }
}

pub fn write_request(req: &Request) -> Value {
    // Gemini answers a call by function name; the IR links by call id.
    let names: Vec<(&str, &str)> = req
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| if let Part::ToolCall { id, name, .. } = p { Some((id.as_str(), name.as_str())) } else { None })
        .collect();
    let name_of = |call_id: &str| names.iter().find(|(id, _)| *id == call_id).map_or(call_id, |(_, n)| n).to_owned();
    let contents: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let parts: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(json!({"text": t})),
                    Part::Image(ImageSource::Base64 { media_type, data }) => {
                        Some(json!({"inlineData": {"mimeType": media_type, "data": data}}))
                    }
                    Part::Image(ImageSource::Url(url)) => Some(json!({"fileData": {"fileUri": url}})),
                    Part::ToolCall { id, name, arguments } => {
                        let args =
                            serde_json::from_str::<Value>(arguments).ok().filter(Value::is_object).unwrap_or(json!({}));
                        Some(json!({"functionCall": {"id": id, "name": name, "args": args}}))
                    }
                    Part::ToolResult { call_id, content, is_error } => {
                        let key = if *is_error { "error" } else { "output" };
                        Some(json!({"functionResponse": {"id": call_id, "name": name_of(call_id),
                                                         "response": {key: text_only(content)}}}))
                    }
                    // Gemini's thought signatures are not carried across protocols.
                    Part::Reasoning { .. } => None,
                })
                .collect();
            json!({"role": if m.role == Role::User { "user" } else { "model" }, "parts": parts})
        })
        .filter(|c| c["parts"].as_array().is_some_and(|p| !p.is_empty()))
        .collect();
    let mut o = Map::new();
    o.insert("contents".into(), Value::Array(contents));
    if !req.system.is_empty() {
        o.insert("systemInstruction".into(), json!({"parts": [{"text": req.system.join("\n\n")}]}));
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description.clone().unwrap_or_default(), "parametersJsonSchema": t.parameters}))
            .collect();
        o.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    }
    if let Some(c) = &req.tool_choice {
        let config = match c {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::Named(n) => json!({"mode": "ANY", "allowedFunctionNames": [n]}),
        };
        o.insert("toolConfig".into(), json!({"functionCallingConfig": config}));
    }
    let mut g = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            g.insert(k.into(), v);
        }
    };
    put("maxOutputTokens", req.max_tokens.map(Value::from));
    put("temperature", req.temperature.map(Value::from));
    put("topP", req.top_p.map(Value::from));
    put("stopSequences", (!req.stop.is_empty()).then(|| json!(req.stop)));
    let budget = req.reasoning_budget.or_else(|| {
        req.reasoning_effort.as_deref().map(|e| match e {
            "minimal" | "low" => 1024,
            "medium" => 8192,
            _ => 24_576,
        })
    });
    put("thinkingConfig", budget.map(|b| json!({"thinkingBudget": b, "includeThoughts": true})));
    if !g.is_empty() {
        o.insert("generationConfig".into(), Value::Object(g));
    }
    Value::Object(o)
}

/// The parts, finish reason and usage of one `GenerateContentResponse`.
struct Chunk {
    parts: Vec<Part>,
    finish: Option<StopReason>,
    usage: Option<Usage>,
}

fn read_chunk(v: &Value, calls_so_far: usize) -> Chunk {
    let candidate = &v["candidates"][0];
    let mut parts = Vec::new();
    for p in candidate["content"]["parts"].as_array().into_iter().flatten() {
        if let Some(call) = p.get("functionCall") {
            let n = calls_so_far + parts.iter().filter(|p| matches!(p, Part::ToolCall { .. })).count();
            parts.push(Part::ToolCall {
                id: call["id"].as_str().map_or_else(|| format!("call_{n}"), str::to_owned),
                name: call["name"].as_str().unwrap_or_default().to_owned(),
                arguments: call.get("args").map_or_else(|| "{}".to_owned(), Value::to_string),
            });
        } else if let Some(t) = p["text"].as_str().filter(|t| !t.is_empty()) {
            parts.push(if p["thought"] == true {
                Part::Reasoning { text: t.to_owned(), signature: None }
            } else {
                Part::Text(t.to_owned())
            });
        }
    }
    let finish = candidate["finishReason"].as_str().map(|r| match r {
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    });
    let usage = v.get("usageMetadata").filter(|u| u.is_object()).map(|u| Usage {
        input_tokens: u["promptTokenCount"].as_u64().unwrap_or(0),
        output_tokens: u["candidatesTokenCount"].as_u64().unwrap_or(0) + u["thoughtsTokenCount"].as_u64().unwrap_or(0),
        cached_tokens: u["cachedContentTokenCount"].as_u64(),
    });
    Chunk { parts, finish, usage }
}

pub fn read_response(body: &Value) -> j::Result<Response> {
    j::object(body, "response")?;
    let c = read_chunk(body, 0);
    let called = c.parts.iter().any(|p| matches!(p, Part::ToolCall { .. }));
    let stop = match c.finish.unwrap_or_default() {
        StopReason::EndTurn if called => StopReason::ToolUse,
        other => other,
    };
    Ok(Response {
        id: body["responseId"].as_str().unwrap_or_default().to_owned(),
        model: body["modelVersion"].as_str().unwrap_or_default().to_owned(),
        parts: c.parts,
        stop,
        usage: c.usage.unwrap_or_default(),
    })
}

/// Upstream chunks → internal events.
#[derive(Default)]
pub struct StreamReader {
    started: bool,
    calls: usize,
}

impl StreamReader {
    pub fn read(&mut self, ev: &sse::SseEvent) -> Vec<Event> {
        let Ok(v) = serde_json::from_str::<Value>(&ev.data) else { return Vec::new() };
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: v["responseId"].as_str().unwrap_or_default().to_owned(),
                model: v["modelVersion"].as_str().unwrap_or_default().to_owned(),
            });
        }
        let c = read_chunk(&v, self.calls);
        for p in c.parts {
            match p {
                Part::Text(t) => out.push(Event::Text(t)),
                Part::Reasoning { text, .. } => out.push(Event::Reasoning(text)),
                Part::ToolCall { id, name, arguments } => {
                    let index = self.calls;
                    self.calls += 1;
                    out.push(Event::ToolCallStart { index, id, name });
                    out.push(Event::ToolCallArguments { index, delta: arguments });
                }
                Part::Image(_) | Part::ToolResult { .. } => {}
            }
        }
        if let Some(u) = c.usage {
            out.push(Event::Usage(u));
        }
        if let Some(f) = c.finish {
            out.push(Event::Stop(if f == StopReason::EndTurn && self.calls > 0 { StopReason::ToolUse } else { f }));
        }
        out
    }
}
