//! Keepalive frames (SPEC §R6, `SSE_HEARTBEAT_INTERVAL_MS`): while the
//! gateway waits — for a stream's first event, or through upstream silence
//! after it — the client gets a frame of its own protocol that every real
//! client skips: an Anthropic `ping` event for Messages clients (Claude
//! Code's SDK ignores them), an SSE comment for the others (the OpenAI
//! SDKs, Codex and Gemini clients drop comment lines).
//!
//! [`EarlyCommit`] is the pre-commit half: a stream request still without
//! its first upstream event after one interval gets its `200` and SSE
//! headers at once, then keepalives while the dispatch loop goes on
//! (retries and failovers included) inside the response body. Whatever
//! the loop answers then becomes the rest of the stream; an error answer
//! becomes the protocol's error event, since the status is already sent.
//! So does the end of the shutdown grace while the loop still waits.

use app::types::Protocol;
use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::Response,
};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, future::BoxFuture, stream::BoxStream};
use http_body_util::BodyExt;
use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};
use tokio::time::{Interval, MissedTickBehavior};

use super::frames;
use crate::protocols::{responses, sse};

/// Serves a stream request: its answer as it is when the dispatch loop
/// has one within `period`, else an SSE response that keeps the client
/// alive until the answer comes — or until `shutdown` (the end of the
/// grace) resolves first: then the waiting loop is dropped (its attempt
/// logs `server_shutdown`) and the stream ends with the error event.
pub async fn serve(
    answer: BoxFuture<'static, Response>,
    client: Protocol,
    period: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Response {
    let mut answer = answer;
    if let Ok(response) = tokio::time::timeout(period, &mut answer).await {
        return response;
    }
    // The first keepalive goes out with the headers.
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let body = EarlyCommit { state: State::Waiting(answer), client, ticks, shutdown: Box::pin(shutdown) };
    let mut response = Response::new(Body::from_stream(body));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

enum State {
    Waiting(BoxFuture<'static, Response>),
    /// The answer was a stream: its body.
    Relaying(BoxStream<'static, Result<Bytes, axum::Error>>),
    /// The answer was an error: its body, to become an error event.
    Failing(BoxFuture<'static, Bytes>),
    Done,
}

pub struct EarlyCommit {
    state: State,
    client: Protocol,
    ticks: Interval,
    shutdown: BoxFuture<'static, ()>,
}

impl EarlyCommit {
    /// The error answer's body as the client protocol's error event.
    fn error_event(&self, body: &[u8]) -> Bytes {
        let text = String::from_utf8_lossy(body);
        match self.client {
            Protocol::Anthropic => sse::frame(Some("error"), &text),
            Protocol::Responses => {
                let error = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v.get("error").cloned());
                let field = |k: &str| error.as_ref().and_then(|e| e.get(k)?.as_str().map(str::to_owned));
                let message = field("message").unwrap_or_else(|| text.into_owned());
                responses::failed_event_with_code(&field("code").unwrap_or_else(|| "server_error".into()), &message)
            }
            Protocol::OpenaiChat | Protocol::Gemini => sse::frame(None, &text),
        }
    }
}

impl Stream for EarlyCommit {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Relaying(body) => return body.as_mut().poll_next(cx),
                State::Failing(body) => {
                    let Poll::Ready(bytes) = body.as_mut().poll(cx) else { return Poll::Pending };
                    let event = this.error_event(&bytes);
                    this.state = State::Done;
                    return Poll::Ready(Some(Ok(event)));
                }
                State::Waiting(answer) => match answer.as_mut().poll(cx) {
                    Poll::Ready(response) => {
                        let (head, body) = response.into_parts();
                        this.state = if head.status.is_success() {
                            State::Relaying(StreamExt::boxed(body.into_data_stream()))
                        } else {
                            State::Failing(Box::pin(async move {
                                body.collect().await.map(|b| b.to_bytes()).unwrap_or_default()
                            }))
                        };
                    }
                    Poll::Pending => {
                        if this.shutdown.as_mut().poll(cx).is_ready() {
                            this.state = State::Done;
                            return Poll::Ready(Some(Ok(frames::error_event(this.client, frames::SHUTDOWN_MESSAGE))));
                        }
                        if this.ticks.poll_tick(cx).is_pending() {
                            return Poll::Pending;
                        }
                        return Poll::Ready(Some(Ok(frames::keepalive(this.client))));
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{http::StatusCode, response::IntoResponse};
    use tokio::time::Instant;

    const PERIOD: Duration = Duration::from_secs(15);

    /// An answer that comes after `after`.
    fn answer_after(after: Duration, response: fn() -> Response) -> BoxFuture<'static, Response> {
        Box::pin(async move {
            tokio::time::sleep(after).await;
            response()
        })
    }

    async fn frames(response: Response) -> Vec<(Duration, String)> {
        let started = Instant::now();
        let mut body = response.into_body().into_data_stream();
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            out.push((started.elapsed(), String::from_utf8_lossy(&chunk.unwrap()).into_owned()));
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_prompt_answer_is_served_as_it_is() {
        let resp = serve(
            answer_after(PERIOD / 2, || (StatusCode::TOO_MANY_REQUESTS, "{}").into_response()),
            Protocol::OpenaiChat,
            PERIOD,
            std::future::pending(),
        )
        .await;
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_answer_gets_keepalives_every_period_then_its_stream() {
        let started = Instant::now();
        let stream = || Response::new(Body::from("event: message_start\ndata: {}\n\n"));
        let resp =
            serve(answer_after(Duration::from_secs(50), stream), Protocol::Anthropic, PERIOD, std::future::pending())
                .await;
        assert_eq!((resp.status(), started.elapsed()), (StatusCode::OK, PERIOD), "committed after one period");
        let got = frames(resp).await;
        let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned();
        let at = |s| Duration::from_secs(s);
        assert_eq!(
            got,
            vec![
                (at(0), ping.clone()),
                (at(15), ping.clone()),
                (at(30), ping),
                (at(35), "event: message_start\ndata: {}\n\n".into())
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_error_becomes_the_protocols_error_event() {
        let error = || {
            (StatusCode::GATEWAY_TIMEOUT, r#"{"error":{"message":"no event","code":"STREAM_READINESS_TIMEOUT"}}"#)
                .into_response()
        };
        let serve =
            |client| serve(answer_after(Duration::from_secs(20), error), client, PERIOD, std::future::pending());
        let got = frames(serve(Protocol::OpenaiChat).await).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].1, ": keepalive\n\n");
        assert!(got[1].1.starts_with("data: {\"error\"") && got[1].1.contains("STREAM_READINESS_TIMEOUT"));
        let got = frames(serve(Protocol::Responses).await).await;
        let failed = &got[1].1;
        assert!(failed.contains("response.failed") && failed.contains("no event"), "{got:?}");
        assert!(failed.contains("\"code\":\"STREAM_READINESS_TIMEOUT\""), "{got:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_end_of_the_grace_ends_a_waiting_stream_with_the_error_event_and_drops_the_loop() {
        struct Dropped(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let guard = Dropped(dropped.clone());
        let never = Box::pin(async move {
            let _guard = guard;
            std::future::pending::<Response>().await
        });
        let grace_over = tokio::time::sleep(Duration::from_secs(40));
        let got = frames(serve(never, Protocol::Anthropic, PERIOD, grace_over).await).await;
        let times: Vec<_> = got.iter().map(|(at, _)| at.as_secs()).collect();
        // Committed at 15 s; the grace ends at 40 s, 25 s into the stream.
        assert_eq!(times, [0, 15, 25], "keepalives, then the error event at the grace end: {got:?}");
        let last = &got[2].1;
        assert!(last.starts_with("event: error") && last.contains("shutting down"), "{last}");
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst), "the waiting loop (and its attempt) is dropped");
    }
}
