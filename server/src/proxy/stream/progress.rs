//! What one upstream SSE event means for the watchdogs (SPEC §R6): the
//! readiness gate waits for the first event that is not a keepalive; the
//! content-stall watchdog restarts only on model output — text, a tool
//! call, reasoning progress (Anthropic `thinking_delta` even when empty,
//! Responses reasoning items). Metadata such as `message_start`, usage-only
//! chunks and pings keep nobody waiting less.
//!
//! It also tells where the answer ends ([`Ending`]): a stream is complete
//! only when its upstream said so — the model stopped (Chat
//! `finish_reason`, Anthropic `stop_reason`, Gemini `finishReason`) or the
//! terminator came (Chat `[DONE]`, Anthropic `message_stop`, Responses
//! `response.completed` / `response.incomplete`). An end of the connection
//! before that is a cut answer, and an event that is not JSON (or too
//! large to read) a malformed stream; neither is ever passed off as a
//! finished answer.
//!
//! Events are read with borrowed, mostly-ignored fields: the relay looks
//! at every event of every stream, so this must cost little more than the
//! parse itself.

use app::types::Protocol;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::borrow::Cow;

use crate::{
    protocols::{
        ir,
        sse::{SseEvent, SseReader},
    },
    proxy::usage::Counts,
};

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
    /// The event is not the JSON its protocol sends.
    Malformed(String),
}

/// Where an event leaves the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ending {
    /// The answer goes on.
    #[default]
    Open,
    /// The model finished its answer; metadata (usage) may follow, then
    /// the end.
    Stopped,
    /// The upstream's terminator: nothing after it belongs to the answer.
    Terminator,
}

impl Progress {
    /// Whether the event is model output (restarts the stall budget).
    pub fn is_output(&self) -> bool {
        matches!(self, Self::Output(_) | Self::ToolCall | Self::Reasoning)
    }
}

/// The kind of `ev`, an event of an upstream speaking `protocol`, and
/// whether it ends the answer.
/// What `ev` means; the token counts it states go into `counts`.
pub fn of(protocol: Protocol, ev: &SseEvent, counts: &mut Counts) -> (Progress, Ending) {
    let data = ev.data.trim();
    if data.is_empty() || ev.event.as_deref() == Some("ping") {
        return (Progress::Keepalive, Ending::Open);
    }
    if data == "[DONE]" {
        return (Progress::Meta, Ending::Terminator);
    }
    match protocol {
        Protocol::OpenaiChat => chat(data, counts),
        Protocol::Anthropic => anthropic(data, counts),
        Protocol::Responses => responses(data, counts),
        Protocol::Gemini => gemini(data, counts),
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

/// An event its protocol's reader could not take: metadata of a shape it
/// does not know when it is JSON at all, else a malformed event.
fn unreadable(data: &str) -> (Progress, Ending) {
    match serde_json::from_str::<IgnoredAny>(data) {
        Ok(_) => (Progress::Meta, Ending::Open),
        Err(e) => (Progress::Malformed(format!("an upstream stream event is not JSON: {e}")), Ending::Open),
    }
}

/// `Stopped` when the model said why it stopped.
fn stopped_if(stop: bool) -> Ending {
    if stop { Ending::Stopped } else { Ending::Open }
}

fn chat(data: &str, counts: &mut Counts) -> (Progress, Ending) {
    #[derive(Deserialize)]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        choices: Vec<Choice<'a>>,
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
        #[serde(default)]
        usage: Option<Counts>,
    }
    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow, default)]
        delta: Option<Delta<'a>>,
        #[serde(borrow, default)]
        finish_reason: Option<Cow<'a, str>>,
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
    let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(data) else { return unreadable(data) };
    if let Some(e) = error_text(chunk.error) {
        return (Progress::Error(e), Ending::Open);
    }
    if let Some(u) = &chunk.usage {
        counts.merge(u);
    }
    let ending = stopped_if(chunk.choices.iter().any(|c| c.finish_reason.is_some()));
    let mut out = Progress::Meta;
    for d in chunk.choices.into_iter().filter_map(|c| c.delta) {
        let text = text_len(d.content);
        if text > 0 {
            return (Progress::Output(text), ending);
        }
        if d.tool_calls.is_some() {
            out = Progress::ToolCall;
        } else if d.reasoning_content.or(d.reasoning).is_some_and(|r| !r.is_empty()) {
            out = Progress::Reasoning;
        }
    }
    (out, ending)
}

fn anthropic(data: &str, counts: &mut Counts) -> (Progress, Ending) {
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
        /// `message_delta`'s (output so far).
        #[serde(default)]
        usage: Option<Counts>,
        /// `message_start`'s message (its usage: the input).
        #[serde(default)]
        message: Option<WithUsage>,
    }
    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        text: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        stop_reason: Option<Cow<'a, str>>,
    }
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow, rename = "type")]
        kind: Cow<'a, str>,
    }
    let Ok(ev) = serde_json::from_str::<Event<'_>>(data) else { return unreadable(data) };
    for u in [ev.usage.as_ref(), ev.message.as_ref().and_then(|m| m.usage.as_ref())].into_iter().flatten() {
        counts.merge(u);
    }
    let progress = match ev.kind.as_ref() {
        "message_stop" => return (Progress::Meta, Ending::Terminator),
        "message_delta" => {
            return (Progress::Meta, stopped_if(ev.delta.is_some_and(|d| d.stop_reason.is_some())));
        }
        "error" => Progress::Error(error_text(ev.error).unwrap_or_default()),
        "content_block_start" => match ev.content_block.as_ref().map(|b| b.kind.as_ref()) {
            Some("tool_use" | "server_tool_use") => Progress::ToolCall,
            Some("thinking" | "redacted_thinking") => Progress::Reasoning,
            _ => Progress::Meta,
        },
        "content_block_delta" => {
            let Some(d) = ev.delta else { return (Progress::Meta, Ending::Open) };
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
    };
    (progress, Ending::Open)
}

fn responses(data: &str, counts: &mut Counts) -> (Progress, Ending) {
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
    /// The response an event carries: its error, its usage (at its end).
    #[derive(Deserialize)]
    struct Failed<'a> {
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
        #[serde(default)]
        usage: Option<Counts>,
    }
    let Ok(ev) = serde_json::from_str::<Event<'_>>(data) else { return unreadable(data) };
    if let Some(u) = ev.response.as_ref().and_then(|r| r.usage.as_ref()) {
        counts.merge(u);
    }
    let kind = ev.kind.as_ref();
    let progress = match kind {
        "response.completed" | "response.incomplete" => return (Progress::Meta, Ending::Terminator),
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
    };
    (progress, Ending::Open)
}

fn gemini(data: &str, counts: &mut Counts) -> (Progress, Ending) {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Chunk<'a> {
        #[serde(borrow, default)]
        candidates: Vec<Candidate<'a>>,
        #[serde(borrow, default)]
        error: Option<ErrorField<'a>>,
        #[serde(default)]
        usage_metadata: Option<Counts>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Candidate<'a> {
        #[serde(borrow, default)]
        content: Option<Content<'a>>,
        #[serde(borrow, default)]
        finish_reason: Option<Cow<'a, str>>,
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
    let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(data) else { return unreadable(data) };
    if let Some(e) = error_text(chunk.error) {
        return (Progress::Error(e), Ending::Open);
    }
    if let Some(u) = &chunk.usage_metadata {
        counts.merge(u);
    }
    let ending = stopped_if(chunk.candidates.iter().any(|c| c.finish_reason.is_some()));
    let mut out = Progress::Meta;
    for part in chunk.candidates.into_iter().filter_map(|c| c.content).flat_map(|c| c.parts) {
        if part.function_call.is_some() {
            return (Progress::ToolCall, ending);
        }
        match (part.thought, text_len(part.text)) {
            (true, _) => out = Progress::Reasoning,
            (false, 0) => {}
            (false, n) => return (Progress::Output(n), ending),
        }
    }
    (out, ending)
}

/// What a chunk of the upstream stream held, for the watchdogs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// A useful event: model output, the answer's end or an error (the
    /// readiness gate opens; metadata, empty deltas and pings do not).
    pub ready: bool,
    /// Model output (the stall budget restarts).
    pub output: bool,
    /// UTF-8 bytes of model text.
    pub useful_bytes: usize,
    /// The chunk's last output was a tool call or reasoning (`Some(true)`)
    /// or text (`Some(false)`).
    pub protected: Option<bool>,
    /// The upstream reported a failure.
    pub error: Option<String>,
    /// An event was not JSON, or too large to read.
    pub malformed: Option<String>,
    /// The upstream's terminator came: the chunk's bytes through it (the
    /// rest is not the answer's).
    pub end_at: Option<usize>,
    /// The chunk's bytes through the end of its last complete event.
    pub events_end: Option<usize>,
}

impl Seen {
    /// How much of the chunk may go to the client: whole events, up to the
    /// terminator.
    pub fn through(&self) -> Option<usize> {
        self.end_at.or(self.events_end)
    }
}

/// How far the answer got, and the token counts its events stated.
#[derive(Default)]
struct Answer {
    stopped: bool,
    ended: bool,
    counts: Counts,
}

impl Answer {
    /// Notes one event (`taken`: the chunk's bytes through it) in `seen`.
    fn note(&mut self, protocol: Protocol, ev: &SseEvent, taken: usize, seen: &mut Seen) {
        if self.ended {
            return;
        }
        let (progress, ending) = of(protocol, ev, &mut self.counts);
        match ending {
            Ending::Open => {}
            Ending::Stopped => self.stopped = true,
            Ending::Terminator => {
                self.ended = true;
                seen.end_at = Some(taken);
            }
        }
        seen.ready |= ending != Ending::Open;
        match progress {
            Progress::Keepalive | Progress::Meta => {}
            Progress::Error(e) => {
                seen.ready = true;
                seen.error.get_or_insert(e);
            }
            Progress::Malformed(e) => {
                seen.malformed.get_or_insert(e);
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
}

/// Reads an upstream byte stream as events, across chunk boundaries, and
/// tells what each chunk held and whether the answer is complete.
pub struct Watch {
    protocol: Protocol,
    sse: SseReader,
    answer: Answer,
}

impl Watch {
    pub fn new(upstream: Protocol) -> Self {
        Self { protocol: upstream, sse: SseReader::default(), answer: Answer::default() }
    }

    pub fn feed(&mut self, chunk: &[u8]) -> Seen {
        let mut seen = Seen::default();
        let (protocol, answer) = (self.protocol, &mut self.answer);
        let fed = self.sse.feed_each(chunk, |ev, taken| {
            seen.events_end = Some(taken);
            answer.note(protocol, &ev, taken, &mut seen);
        });
        if let Err(e) = fed {
            seen.malformed.get_or_insert(e.to_string());
        }
        seen
    }

    /// The end of the stream: an event without its blank line still counts.
    pub fn finish(&mut self) -> Seen {
        let mut seen = Seen::default();
        if let Some(last) = self.sse.finish() {
            self.answer.note(self.protocol, &last, 0, &mut seen);
        }
        seen
    }

    /// Whether the upstream said the answer is whole (the model stopped,
    /// or the terminator came).
    pub fn is_complete(&self) -> bool {
        self.answer.stopped || self.answer.ended
    }

    /// The token counts the stream's events stated so far.
    pub fn usage(&self) -> Option<ir::Usage> {
        self.answer.counts.usage(self.protocol)
    }
}

/// An object with a usage inside (Anthropic's `message_start` message).
#[derive(Deserialize)]
struct WithUsage {
    #[serde(default)]
    usage: Option<Counts>,
}

#[cfg(test)]
mod tests;
