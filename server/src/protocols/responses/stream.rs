//! Responses streams ⇄ internal events.

use bytes::Bytes;
use serde_json::{Value, json};

use super::response::{call_item, message_item, read_response, reasoning_item, response_object};
use crate::protocols::{
    ir::{Event, StopReason, StreamFault, Usage},
    sse,
};

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
