//! The readiness gate (SPEC §R6): a stream is committed to the client only
//! at the first useful upstream event. Until then nothing has reached the
//! client, so the dispatch loop may still retry the connection or fail
//! over. The deadline is the attempt's: it already covers the wait for the
//! response headers.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
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

#[cfg(test)]
mod tests {
    use super::*;
    use app::types::Protocol;
    use futures_util::stream;
    use std::time::Duration;
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
}
