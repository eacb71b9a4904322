//! What one upstream SSE event means for the watchdogs (SPEC §R6): the
//! readiness gate waits for the first event that is not a keepalive; the
//! content-stall watchdog restarts only on model output — text, a tool
//! call, reasoning progress (Anthropic `thinking_delta` even when empty,
//! Responses reasoning items). Metadata such as `message_start`, usage-only
//! chunks and pings keep nobody waiting less.
//!
//! Events are read with borrowed, mostly-ignored fields: the relay looks
//! at every event of every stream, so this must cost little more than the
//! parse itself.

use app::types::Protocol;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::borrow::Cow;

use crate::protocols::sse::{SseEvent, SseReader};

/// One event's kind, for the watchdogs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// A ping or an empty event: the upstream is alive, nothing more.
    Keepalive,
    /// Metadata (start, usage, stop): counts for readiness, not as output.
    Meta,
    /// Model text, with its UTF-8 length (the useful bytes).
    Output(usize),
    ToolCall,
    Reasoning,
    /// The upstream reports a failure inside the stream.
    Error(String),
}

impl Progress {
    /// Whether the event is model output (restarts the stall budget).
    pub fn is_output(&self) -> bool {
        matches!(self, Self::Output(_) | Self::ToolCall | Self::Reasoning)
    }
}

/// The kind of `ev`, an event of an upstream speaking `protocol`.
pub fn of(protocol: Protocol, ev: &SseEvent) -> Progress {
    let data = ev.data.trim();
    if data.is_empty() || ev.event.as_deref() == Some("ping") {
        return Progress::Keepalive;
    }
    if data == "[DONE]" {
        return Progress::Meta;
    }
    match protocol {
        Protocol::OpenaiChat => chat(data),
        Protocol::Anthropic => anthropic(data),
        Protocol::Responses => responses(data),
        Protocol::Gemini => gemini(data),
    }
}

#[derive(Deserialize)]
struct ErrorField<'a> {
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
}

/// The message of an `error` field, whatever its shape.
fn error_text(e: Option<ErrorField<'_>>) -> Option<String> {
    e.map(|e| e.message.map_or_else(|| "the upstream reported an error".to_owned(), Cow::into_owned))
}

fn text_len(t: Option<Cow<'_, str>>) -> usize {
    t.map_or(0, |t| t.len())
}

fn chat(data: &str) -> Progress {
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        choices: Vec<Choice<'a>>,
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
    }
    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow, default)]
        delta: Option<Delta<'a>>,
    }
    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow, default)]
        content: Option<Cow<'a, str>>,
        #[serde(default)]
        tool_calls: Option<IgnoredAny>,
        #[serde(borrow, default)]
        reasoning_content: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        reasoning: Option<Cow<'a, str>>,
    }
    let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(data) else { return Progress::Meta };
    if let Some(e) = error_text(chunk.error) {
        return Progress::Error(e);
    }
    let mut out = Progress::Meta;
    for d in chunk.choices.into_iter().filter_map(|c| c.delta) {
        let text = text_len(d.content);
        if text > 0 {
            return Progress::Output(text);
        }
        if d.tool_calls.is_some() {
            out = Progress::ToolCall;
        } else if d.reasoning_content.or(d.reasoning).is_some_and(|r| !r.is_empty()) {
            out = Progress::Reasoning;
        }
    }
    out
}

fn anthropic(data: &str) -> Progress {
    #[derive(Deserialize)]
    struct Event<'a> {
        #[serde(borrow, rename = "type")]
        kind: Cow<'a, str>,
        #[serde(borrow, default)]
        delta: Option<Delta<'a>>,
        #[serde(borrow, default)]
        content_block: Option<Block<'a>>,
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
    }
    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        text: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow, rename = "type")]
        kind: Cow<'a, str>,
    }
    let Ok(ev) = serde_json::from_str::<Event<'_>>(data) else { return Progress::Meta };
    match ev.kind.as_ref() {
        "error" => Progress::Error(error_text(ev.error).unwrap_or_default()),
        "content_block_start" => match ev.content_block.as_ref().map(|b| b.kind.as_ref()) {
            Some("tool_use" | "server_tool_use") => Progress::ToolCall,
            Some("thinking" | "redacted_thinking") => Progress::Reasoning,
            _ => Progress::Meta,
        },
        "content_block_delta" => {
            let Some(d) = ev.delta else { return Progress::Meta };
            match d.kind.as_deref() {
                Some("text_delta") => match text_len(d.text) {
                    0 => Progress::Meta,
                    n => Progress::Output(n),
                },
                Some("input_json_delta") => Progress::ToolCall,
                Some("thinking_delta" | "signature_delta") => Progress::Reasoning,
                _ => Progress::Meta,
            }
        }
        _ => Progress::Meta,
    }
}

fn responses(data: &str) -> Progress {
    #[derive(Deserialize)]
    struct Event<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Cow<'a, str>,
        #[serde(borrow, default)]
        delta: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        item: Option<Item<'a>>,
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
        #[serde(borrow, default)]
        response: Option<Failed<'a>>,
    }
    #[derive(Deserialize)]
    struct Item<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Failed<'a> {
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
    }
    let Ok(ev) = serde_json::from_str::<Event<'_>>(data) else { return Progress::Meta };
    let kind = ev.kind.as_ref();
    match kind {
        "error" => Progress::Error(error_text(ev.error).unwrap_or_default()),
        "response.failed" => Progress::Error(error_text(ev.response.and_then(|r| r.error)).unwrap_or_default()),
        "response.output_text.delta" | "response.refusal.delta" => match text_len(ev.delta) {
            0 => Progress::Meta,
            n => Progress::Output(n),
        },
        "response.function_call_arguments.delta" => Progress::ToolCall,
        "response.output_item.added" => match ev.item.as_ref().map(|i| i.kind.as_ref()) {
            Some("function_call") => Progress::ToolCall,
            Some("reasoning") => Progress::Reasoning,
            _ => Progress::Meta,
        },
        k if k.starts_with("response.reasoning") => Progress::Reasoning,
        _ => Progress::Meta,
    }
}

fn gemini(data: &str) -> Progress {
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        candidates: Vec<Candidate<'a>>,
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
    }
    #[derive(Deserialize)]
    struct Candidate<'a> {
        #[serde(borrow, default)]
        content: Option<Content<'a>>,
    }
    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(borrow, default)]
        parts: Vec<Part<'a>>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Part<'a> {
        #[serde(borrow, default)]
        text: Option<Cow<'a, str>>,
        #[serde(default)]
        thought: bool,
        #[serde(default)]
        function_call: Option<IgnoredAny>,
    }
    let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(data) else { return Progress::Meta };
    if let Some(e) = error_text(chunk.error) {
        return Progress::Error(e);
    }
    let mut out = Progress::Meta;
    for part in chunk.candidates.into_iter().filter_map(|c| c.content).flat_map(|c| c.parts) {
        if part.function_call.is_some() {
            return Progress::ToolCall;
        }
        match (part.thought, text_len(part.text)) {
            (true, _) => out = Progress::Reasoning,
            (false, 0) => {}
            (false, n) => return Progress::Output(n),
        }
    }
    out
}

/// What a chunk of the upstream stream held, for the watchdogs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// An event other than a keepalive (the readiness gate opens).
    pub ready: bool,
    /// Model output (the stall budget restarts).
    pub output: bool,
    /// UTF-8 bytes of model text.
    pub useful_bytes: usize,
    /// The chunk's last output was a tool call or reasoning (`Some(true)`)
    /// or text (`Some(false)`).
    pub protected: Option<bool>,
    /// The upstream reported a failure (or sent an event too large to read).
    pub error: Option<String>,
}

/// Reads an upstream byte stream as events, across chunk boundaries, and
/// tells what each chunk held.
pub struct Watch {
    protocol: Protocol,
    sse: SseReader,
}

impl Watch {
    pub fn new(upstream: Protocol) -> Self {
        Self { protocol: upstream, sse: SseReader::default() }
    }

    pub fn feed(&mut self, chunk: &[u8]) -> Seen {
        match self.sse.feed(chunk) {
            Ok(events) => self.seen(events),
            Err(e) => Seen { error: Some(e.to_string()), ..Seen::default() },
        }
    }

    /// The end of the stream: an event without its blank line still counts.
    pub fn finish(&mut self) -> Seen {
        let last = self.sse.finish();
        self.seen(last)
    }

    fn seen(&self, events: impl IntoIterator<Item = SseEvent>) -> Seen {
        let mut seen = Seen::default();
        for ev in events {
            match of(self.protocol, &ev) {
                Progress::Keepalive => {}
                Progress::Meta => seen.ready = true,
                Progress::Error(e) => {
                    seen.ready = true;
                    seen.error.get_or_insert(e);
                }
                p => {
                    seen.ready = true;
                    seen.output = true;
                    seen.protected = Some(!matches!(p, Progress::Output(_)));
                    if let Progress::Output(n) = p {
                        seen.useful_bytes += n;
                    }
                }
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn chat_chunks() {
        let p = |d| of(Protocol::OpenaiChat, &ev(None, d));
        assert_eq!(p(r#"{"choices":[{"delta":{"role":"assistant"}}]}"#), Progress::Meta);
        assert_eq!(p(r#"{"choices":[{"delta":{"content":"héllo"}}]}"#), Progress::Output(6));
        assert_eq!(p(r#"{"choices":[{"delta":{"content":""}}]}"#), Progress::Meta);
        assert_eq!(p(r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#), Progress::ToolCall);
        assert_eq!(p(r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#), Progress::Reasoning);
        assert_eq!(p(r#"{"choices":[],"usage":{"prompt_tokens":3}}"#), Progress::Meta);
        assert_eq!(p(r#"{"error":{"message":"overloaded"}}"#), Progress::Error("overloaded".into()));
        assert_eq!(p("[DONE]"), Progress::Meta);
        assert_eq!(p(""), Progress::Keepalive);
    }

    #[test]
    fn anthropic_events() {
        let p = |e, d| of(Protocol::Anthropic, &ev(Some(e), d));
        assert_eq!(p("ping", r#"{"type":"ping"}"#), Progress::Keepalive);
        assert_eq!(p("message_start", r#"{"type":"message_start","message":{}}"#), Progress::Meta);
        let text = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#;
        assert_eq!(p("content_block_delta", text), Progress::Output(2));
        let thinking = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#;
        assert_eq!(p("content_block_delta", thinking), Progress::Reasoning, "even empty thinking is progress");
        let tool = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t"}}"#;
        assert_eq!(p("content_block_start", tool), Progress::ToolCall);
        let err = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(p("error", err), Progress::Error("Overloaded".into()));
    }

    #[test]
    fn responses_and_gemini_events() {
        let r = |d| of(Protocol::Responses, &ev(None, d));
        assert_eq!(r(r#"{"type":"response.created","response":{}}"#), Progress::Meta);
        assert_eq!(r(r#"{"type":"response.output_text.delta","delta":"abc"}"#), Progress::Output(3));
        assert_eq!(r(r#"{"type":"response.reasoning_summary_text.delta","delta":""}"#), Progress::Reasoning);
        assert_eq!(r(r#"{"type":"response.output_item.added","item":{"type":"reasoning"}}"#), Progress::Reasoning);
        let failed = r#"{"type":"response.failed","response":{"error":{"message":"boom"}}}"#;
        assert_eq!(r(failed), Progress::Error("boom".into()));
        let g = |d| of(Protocol::Gemini, &ev(None, d));
        assert_eq!(g(r#"{"candidates":[{"content":{"parts":[{"text":"yo"}]}}]}"#), Progress::Output(2));
        assert_eq!(g(r#"{"candidates":[{"content":{"parts":[{"text":"x","thought":true}]}}]}"#), Progress::Reasoning);
        assert_eq!(g(r#"{"usageMetadata":{"promptTokenCount":1}}"#), Progress::Meta);
    }

    #[test]
    fn a_watch_reads_events_across_chunks() {
        let mut w = Watch::new(Protocol::Anthropic);
        assert_eq!(w.feed(b"event: ping\ndata: {\"type\":\"ping\"}\n\n"), Seen::default());
        let delta = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"abcd\"}}\n\n";
        let (a, b) = delta.split_at(30);
        assert_eq!(w.feed(a), Seen::default(), "half an event is nothing yet");
        assert_eq!(w.feed(b), Seen { ready: true, output: true, useful_bytes: 4, protected: Some(false), error: None });
        assert!(!w.feed(b"data: {\"type\":\"message_stop\"}").ready);
        assert_eq!(w.finish(), Seen { ready: true, ..Seen::default() }, "the unterminated last event counts");
    }
}
