//! Gemini as a client protocol (`POST /v1beta/models/{model}:generateContent`
//! and `:streamGenerateContent`): requests read into the internal
//! representation, answers and stream chunks written back. Gemini links a
//! function response to its call by name (ids are optional), so calls
//! without an id get one and responses find theirs by name.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    ir::{Event, ImageSource, Part, Request, Response, Role, StopReason, Tool, ToolChoice, Usage},
    json::{self as j, invalid, path},
    openai_chat::text_only,
    sse,
};

pub fn read_request(body: &Value, model: &str, stream: bool) -> j::Result<Request> {
    let o = j::object(body, "body")?;
    let mut req = Request { model: model.to_owned(), stream, ..Request::default() };
    if let Some(s) = j::field(o, "systemInstruction") {
        let parts = j::array(j::object(s, "systemInstruction")?, "parts", "systemInstruction")?;
        req.system.extend(parts.into_iter().flatten().filter_map(|p| p["text"].as_str().map(str::to_owned)));
    }
    let contents = j::array(o, "contents", "")?.ok_or_else(|| invalid("contents", "is required"))?;
    // Calls seen so far, for responses that name their function only.
    let mut calls: Vec<(String, String)> = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let at = path("contents", i);
        let co = j::object(c, &at)?;
        let role = match j::string(co, "role", &at)?.as_deref() {
            None | Some("user") => Role::User,
            Some("model") => Role::Assistant,
            Some(_) => return Err(invalid(path(&at, "role"), "must be user or model")),
        };
        let mut parts = Vec::new();
        for (k, p) in j::array(co, "parts", &at)?.into_iter().flatten().enumerate() {
            let pat = path(&path(&at, "parts"), k);
            let po = j::object(p, &pat)?;
            if let Some(call) = j::field(po, "functionCall") {
                let name =
                    call["name"].as_str().ok_or_else(|| invalid(path(&pat, "functionCall.name"), "is required"))?;
                let id = call["id"].as_str().map_or_else(|| format!("call_{}", calls.len()), str::to_owned);
                calls.push((id.clone(), name.to_owned()));
                let arguments = call.get("args").map_or_else(|| "{}".to_owned(), Value::to_string);
                parts.push(Part::ToolCall { id, name: name.to_owned(), arguments });
            } else if let Some(r) = j::field(po, "functionResponse") {
                let name = r["name"].as_str().unwrap_or_default();
                let call_id = r["id"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| calls.iter().rev().find(|(_, n)| n == name).map(|(id, _)| id.clone()));
                let call_id =
                    call_id.ok_or_else(|| invalid(path(&pat, "functionResponse.name"), "names no earlier call"))?;
                let response = &r["response"];
                let is_error = response.get("error").is_some();
                let text = match response.get("output").or(response.get("error")).or(response.get("result")) {
                    Some(v) => j::text_of(v),
                    None => response.to_string(),
                };
                parts.push(Part::ToolResult { call_id, content: vec![Part::Text(text)], is_error });
            } else if let Some(d) = j::field(po, "inlineData") {
                parts.push(Part::Image(ImageSource::Base64 {
                    media_type: d["mimeType"].as_str().unwrap_or("application/octet-stream").to_owned(),
                    data: d["data"].as_str().unwrap_or_default().to_owned(),
                }));
            } else if let Some(f) = j::field(po, "fileData") {
                parts.push(Part::Image(ImageSource::Url(f["fileUri"].as_str().unwrap_or_default().to_owned())));
            } else if let Some(t) = j::string(po, "text", &pat)? {
                parts.push(if po.get("thought") == Some(&json!(true)) {
                    Part::Reasoning { text: t, signature: None }
                } else {
                    Part::Text(t)
                });
            }
        }
        req.push(role, parts);
    }
    for t in j::array(o, "tools", "")?.into_iter().flatten() {
        for d in t["functionDeclarations"].as_array().into_iter().flatten() {
            req.tools.push(Tool {
                name: d["name"].as_str().unwrap_or_default().to_owned(),
                description: d["description"].as_str().map(str::to_owned),
                parameters: d
                    .get("parametersJsonSchema")
                    .or(d.get("parameters"))
                    .cloned()
                    .unwrap_or(json!({"type": "object"})),
            });
        }
    }
    let config = &body["toolConfig"]["functionCallingConfig"];
    req.tool_choice = match (config["mode"].as_str(), config["allowedFunctionNames"].get(0).and_then(Value::as_str)) {
        (Some("ANY"), Some(name)) => Some(ToolChoice::Named(name.to_owned())),
        (Some("ANY"), None) => Some(ToolChoice::Required),
        (Some("NONE"), _) => Some(ToolChoice::None),
        (Some("AUTO"), _) => Some(ToolChoice::Auto),
        _ => None,
    };
    let g = &body["generationConfig"];
    req.max_tokens = g["maxOutputTokens"].as_u64();
    req.temperature = g["temperature"].as_f64();
    req.top_p = g["topP"].as_f64();
    req.stop =
        g["stopSequences"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect();
    req.reasoning_budget = g["thinkingConfig"]["thinkingBudget"].as_u64().filter(|b| *b > 0);
    Ok(req)
}

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::MaxTokens => "MAX_TOKENS",
        StopReason::ContentFilter => "SAFETY",
        StopReason::EndTurn | StopReason::StopSequence | StopReason::ToolUse => "STOP",
    }
}

fn usage_json(u: &Usage) -> Value {
    let mut v = json!({"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens,
                       "totalTokenCount": u.input_tokens + u.output_tokens});
    if let Some(c) = u.cached_tokens {
        v["cachedContentTokenCount"] = json!(c);
    }
    v
}

fn part_json(p: &Part) -> Option<Value> {
    Some(match p {
        Part::Text(t) => json!({"text": t}),
        Part::Reasoning { text, .. } => json!({"text": text, "thought": true}),
        Part::ToolCall { id, name, arguments } => {
            let args = serde_json::from_str::<Value>(arguments).ok().filter(Value::is_object).unwrap_or(json!({}));
            json!({"functionCall": {"id": id, "name": name, "args": args}})
        }
        Part::ToolResult { call_id, content, .. } => {
            json!({"functionResponse": {"id": call_id, "response": {"output": text_only(content)}}})
        }
        Part::Image(_) => return None,
    })
}

fn chunk(parts: Vec<Value>, finish: Option<StopReason>, usage: Option<&Usage>, id: &str, model: &str) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(finish_reason(f));
    }
    let mut v = json!({"candidates": [candidate], "modelVersion": model, "responseId": id});
    if let Some(u) = usage {
        v["usageMetadata"] = usage_json(u);
    }
    v
}

pub fn write_response(r: &Response) -> Value {
    chunk(r.parts.iter().filter_map(part_json).collect(), Some(r.stop), Some(&r.usage), &r.id, &r.model)
}

/// Internal events → `data:` chunks, each a `GenerateContentResponse`.
/// A function call goes out whole (Gemini streams no argument deltas), so
/// its arguments are gathered until the call is complete.
#[derive(Default)]
pub struct StreamWriter {
    id: String,
    model: String,
    pending_call: Option<(String, String, String)>,
    stop: Option<StopReason>,
    usage: Option<Usage>,
}

impl StreamWriter {
    fn frame(&self, parts: Vec<Value>, finish: Option<StopReason>, usage: Option<&Usage>) -> Bytes {
        sse::frame(None, &chunk(parts, finish, usage, &self.id, &self.model).to_string())
    }

    /// The gathered call, if any, as its chunk.
    fn flush_call(&mut self) -> Option<Bytes> {
        let (id, name, arguments) = self.pending_call.take()?;
        Some(self.frame(vec![part_json(&Part::ToolCall { id, name, arguments })?], None, None))
    }

    pub fn write(&mut self, ev: Event) -> Option<Bytes> {
        let mut out = Vec::new();
        if !matches!(ev, Event::ToolCallArguments { .. } | Event::Usage(_) | Event::Stop(_))
            && let Some(b) = self.flush_call()
        {
            out.extend_from_slice(&b);
        }
        match ev {
            Event::Start { id, model } => {
                self.id = id;
                self.model = model;
            }
            Event::Text(t) => out.extend_from_slice(&self.frame(vec![json!({"text": t})], None, None)),
            Event::Reasoning(r) => {
                out.extend_from_slice(&self.frame(vec![json!({"text": r, "thought": true})], None, None))
            }
            Event::ReasoningSignature(_) => {}
            Event::ToolCallStart { id, name, .. } => self.pending_call = Some((id, name, String::new())),
            Event::ToolCallArguments { delta, .. } => {
                if let Some((_, _, args)) = &mut self.pending_call {
                    args.push_str(&delta);
                }
            }
            Event::Usage(u) => self.usage = Some(u),
            Event::Stop(s) => self.stop = Some(s),
        }
        (!out.is_empty()).then(|| Bytes::from(out))
    }

    /// Any gathered call, then the chunk with the finish reason and usage.
    pub fn finish(&mut self) -> Bytes {
        let mut out = self.flush_call().map(|b| b.to_vec()).unwrap_or_default();
        let fin = self.frame(vec![json!({"text": ""})], Some(self.stop.unwrap_or_default()), self.usage.as_ref());
        out.extend_from_slice(&fin);
        Bytes::from(out)
    }

    /// Gemini has no error event: an `error` object ends the stream.
    pub fn fail(&mut self, message: &str) -> Bytes {
        sse::frame(None, &error_body(500, message).to_string())
    }
}

/// Gemini's error envelope.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 413 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": kind}})
}
