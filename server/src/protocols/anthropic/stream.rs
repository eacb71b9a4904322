//! Anthropic streams ⇄ internal events.

use bytes::Bytes;
use serde_json::{Value, json};

use super::response::{message_id, read_usage, stop_from, stop_name, usage_json};
use crate::protocols::{
    ir::{Event, StopReason, StreamFault, Usage},
    sse,
};

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
