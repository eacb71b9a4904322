//! A client socket that times out when the client is slow or silent.
//!
//! hyper's own header-read timer starts when it begins waiting for the
//! next request, so it also ends idle keep-alive connections: one number
//! for two different waits. Here the socket knows which wait it is in:
//!
//! * **head** — from accepting the connection, or from the first byte
//!   after an idle spell, until a request is in flight: the header-read
//!   timeout;
//! * **busy** — a request is in flight (its body has its own timeout,
//!   [`super::body`]; a long upstream wait is not the client's fault): no
//!   timeout;
//! * **idle** — between requests on a keep-alive connection: the
//!   keep-alive timeout.
//!
//! A request is in flight from the moment the service sees it until its
//! response body is dropped ([`InFlight`]). The timer is armed only when a
//! read would wait, and only re-armed when the phase changes, so a busy
//! connection costs no timer work per read.

use futures_util::task::AtomicWaker;
use std::{
    io,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
    time::{Instant, Sleep},
};

/// The requests of one connection: how many began, how many are still
/// in flight. A request may begin and end between two reads (a small
/// answer written at once), so the socket compares counts rather than
/// sampling "busy".
///
/// hyper may already be waiting for the socket to become readable when
/// the last response ends, and would not read again until the client
/// sends something; so the end of the last request wakes the reader,
/// which then starts the idle clock.
#[derive(Default)]
pub struct Activity {
    begun: AtomicUsize,
    in_flight: AtomicUsize,
    reader: AtomicWaker,
}

impl Activity {
    /// Marks a request in flight until the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.begun.fetch_add(1, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// No request is in flight (the connection is idle, or still sending
    /// its head).
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0
    }
}

/// One request in flight; travels with its response body.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.0.reader.wake();
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Head { since: Instant },
    Busy,
    Idle { since: Instant },
}

/// The two client waits a connection may not exceed.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub head: Duration,
    pub idle: Duration,
}

pub struct Watched {
    io: TcpStream,
    activity: Arc<Activity>,
    timeouts: Timeouts,
    phase: Phase,
    /// Requests begun when the phase was last updated.
    seen_begun: usize,
    timer: Option<Pin<Box<Sleep>>>,
    /// The deadline `timer` is set to.
    armed: Option<Instant>,
}

impl Watched {
    pub fn new(tcp: TcpStream, activity: Arc<Activity>, timeouts: Timeouts) -> Self {
        let phase = Phase::Head { since: Instant::now() };
        Self { io: tcp, activity, timeouts, phase, seen_begun: 0, timer: None, armed: None }
    }

    fn update_phase(&mut self) {
        let begun = self.activity.begun.load(Ordering::Relaxed);
        let busy = self.activity.in_flight.load(Ordering::Relaxed) > 0;
        let new_request = std::mem::replace(&mut self.seen_begun, begun) != begun;
        self.phase = match (busy, self.phase) {
            (true, _) => Phase::Busy,
            (false, Phase::Busy) => Phase::Idle { since: Instant::now() },
            (false, _) if new_request => Phase::Idle { since: Instant::now() },
            (false, other) => other,
        };
    }

    fn deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Head { since } => Some(since + self.timeouts.head),
            Phase::Idle { since } => Some(since + self.timeouts.idle),
            Phase::Busy => None,
        }
    }

    /// Whether the current wait is over (registers the waker otherwise).
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.activity.reader.register(cx.waker());
        let Some(deadline) = self.deadline() else { return false };
        if self.armed != Some(deadline) {
            match self.timer.as_mut() {
                Some(t) => t.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = Some(deadline);
        }
        self.timer.as_mut().is_some_and(|t| t.as_mut().poll(cx).is_ready())
    }
}

impl AsyncRead for Watched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.update_phase();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if matches!(this.phase, Phase::Idle { .. }) && buf.filled().len() > before {
                    this.phase = Phase::Head { since: Instant::now() };
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if this.poll_expired(cx) => {
                let what = if matches!(this.phase, Phase::Idle { .. }) { "keep-alive idle" } else { "header read" };
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, format!("client {what} timeout"))))
            }
            other => other,
        }
    }
}

crate::forward_writes::forward_writes!(AsyncWrite, [] Watched, io);
