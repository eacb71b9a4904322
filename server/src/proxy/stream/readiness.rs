//! The readiness gate (SPEC §R6): a stream is committed to the client only
//! at the first useful upstream event. Until then nothing has reached the
//! client, so the dispatch loop may still retry the connection or fail
//! over. The deadline is the attempt's: it already covers the wait for the
//! response headers.
//!
//! With stream recovery on (`STREAM_RECOVERY_ENABLED`), the commit point
//! moves later: [`hold_back`] keeps reading for up to [`HOLDBACK`] or
//! [`HOLDBACK_BYTES`] after the first event, so a stream that breaks or
//! reports an error that early is retried elsewhere, unseen by the client
//! (at most [`MAX_EARLY_RECOVERIES`] times per request).

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use std::time::Duration;
use tokio::time::Instant;

use super::progress::Watch;

/// Why a stream never became ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotReady {
    /// The upstream ended before its first useful event
    /// (`STREAM_EARLY_EOF`).
    EarlyEof,
    /// Nothing useful before the deadline (`STREAM_READINESS_TIMEOUT`).
    Timeout,
    /// The connection broke.
    Broken(String),
    /// The first event was an error the upstream sent in the stream.
    Failed(String),
}

/// The chunks read up to and including the first useful event (the
/// client gets them first), or why there was none. `ended` tells that the
/// upstream already closed after them.
pub struct Ready {
    pub held: Vec<Bytes>,
    pub ended: bool,
}

/// How long stream recovery holds a stream back after its first event.
pub const HOLDBACK: Duration = Duration::from_millis(750);
/// How much of a stream recovery holds back at most.
pub const HOLDBACK_BYTES: usize = 64 * 1024;
/// How many early failures one request may recover from.
pub const MAX_EARLY_RECOVERIES: u8 = 4;

/// Reads `upstream` until its first useful event or `deadline`.
pub async fn first_event<S, E>(upstream: &mut S, watch: &mut Watch, deadline: Instant) -> Result<Ready, NotReady>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let mut held = Vec::new();
    loop {
        let next = tokio::time::timeout_at(deadline, upstream.next()).await.map_err(|_| NotReady::Timeout)?;
        let seen = match next {
            None => {
                let last = watch.finish();
                if let Some(e) = last.error {
                    return Err(NotReady::Failed(e));
                }
                return if last.ready { Ok(Ready { held, ended: true }) } else { Err(NotReady::EarlyEof) };
            }
            Some(Err(e)) => return Err(NotReady::Broken(e.to_string())),
            Some(Ok(chunk)) => {
                let seen = watch.feed(&chunk);
                held.push(chunk);
                seen
            }
        };
        if let Some(e) = seen.error {
            return Err(NotReady::Failed(e));
        }
        if seen.ready {
            return Ok(Ready { held, ended: false });
        }
    }
}

/// Stream recovery's hold-back: goes on reading a ready stream for
/// [`HOLDBACK`] (or [`HOLDBACK_BYTES`], or its end); a break or an error
/// event in that time is a failure the dispatch loop can still retry.
pub async fn hold_back<S, E>(upstream: &mut S, watch: &mut Watch, mut ready: Ready) -> Result<Ready, NotReady>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let until = Instant::now() + HOLDBACK;
    let mut bytes: usize = ready.held.iter().map(Bytes::len).sum();
    while !ready.ended && bytes < HOLDBACK_BYTES {
        let Ok(next) = tokio::time::timeout_at(until, upstream.next()).await else { break };
        match next {
            None => {
                if let Some(e) = watch.finish().error {
                    return Err(NotReady::Failed(e));
                }
                ready.ended = true;
            }
            Some(Err(e)) => return Err(NotReady::Broken(e.to_string())),
            Some(Ok(chunk)) => {
                let seen = watch.feed(&chunk);
                bytes += chunk.len();
                ready.held.push(chunk);
                if let Some(e) = seen.error {
                    return Err(NotReady::Failed(e));
                }
            }
        }
    }
    Ok(ready)
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::types::Protocol;
    use futures_util::stream;
    use tokio::sync::mpsc;

    type Item = Result<Bytes, String>;

    fn channel() -> (mpsc::UnboundedSender<Item>, impl Stream<Item = Item> + Unpin) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, Box::pin(stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) })))
    }

    const PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";
    const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n";

    #[tokio::test(start_paused = true)]
    async fn pings_do_not_open_the_gate_and_the_deadline_counts() {
        let (tx, mut rx) = channel();
        let started = Instant::now();
        let pinger = async {
            for _ in 0..5 {
                tx.send(Ok(Bytes::from(PING))).unwrap();
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            std::future::pending::<()>().await;
        };
        let mut w = Watch::new(Protocol::Anthropic);
        let gate = first_event(&mut rx, &mut w, started + Duration::from_secs(80));
        let res = tokio::select! { r = gate => r, () = pinger => unreachable!() };
        assert_eq!(res.err(), Some(NotReady::Timeout));
        assert_eq!(started.elapsed(), Duration::from_secs(80));
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_useful_event_opens_it_with_what_came_before() {
        let (tx, mut rx) = channel();
        tx.send(Ok(Bytes::from(PING))).unwrap();
        tx.send(Ok(Bytes::from(&START[..20]))).unwrap();
        tx.send(Ok(Bytes::from(&START[20..]))).unwrap();
        let mut w = Watch::new(Protocol::Anthropic);
        let ready = first_event(&mut rx, &mut w, Instant::now() + Duration::from_secs(1)).await.unwrap();
        assert_eq!(ready.held.len(), 3);
        assert!(!ready.ended);
    }

    #[tokio::test(start_paused = true)]
    async fn an_end_or_error_before_it_says_why() {
        let mut w = Watch::new(Protocol::Anthropic);
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut eof = stream::iter(vec![Ok::<_, String>(Bytes::from(PING))]);
        assert_eq!(first_event(&mut eof, &mut w, deadline).await.err(), Some(NotReady::EarlyEof));
        let mut broken = stream::iter(vec![Err::<Bytes, _>("reset".to_owned())]);
        assert_eq!(first_event(&mut broken, &mut w, deadline).await.err(), Some(NotReady::Broken("reset".into())));
        let err = "event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"Overloaded\"}}\n\n";
        let mut failed = stream::iter(vec![Ok::<_, String>(Bytes::from(err))]);
        let mut w = Watch::new(Protocol::Anthropic);
        assert_eq!(first_event(&mut failed, &mut w, deadline).await.err(), Some(NotReady::Failed("Overloaded".into())));
        let mut whole = stream::iter(vec![Ok::<_, String>(Bytes::from(START.trim_end()))]);
        let mut w = Watch::new(Protocol::Anthropic);
        assert!(first_event(&mut whole, &mut w, deadline).await.is_ok_and(|r| r.ended));
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_back_catches_an_early_break_and_lets_a_healthy_stream_through() {
        let ready = || Ready { held: vec![Bytes::from(START)], ended: false };
        let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n";
        // A break 500 ms in: still held back, so a failure to retry.
        let (tx, mut rx) = channel();
        tx.send(Ok(Bytes::from(delta))).unwrap();
        let breaker = async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            tx.send(Err("reset".into())).unwrap();
            std::future::pending::<()>().await;
        };
        let mut w = Watch::new(Protocol::Anthropic);
        let held = tokio::select! { r = hold_back(&mut rx, &mut w, ready()) => r, () = breaker => unreachable!() };
        assert_eq!(held.err(), Some(NotReady::Broken("reset".into())));

        // A stream still going after 750 ms is committed with what came.
        let (tx, mut rx) = channel();
        tx.send(Ok(Bytes::from(delta))).unwrap();
        let started = Instant::now();
        let mut w = Watch::new(Protocol::Anthropic);
        let held = hold_back(&mut rx, &mut w, ready()).await.unwrap();
        assert_eq!((held.held.len(), held.ended, started.elapsed()), (2, false, HOLDBACK));
        drop(tx);

        // A short stream that ends inside the window is held whole.
        let mut whole = stream::iter(vec![Ok::<_, String>(Bytes::from(delta))]);
        let mut w = Watch::new(Protocol::Anthropic);
        assert!(hold_back(&mut whole, &mut w, ready()).await.is_ok_and(|r| r.ended && r.held.len() == 2));
    }
}
