//! Relays an upstream SSE stream: bytes go to the client as they arrive
//! (no buffering; translated event by event when the upstream speaks
//! another protocol); the log row is written exactly once, when the stream
//! ends, fails, or the client goes away (drop). A failed upstream stream
//! ends with an error event in the client's protocol, never a silent cut.

use app::types::Protocol;
use bytes::Bytes;
use futures_util::{Stream, stream::BoxStream};
use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Instant,
};

use super::usage;
use crate::{
    protocols::{
        anthropic, gemini_inbound, sse,
        translate::{self, StreamTranslator},
    },
    request_log::{AttemptRecord, LogSink},
};

pub struct PassThrough {
    inner: BoxStream<'static, Result<Bytes, hyper::Error>>,
    started: Instant,
    /// `Some` until the log row is written.
    record: Option<AttemptRecord>,
    logs: LogSink,
    client: Protocol,
    translator: Option<StreamTranslator>,
    ended: bool,
}

impl PassThrough {
    pub fn new(
        inner: BoxStream<'static, Result<Bytes, hyper::Error>>,
        started: Instant,
        record: AttemptRecord,
        logs: LogSink,
        client: Protocol,
        translator: Option<StreamTranslator>,
    ) -> Self {
        Self { inner, started, record: Some(record), logs, client, translator, ended: false }
    }

    fn finish(&mut self, error: Option<(&'static str, String)>) {
        let Some(mut r) = self.record.take() else { return };
        r.latency_ms = self.started.elapsed().as_millis() as i64;
        if let Some(u) = self.translator.as_ref().and_then(StreamTranslator::usage) {
            r.prompt_tokens = i64::try_from(u.input_tokens).ok();
            r.completion_tokens = i64::try_from(u.output_tokens).ok();
            r.cached_tokens = u.cached_tokens.and_then(|c| i64::try_from(c).ok());
        }
        if let Some((kind, message)) = error {
            r.error_kind = Some(kind.to_owned());
            r.error_message = Some(message);
        }
        tracing::debug!(request_id = %r.request_id, provider = %r.provider, connection_id = r.connection_id.as_deref().unwrap_or(""), model = %r.model, status = r.status, latency_ms = r.latency_ms, error_kind = r.error_kind.as_deref().unwrap_or(""), "stream finished");
        self.logs.record(r);
    }

    /// Ends the stream with an error event the client understands.
    fn fail(&mut self, kind: &'static str, message: &str) -> Bytes {
        self.ended = true;
        self.finish(Some((kind, message.to_owned())));
        match (&mut self.translator, self.client) {
            (Some(t), _) => t.fail(message),
            (None, Protocol::Anthropic) => {
                sse::frame(Some("error"), &anthropic::error_body("api_error", message).to_string())
            }
            (None, Protocol::Responses) => translate::responses_error_frame(message),
            (None, Protocol::Gemini) => sse::frame(None, &gemini_inbound::error_body(500, message).to_string()),
            (None, _) => translate::openai_error_frame(message),
        }
    }
}

impl Stream for PassThrough {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            match self.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    let elapsed = self.started.elapsed().as_millis() as i64;
                    let translated = match self.translator.as_mut().map(|t| t.chunk(&chunk)) {
                        None => chunk,
                        Some(Ok(out)) => out,
                        Some(Err(e)) => return Poll::Ready(Some(Ok(self.fail("stream_interrupted", &e.0)))),
                    };
                    if let Some(r) = self.record.as_mut() {
                        r.ttfb_ms.get_or_insert(elapsed);
                        if let Some(u) = usage::from_sse_chunk(&translated) {
                            r.prompt_tokens = u.prompt_tokens;
                            r.completion_tokens = u.completion_tokens;
                            r.cached_tokens = u.cached();
                        }
                    }
                    if !translated.is_empty() {
                        return Poll::Ready(Some(Ok(translated)));
                    }
                }
                Poll::Ready(Some(Err(_))) => {
                    return Poll::Ready(Some(Ok(
                        self.fail("stream_interrupted", "the upstream stream was interrupted")
                    )));
                }
                Poll::Ready(None) => {
                    self.ended = true;
                    let tail = match self.translator.as_mut().map(StreamTranslator::finish) {
                        None => None,
                        Some(Ok(tail)) => Some(tail),
                        Some(Err(e)) => return Poll::Ready(Some(Ok(self.fail("stream_interrupted", &e.0)))),
                    };
                    self.finish(None);
                    return Poll::Ready(tail.filter(|t| !t.is_empty()).map(Ok));
                }
            }
        }
    }
}

impl Drop for PassThrough {
    fn drop(&mut self) {
        self.finish(Some(("client_disconnected", "the client closed the stream early".into())));
    }
}
