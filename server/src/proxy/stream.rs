//! Pass-through of an upstream SSE stream: bytes go to the client as they
//! arrive (no buffering); the log row is written exactly once, when the
//! stream ends, fails, or the client goes away (drop).

use bytes::Bytes;
use futures_util::{Stream, stream::BoxStream};
use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Instant,
};

use super::usage;
use crate::request_log::{AttemptRecord, LogSink};

pub struct PassThrough {
    inner: BoxStream<'static, reqwest::Result<Bytes>>,
    started: Instant,
    /// `Some` until the log row is written.
    record: Option<AttemptRecord>,
    logs: LogSink,
    failed: bool,
}

impl PassThrough {
    pub fn new(
        inner: BoxStream<'static, reqwest::Result<Bytes>>,
        started: Instant,
        record: AttemptRecord,
        logs: LogSink,
    ) -> Self {
        Self { inner, started, record: Some(record), logs, failed: false }
    }

    fn finish(&mut self, error: Option<(&'static str, String)>) {
        let Some(mut r) = self.record.take() else { return };
        r.latency_ms = self.started.elapsed().as_millis() as i64;
        if let Some((kind, message)) = error {
            r.error_kind = Some(kind.to_owned());
            r.error_message = Some(message);
        }
        tracing::debug!(request_id = %r.request_id, provider = %r.provider, connection_id = r.connection_id.as_deref().unwrap_or(""), model = %r.model, status = r.status, latency_ms = r.latency_ms, error_kind = r.error_kind.as_deref().unwrap_or(""), "stream finished");
        self.logs.record(r);
    }
}

/// The SSE frame that ends a client stream after an upstream failure, so
/// the client sees an error instead of a silently truncated answer.
fn error_frame(message: &str) -> Bytes {
    let body =
        serde_json::json!({"error": {"message": message, "type": "server_error", "code": "upstream_stream_error"}});
    Bytes::from(format!("data: {body}\n\n"))
}

impl Stream for PassThrough {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                let elapsed = self.started.elapsed().as_millis() as i64;
                if let Some(r) = self.record.as_mut() {
                    r.ttfb_ms.get_or_insert(elapsed);
                    if let Some(u) = usage::from_sse_chunk(&chunk) {
                        r.prompt_tokens = u.prompt_tokens;
                        r.completion_tokens = u.completion_tokens;
                        r.cached_tokens = u.cached();
                    }
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(_))) => {
                self.failed = true;
                let message = "the upstream stream was interrupted";
                self.finish(Some(("stream_interrupted", message.into())));
                Poll::Ready(Some(Ok(error_frame(message))))
            }
            Poll::Ready(None) => {
                self.finish(None);
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for PassThrough {
    fn drop(&mut self) {
        self.finish(Some(("client_disconnected", "the client closed the stream early".into())));
    }
}
