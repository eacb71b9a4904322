//! Relays a committed upstream SSE stream: bytes go to the client as they
//! arrive (no buffering; translated event by event when the upstream
//! speaks another protocol), watched by the content-stall watchdog
//! (SPEC §R6: no model output for `STREAM_IDLE_TIMEOUT_MS` → the attempt
//! is aborted). Whatever ends the stream — its last byte, a broken
//! connection, an error event, a stall, the client going away — is
//! reported exactly once to the attempt's [`Finish`], so the engine hears
//! how the stream ended, not that its headers arrived. A stream that fails
//! after commit is never replayed from its start: with mid-stream recovery
//! on (`resumable`), the request is sent again with the text so far as its
//! prefix and the continuation is relayed in its place (`continuation`);
//! otherwise, or when that fails too, it ends with the error event of the
//! client's protocol. Through upstream silence the client gets keepalive
//! frames every heartbeat period (they do not count as output). With the
//! throughput watchdog on, a stream whose useful output stays below its
//! rate is aborted too (`resilience::throughput`).
//!
//! The stream is complete only when its upstream said so (see
//! `progress`): a close before that, or an event that is not JSON, ends
//! the client's stream with its error event and is recorded as
//! `stream_truncated` / `stream_malformed` — a cut answer is never given
//! the normal terminator. The upstream's terminator ends the client's
//! stream at once: the upstream body is let go (its connection closed, or
//! pooled when it was read whole), what it sent after is dropped. Once the
//! model has stopped, a stall, a break or garbage ends the stream as the
//! complete answer it already is.

use app::types::Protocol;
use bytes::Bytes;
use futures_util::{Stream, stream::BoxStream};
use std::{
    collections::VecDeque,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};
use tokio::time::Instant;

use super::{
    frames::{self, error_event},
    progress::Watch,
    whole::WholeEvents,
};
use crate::protocols::{ir, translate::StreamTranslator};

/// How a relayed stream ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The upstream finished the stream.
    Complete,
    /// The upstream connection broke mid-stream.
    Broken(String),
    /// The upstream reported an error inside the stream.
    UpstreamError(String),
    /// The upstream closed before its answer was whole.
    Truncated,
    /// An upstream event was not JSON, or too large to read.
    Malformed(String),
    /// No model output within the stall budget.
    Stalled(Duration),
    /// Useful output below the throughput watchdog's rate
    /// (`STREAM_THROUGHPUT_TOO_LOW`).
    TooSlow,
    /// The client went away first.
    ClientGone,
    /// The gateway's shutdown grace ended before the stream did.
    Shutdown,
}

impl StreamEnd {
    /// The `error_kind` of the attempt's log row.
    pub fn kind(&self) -> Option<&'static str> {
        match self {
            Self::Complete => None,
            Self::Broken(_) | Self::UpstreamError(_) => Some("stream_interrupted"),
            Self::Truncated => Some("stream_truncated"),
            Self::Malformed(_) => Some("stream_malformed"),
            Self::Stalled(_) => Some("stream_stalled"),
            Self::TooSlow => Some("stream_throughput_too_low"),
            Self::ClientGone => Some("client_disconnected"),
            Self::Shutdown => Some("server_shutdown"),
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::Complete => String::new(),
            Self::Broken(e) => format!("the upstream stream was interrupted: {e}"),
            Self::UpstreamError(e) => format!("the upstream stream failed: {e}"),
            Self::Truncated => "the upstream stream ended before its answer was complete".to_owned(),
            Self::Malformed(e) => format!("the upstream stream turned unreadable: {e}"),
            Self::Stalled(d) => format!("the upstream stream stalled: no model output for {} s", d.as_secs()),
            Self::TooSlow => {
                "STREAM_THROUGHPUT_TOO_LOW: the upstream stream's useful output is below the minimum rate".to_owned()
            }
            Self::ClientGone => "the client closed the stream early".to_owned(),
            Self::Shutdown => frames::SHUTDOWN_MESSAGE.to_owned(),
        }
    }
}

/// The attempt behind a stream: told about every chunk the client gets,
/// and, once, how the stream ended.
pub trait Finish: Send + Unpin + 'static {
    /// A chunk reached the client.
    fn relayed(&mut self);
    fn finish(&mut self, end: StreamEnd, usage: Option<ir::Usage>);
    /// `text` without the attempt's credential, for error text that
    /// reaches the client (an upstream may echo the key it was sent).
    fn redact(&self, text: &str) -> String;
}

/// What `poll_upstream` has for the client.
enum Next {
    /// An upstream chunk, to translate.
    Upstream(Bytes),
    /// A keepalive frame, as it is.
    Keepalive,
    /// The stream is over; its last frame, if any.
    End(Option<Bytes>),
    /// The attempt failed and a continuation is on its way.
    Resuming,
}

/// The committed part of a stream.
pub struct Committed {
    /// The chunks the readiness gate read (sent first).
    pub held: Vec<Bytes>,
    /// The upstream already closed after them.
    pub ended: bool,
    /// The reader that watched them, to go on where it stopped.
    pub watch: Watch,
    /// The event still arriving after them.
    pub whole: WholeEvents,
}

/// An upstream body as the relay reads it (errors as their text).
pub type Upstream = BoxStream<'static, Result<Bytes, String>>;

pub struct Relay<F: Finish> {
    upstream: Upstream,
    held: VecDeque<Bytes>,
    upstream_ended: bool,
    watch: Watch,
    /// Whole events only go to the client.
    whole: WholeEvents,
    /// Fires `stall` after the last model output.
    stall: Idle,
    /// Fires one heartbeat period after the last frame the client got.
    heartbeat: Idle,
    throughput: Option<Throughput>,
    client: Protocol,
    translator: Option<StreamTranslator>,
    /// An error event the upstream sent (passed through as it is).
    upstream_error: Option<String>,
    /// The chunk just read completed an upstream error event: what it
    /// becomes for the client is redacted.
    error_chunk: bool,
    /// `Some` until the stream ended.
    attempt: Option<F>,
    /// Resolves when the gateway's shutdown grace is over.
    shutdown: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Mid-stream recovery (`continuation`): taken when used, once.
    resume: Option<Resume>,
    /// The continuation being dispatched, and why the stream needed it.
    resuming: Option<(Continuation, String)>,
    /// The stream relays a continuation, which runs its own watchdogs.
    continued: bool,
    /// The client's stream is over.
    closed: bool,
}

impl<F: Finish> Relay<F> {
    pub fn new(
        upstream: Upstream,
        committed: Committed,
        budgets: Budgets,
        client: Protocol,
        translator: Option<StreamTranslator>,
        attempt: F,
    ) -> Self {
        Self {
            upstream,
            held: committed.held.into(),
            upstream_ended: committed.ended,
            watch: committed.watch,
            whole: committed.whole,
            stall: Idle::new(budgets.stall),
            heartbeat: Idle::new(budgets.heartbeat),
            throughput: budgets.throughput.map(Throughput::start),
            client,
            translator,
            upstream_error: None,
            error_chunk: false,
            attempt: Some(attempt),
            shutdown: None,
            resume: None,
            resuming: None,
            continued: false,
            closed: false,
        }
    }

    /// Continues the stream through `resume` when it fails after commit
    /// (mid-stream recovery); it must be relayed through a translator
    /// that keeps its transcript.
    pub fn resumable(mut self, resume: Resume) -> Self {
        self.resume = Some(resume);
        self
    }

    /// Ends the stream (with the error event) when `shutdown` resolves.
    pub fn until(mut self, shutdown: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Box::pin(shutdown));
        self
    }

    /// The stream's token counts: as translated, else as the watch read
    /// them from the upstream's own events.
    fn usage(&self) -> Option<ir::Usage> {
        self.translator.as_ref().and_then(StreamTranslator::usage).or_else(|| self.watch.usage())
    }

    fn end(&mut self, end: StreamEnd) {
        let usage = self.usage();
        if let Some(mut a) = self.attempt.take() {
            a.finish(end, usage);
        }
    }

    /// The attempt failed: the stream goes on as a continuation where that
    /// can be joined, else it ends with an error event.
    fn fail(&mut self, end: StreamEnd) -> Next {
        // Redacted: an upstream may echo the credential in its error text.
        let message = self.attempt.as_ref().map_or_else(|| end.message(), |a| a.redact(&end.message()));
        if let Some(continuation) = self.continuation(&end) {
            self.end(end);
            self.resuming = Some((continuation, message));
            return Next::Resuming;
        }
        self.end(end);
        Next::End(Some(self.error_frame(&message)))
    }

    /// The error event the client understands.
    fn error_frame(&mut self, message: &str) -> Bytes {
        match &mut self.translator {
            Some(t) => t.fail(message),
            None => error_event(self.client, message),
        }
    }

    /// An error event's frames as the client may see them: an upstream
    /// that echoes the credential it was sent does not show it to the
    /// client (an event split over several chunks is redacted in its
    /// last one, where the watch recognises it).
    fn redacted(&self, out: Bytes) -> Bytes {
        let Some(attempt) = self.attempt.as_ref() else { return out };
        let text = String::from_utf8_lossy(&out);
        let clean = attempt.redact(&text);
        if clean == text { out } else { Bytes::from(clean) }
    }

    /// The upstream went wrong after commit (`end`): the complete answer
    /// when the model had already stopped, else the failure.
    fn failing(&mut self, end: StreamEnd) -> Next {
        if self.watch.is_complete() {
            self.let_go();
            return self.complete();
        }
        self.fail(end)
    }

    /// Lets the upstream body go: the answer needs nothing more of it.
    fn let_go(&mut self) {
        self.upstream_ended = true;
        self.upstream = Box::pin(futures_util::stream::empty());
    }

    /// The upstream closed (or its terminator came): the translator's
    /// closing frames — or the error event when the answer is not whole.
    fn complete(&mut self) -> Next {
        let last = self.watch.finish();
        if let Some(e) = last.error {
            self.upstream_error.get_or_insert(e);
        }
        if let Some(e) = self.upstream_error.take() {
            // Passed through, the upstream's own error event already went
            // out; translated, the client gets its protocol's.
            if self.translator.is_none() {
                self.end(StreamEnd::UpstreamError(e));
                return Next::End(None);
            }
            return self.fail(StreamEnd::UpstreamError(e));
        }
        if !self.watch.is_complete() {
            return self.fail(last.malformed.map_or(StreamEnd::Truncated, StreamEnd::Malformed));
        }
        // The last event, even unterminated, then the translator's end.
        let last = self.whole.last();
        let tail = match self.translator.as_mut() {
            None => Ok(last),
            Some(t) => t.chunk(&last).and_then(|out| Ok([out, t.finish()?].concat().into())),
        };
        let tail: Bytes = match tail {
            Ok(tail) => tail,
            Err(e) => return self.fail(StreamEnd::UpstreamError(e.0)),
        };
        self.end(StreamEnd::Complete);
        Next::End((!tail.is_empty()).then_some(tail))
    }

    /// Whether everything of a whole answer has been relayed: nothing is
    /// held, the upstream is done and said the answer is complete.
    fn answer_is_over(&self) -> bool {
        self.upstream_ended
            && self.held.is_empty()
            && self.upstream_error.is_none()
            && self.resuming.is_none()
            && !self.closed
            && self.watch.is_complete()
    }

    /// The next upstream chunk (watched), a keepalive, or the end.
    fn poll_upstream(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        if let Some(waiting) = self.poll_resuming(cx) {
            return waiting;
        }
        if let Some(chunk) = self.held.pop_front() {
            return Poll::Ready(Next::Upstream(chunk));
        }
        if self.upstream_ended {
            return Poll::Ready(self.complete());
        }
        match self.upstream.as_mut().poll_next(cx) {
            Poll::Pending => {
                if self.shutdown.as_mut().is_some_and(|s| s.as_mut().poll(cx).is_ready()) {
                    return Poll::Ready(self.fail(StreamEnd::Shutdown));
                }
                if !self.continued && self.stall.poll_expired(cx) {
                    return Poll::Ready(self.failing(StreamEnd::Stalled(self.stall.budget)));
                }
                if let Some(t) = self.throughput.as_mut()
                    && t.check.as_mut().poll(cx).is_ready()
                    && t.judge(None)
                {
                    return Poll::Ready(self.failing(StreamEnd::TooSlow));
                }
                if self.heartbeat.poll_expired(cx) {
                    self.heartbeat.touch(Instant::now());
                    return Poll::Ready(Next::Keepalive);
                }
                Poll::Pending
            }
            Poll::Ready(Some(Ok(mut chunk))) => {
                let seen = self.watch.feed(&chunk);
                if let Some(m) = seen.malformed {
                    return Poll::Ready(self.failing(StreamEnd::Malformed(m)));
                }
                if let Some(n) = seen.end_at {
                    chunk.truncate(n);
                    self.let_go();
                }
                let chunk = self.whole.cut(chunk, seen.through());
                if seen.output {
                    self.stall.touch(Instant::now());
                }
                if self.throughput.as_mut().is_some_and(|t| t.judge(Some(&seen))) {
                    return Poll::Ready(self.fail(StreamEnd::TooSlow));
                }
                if let Some(e) = seen.error {
                    self.upstream_error.get_or_insert(e);
                    self.error_chunk = true;
                }
                Poll::Ready(Next::Upstream(chunk))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(self.failing(StreamEnd::Broken(e))),
            Poll::Ready(None) => Poll::Ready(self.complete()),
        }
    }
}

impl<F: Finish> Stream for Relay<F> {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.closed {
                return Poll::Ready(None);
            }
            let next = match this.poll_upstream(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(next) => next,
            };
            let chunk = match next {
                Next::End(last) => {
                    this.closed = true;
                    return Poll::Ready(last.map(Ok));
                }
                Next::Keepalive => return Poll::Ready(Some(Ok(frames::keepalive(this.client)))),
                Next::Resuming => continue,
                Next::Upstream(chunk) => chunk,
            };
            let out = match this.translator.as_mut().map(|t| t.chunk(&chunk)) {
                None => chunk,
                Some(Ok(out)) => out,
                Some(Err(e)) => match this.fail(StreamEnd::UpstreamError(e.0)) {
                    Next::End(last) => {
                        this.closed = true;
                        return Poll::Ready(last.map(Ok));
                    }
                    _ => continue,
                },
            };
            let mut out = if std::mem::take(&mut this.error_chunk) { this.redacted(out) } else { out };
            if !out.is_empty()
                && let Some(a) = this.attempt.as_mut()
            {
                a.relayed();
            }
            // The answer's end came with this chunk: the attempt finishes
            // now, with the client's closing frames — a client may hang up
            // as soon as it reads its last event.
            if this.answer_is_over()
                && let Next::End(tail) = this.complete()
            {
                this.closed = true;
                if let Some(tail) = tail {
                    out = [out, tail].concat().into();
                }
            }
            if !out.is_empty() {
                this.heartbeat.touch(Instant::now());
                return Poll::Ready(Some(Ok(out)));
            }
        }
    }
}

impl<F: Finish> Drop for Relay<F> {
    fn drop(&mut self) {
        self.end(StreamEnd::ClientGone);
    }
}

mod continuation;
#[cfg(test)]
mod tests;
mod watchdogs;

pub use continuation::{Continuation, Resume, Resumes};
pub use watchdogs::Budgets;
use watchdogs::{Idle, Throughput};
