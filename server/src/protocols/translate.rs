//! Any protocol to any other: a request is read into the internal
//! representation and written in the upstream's protocol; the answer goes
//! the other way, whole or event by event. Same-protocol traffic never
//! comes here — it passes through untouched — except a stream that may be
//! continued elsewhere (mid-stream recovery), whose events the gateway
//! must follow. Every protocol can be on either side.

use app::types::Protocol;
use bytes::Bytes;
use serde_json::Value;
use std::borrow::Cow;

use super::{
    anthropic, gemini, gemini_inbound,
    ir::{self, Event},
    json::{Invalid, invalid},
    openai_chat, responses,
    sse::{SseEvent, SseReader},
};

/// Where a protocol's chat endpoint sits under a connection's base URL.
pub fn upstream_path(p: Protocol, model: &str, stream: bool) -> Cow<'static, str> {
    match p {
        Protocol::OpenaiChat => Cow::Borrowed("/chat/completions"),
        Protocol::Anthropic => Cow::Borrowed("/v1/messages"),
        Protocol::Responses => Cow::Borrowed("/responses"),
        Protocol::Gemini => Cow::Owned(gemini::path(model, stream)),
    }
}

/// Reads a client's request in its protocol.
pub fn read_request(p: Protocol, body: &Value) -> Result<ir::Request, Invalid> {
    match p {
        Protocol::OpenaiChat => openai_chat::read_request(body),
        Protocol::Anthropic => anthropic::read_request(body),
        Protocol::Responses => responses::read_request(body),
        // The model and streaming come from the URL; the caller sets them.
        Protocol::Gemini => gemini_inbound::read_request(body, "", false),
    }
}

/// Writes a request for an upstream.
pub fn write_request(p: Protocol, req: &ir::Request) -> Result<Bytes, Invalid> {
    let v = match p {
        Protocol::OpenaiChat => openai_chat::write_request(req),
        Protocol::Anthropic => anthropic::write_request(req),
        Protocol::Responses => responses::write_request(req),
        Protocol::Gemini => gemini::write_request(req),
    };
    Ok(Bytes::from(v.to_string()))
}

/// An upstream's complete answer, in the client's protocol.
pub fn response(
    upstream: Protocol,
    body: &[u8],
    client: Protocol,
    created: i64,
) -> Result<(Bytes, ir::Usage), Invalid> {
    let r = read_response(upstream, body)?;
    let out = match client {
        Protocol::OpenaiChat => openai_chat::write_response(&r, created),
        Protocol::Anthropic => anthropic::write_response(&r),
        Protocol::Responses => responses::write_response(&r, created),
        Protocol::Gemini => gemini_inbound::write_response(&r),
    };
    Ok((Bytes::from(out.to_string()), r.usage))
}

/// A complete answer in protocol `p` (an upstream's, or the gateway's own
/// to a client: each protocol's answer has one shape).
fn read_response(p: Protocol, body: &[u8]) -> Result<ir::Response, Invalid> {
    let v: Value = serde_json::from_slice(body).map_err(|e| invalid("response", e.to_string()))?;
    match p {
        Protocol::OpenaiChat => openai_chat::read_response(&v),
        Protocol::Anthropic => anthropic::read_response(&v),
        Protocol::Responses => responses::read_response(&v),
        Protocol::Gemini => gemini::read_response(&v),
    }
}

/// The text of a complete answer in protocol `p` (its text parts joined;
/// reasoning and tool calls left out).
pub fn response_text(p: Protocol, body: &[u8]) -> Result<String, Invalid> {
    let r = read_response(p, body)?;
    Ok(r.parts.iter().filter_map(|part| if let ir::Part::Text(t) = part { Some(t.as_str()) } else { None }).collect())
}

/// The text of an upstream error body in any protocol's envelope.
pub fn error_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let e = v.get("error")?;
    e.get("message").and_then(Value::as_str).map(str::to_owned).or_else(|| e.as_str().map(str::to_owned))
}

/// The upstream side of a translated stream.
enum Reader {
    OpenaiChat(openai_chat::StreamReader),
    Anthropic(anthropic::StreamReader),
    Responses(responses::StreamReader),
    Gemini(gemini::StreamReader),
}

/// The client side of a translated stream.
enum Writer {
    OpenaiChat(openai_chat::StreamWriter),
    Anthropic(anthropic::StreamWriter),
    Responses(responses::StreamWriter),
    Gemini(gemini_inbound::StreamWriter),
}

impl Reader {
    fn new(upstream: Protocol) -> Self {
        match upstream {
            Protocol::OpenaiChat => Self::OpenaiChat(openai_chat::StreamReader::default()),
            Protocol::Anthropic => Self::Anthropic(anthropic::StreamReader::default()),
            Protocol::Responses => Self::Responses(responses::StreamReader::default()),
            Protocol::Gemini => Self::Gemini(gemini::StreamReader::default()),
        }
    }
}

/// Translates an upstream SSE stream into the client's protocol, chunk by
/// chunk: bytes in, the client's frames out, nothing held back beyond an
/// incomplete event.
pub struct StreamTranslator {
    sse: SseReader,
    reader: Reader,
    writer: Writer,
    usage: Option<ir::Usage>,
    done: bool,
    /// What the client was sent, kept when the stream may be continued
    /// elsewhere (mid-stream recovery).
    transcript: Option<Transcript>,
}

/// The answer so far, as far as a continuation needs it.
#[derive(Default)]
struct Transcript {
    text: String,
    /// A tool call or reasoning was sent: no continuation can join it.
    unjoinable: bool,
    stopped: bool,
    /// The continuation's own stream: its start is not the client's.
    continuing: bool,
    /// The prefix was sent without its trailing whitespace, which the
    /// client already has: the continuation's leading whitespace is dropped.
    trim_leading: bool,
    /// The continuation's first text, held while it may still be the
    /// answer starting over (an upstream that ignored the prefill).
    echo: Option<String>,
}

/// What a continuation's first text is, next to what the client has.
#[derive(Debug, PartialEq, Eq)]
enum Echo {
    /// Still a prefix of what the client has: hold it.
    Undecided,
    /// The answer started over: the first this many bytes repeat it.
    Repeat(usize),
    /// A real continuation.
    Fresh,
}

impl Echo {
    /// `first`, the continuation's text so far, next to `had`, the text
    /// the client has (as the continuation was sent it: no trailing
    /// whitespace).
    fn of(first: &str, had: &str) -> Self {
        if first.len() >= had.len() {
            if first.starts_with(had) { Self::Repeat(had.len()) } else { Self::Fresh }
        } else if had.starts_with(first) {
            Self::Undecided
        } else {
            Self::Fresh
        }
    }
}

impl Transcript {
    /// Notes `e`; false when it is not for the client. A continuation that
    /// stops while its text may still be the answer starting over fails:
    /// there is no telling what the client should see.
    fn note(&mut self, e: &mut Event) -> Result<bool, StreamFailed> {
        match e {
            Event::Start { .. } if self.continuing => return Ok(false),
            Event::Text(t) => {
                if let Some(first) = self.echo.as_mut() {
                    first.push_str(t);
                    match Echo::of(first, self.text.trim_end()) {
                        Echo::Undecided => return Ok(false),
                        Echo::Repeat(len) => *t = first.split_off(len),
                        Echo::Fresh => *t = std::mem::take(first),
                    }
                    self.echo = None;
                }
                if self.trim_leading {
                    let kept = t.trim_start().len();
                    t.replace_range(..t.len() - kept, "");
                    if t.is_empty() {
                        return Ok(false);
                    }
                    self.trim_leading = false;
                }
                self.text.push_str(t);
            }
            Event::Reasoning(_) | Event::ReasoningSignature(_) | Event::ToolCallStart { .. } => self.unjoinable = true,
            Event::Stop(_) => {
                self.undecided_echo()?;
                self.stopped = true;
            }
            _ => {}
        }
        Ok(true)
    }

    /// Fails when the continuation ended on text that may only repeat what
    /// the client has.
    fn undecided_echo(&self) -> Result<(), StreamFailed> {
        match &self.echo {
            Some(first) if !first.is_empty() => Err(StreamFailed(
                "the continuation started the answer over and ended before passing what the client already has"
                    .to_owned(),
            )),
            _ => Ok(()),
        }
    }
}

/// The upstream stream failed mid-way (an error event, an event too large).
#[derive(Debug, PartialEq, Eq)]
pub struct StreamFailed(pub String);

impl StreamTranslator {
    pub fn new(upstream: Protocol, client: Protocol, created: i64) -> Self {
        let reader = Reader::new(upstream);
        let writer = match client {
            Protocol::OpenaiChat => Writer::OpenaiChat(openai_chat::StreamWriter::new(created)),
            Protocol::Anthropic => Writer::Anthropic(anthropic::StreamWriter::default()),
            Protocol::Responses => Writer::Responses(responses::StreamWriter::new(created)),
            Protocol::Gemini => Writer::Gemini(gemini_inbound::StreamWriter::default()),
        };
        Self { sse: SseReader::default(), reader, writer, usage: None, done: false, transcript: None }
    }

    /// Keeps what the client is sent, so the stream can be continued
    /// elsewhere ([`Self::continuable`]).
    pub fn with_transcript(mut self) -> Self {
        self.transcript = Some(Transcript::default());
        self
    }

    /// The text sent so far, when a continuation can join it: nothing but
    /// text was sent (a tool call is never split across targets, and
    /// reasoning cannot be continued) and the answer has not stopped.
    pub fn continuable(&self) -> Option<&str> {
        let t = self.transcript.as_ref().filter(|t| !t.unjoinable && !t.stopped && !self.done)?;
        Some(&t.text)
    }

    /// From now on reads a continuation that speaks `protocol` (the
    /// client's, as the gateway relays it): its own start is dropped, the
    /// rest joins what the client already has.
    pub fn continue_from(&mut self, protocol: Protocol) {
        self.sse = SseReader::default();
        self.reader = Reader::new(protocol);
        if let Some(t) = self.transcript.as_mut() {
            t.continuing = true;
            t.trim_leading = t.text.ends_with(char::is_whitespace);
            t.echo = Some(String::new());
        }
    }

    /// The usage reported so far.
    pub fn usage(&self) -> Option<ir::Usage> {
        self.usage
    }

    /// Translates one upstream chunk (possibly into nothing yet).
    pub fn chunk(&mut self, chunk: &[u8]) -> Result<Bytes, StreamFailed> {
        let events = self.sse.feed(chunk).map_err(|e| StreamFailed(e.to_string()))?;
        let mut out = Vec::new();
        for ev in events {
            self.event(&ev, &mut out)?;
        }
        Ok(Bytes::from(out))
    }

    /// The upstream stream ended: the client's closing frames.
    pub fn finish(&mut self) -> Result<Bytes, StreamFailed> {
        let mut out = Vec::new();
        if let Some(ev) = self.sse.finish() {
            self.event(&ev, &mut out)?;
        }
        if let Some(t) = &self.transcript {
            t.undecided_echo()?;
        }
        self.done = true;
        out.extend_from_slice(&match &mut self.writer {
            Writer::OpenaiChat(w) => w.finish(),
            Writer::Anthropic(w) => w.finish(),
            Writer::Responses(w) => w.finish(),
            Writer::Gemini(w) => w.finish(),
        });
        Ok(Bytes::from(out))
    }

    /// The frame that ends the client's stream with an error.
    pub fn fail(&mut self, message: &str) -> Bytes {
        self.done = true;
        match &mut self.writer {
            Writer::OpenaiChat(_) => openai_error_frame(message),
            Writer::Anthropic(w) => w.fail("api_error", message),
            Writer::Responses(w) => w.fail(message),
            Writer::Gemini(w) => w.fail(message),
        }
    }

    fn event(&mut self, ev: &SseEvent, out: &mut Vec<u8>) -> Result<(), StreamFailed> {
        if self.done || ev.data == "[DONE]" {
            return Ok(());
        }
        let fault = |f: ir::StreamFault| StreamFailed(f.0);
        let events = match &mut self.reader {
            Reader::OpenaiChat(r) => r.read(ev),
            Reader::Anthropic(r) => r.read(ev).map_err(fault)?,
            Reader::Responses(r) => r.read(ev).map_err(fault)?,
            Reader::Gemini(r) => r.read(ev),
        };
        for mut e in events {
            if let Event::Usage(u) = &e {
                self.usage = Some(*u);
            }
            if let Some(t) = self.transcript.as_mut()
                && !t.note(&mut e)?
            {
                continue;
            }
            let bytes = match &mut self.writer {
                Writer::OpenaiChat(w) => w.write(e),
                Writer::Anthropic(w) => w.write(e),
                Writer::Responses(w) => w.write(e),
                Writer::Gemini(w) => w.write(e),
            };
            if let Some(b) = bytes {
                out.extend_from_slice(&b);
            }
        }
        Ok(())
    }
}

/// The OpenAI-style error frame that ends a chat stream.
pub fn openai_error_frame(message: &str) -> Bytes {
    let body = openai_chat::error_body("server_error", "upstream_stream_error", message);
    super::sse::frame(None, &body.to_string())
}

/// The `response.failed` frame that ends a Responses stream passed through.
pub fn responses_error_frame(message: &str) -> Bytes {
    responses::failed_event(message)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod responses_gemini_tests;

#[cfg(test)]
mod more_directions_tests;
