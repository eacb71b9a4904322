//! The two bodies of a client request's life on the socket: the request
//! body may not pause longer than the body-read timeout (a client that
//! announces 100 bytes and sends 10 no longer holds the connection), nor
//! take longer as a whole than the body deadline (one byte per pause, just
//! in time, holds it no longer either), and
//! the response body carries the request's [`InFlight`] mark to its last
//! byte, so the socket knows when it is idle again.

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};
use tokio::time::{Instant, Sleep};

use super::watched::InFlight;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that fails once it has waited `timeout` for more bytes,
/// or is still arriving at its deadline.
pub struct TimedBody<B> {
    inner: B,
    timeout: Duration,
    deadline: Instant,
    /// Armed only while the body waits (most bodies never do).
    timer: Option<Pin<Box<Sleep>>>,
}

impl<B> TimedBody<B> {
    /// `inner`, which must arrive within `whole` from now, pausing at most
    /// `timeout` at a time.
    pub fn new(inner: B, timeout: Duration, whole: Duration) -> Self {
        Self { inner, timeout, deadline: Instant::now() + whole, timer: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BodyTimeout {
    #[error("the request body stalled: no bytes for {0} ms")]
    Stalled(u128),
    #[error("the request body did not arrive whole in time")]
    TooSlow,
}

impl<B> HttpBody for TimedBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.timer = None;
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let (timeout, deadline) = (this.timeout, this.deadline);
                let timer = this.timer.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep_until((Instant::now() + timeout).min(deadline)))
                });
                if timer.as_mut().poll(cx).is_ready() {
                    let late = if Instant::now() >= deadline {
                        BodyTimeout::TooSlow
                    } else {
                        BodyTimeout::Stalled(timeout.as_millis())
                    };
                    return Poll::Ready(Some(Err(late.into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request in flight until it is dropped.
pub struct Tracked {
    inner: Body,
    _in_flight: InFlight,
}

impl Tracked {
    pub fn new(inner: Body, in_flight: InFlight) -> Self {
        Self { inner, _in_flight: in_flight }
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
