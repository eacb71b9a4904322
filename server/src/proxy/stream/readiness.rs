//! The readiness gate (SPEC §R6): a stream is committed to the client only
//! at the first useful upstream event — model output, the answer's end, or
//! an error; a role-only or empty delta, metadata and pings do not commit
//! it. Until then nothing has reached the client, so the dispatch loop may
//! still retry the connection or fail over — also when the upstream closes
//! before the answer is whole or sends something that is not an event.
//! The deadline is the attempt's: it already covers the wait for the
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

use super::{
    progress::{Seen, Watch},
    whole::WholeEvents,
};

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
    /// The upstream closed after useful events, but before its answer was
    /// whole (`stream_truncated`).
    Truncated,
    /// An event was not JSON, or too large to read (`stream_malformed`).
    Malformed(String),
}

impl NotReady {
    /// What a chunk, or the end of the stream, says against the stream.
    fn of(seen: &Seen) -> Option<Self> {
        match (&seen.malformed, &seen.error) {
            (Some(m), _) => Some(Self::Malformed(m.clone())),
            (None, Some(e)) => Some(Self::Failed(e.clone())),
            (None, None) => None,
        }
    }
}

/// The chunks read up to and including the first useful event (the
/// client gets them first), or why there was none. `ended` tells that the
/// answer is already over: the upstream closed after it was whole, or its
/// terminator came (the chunk that held it is cut right after it).
#[derive(Default)]
pub struct Ready {
    /// Whole events, in order.
    pub held: Vec<Bytes>,
    pub ended: bool,
    /// An event still arriving after them.
    pub whole: WholeEvents,
}

impl Ready {
    /// Keeps `chunk`'s whole events — up to the terminator, if it holds it
    /// (then the answer is over).
    fn hold(&mut self, mut chunk: Bytes, seen: &Seen) {
        if let Some(n) = seen.end_at {
            chunk.truncate(n);
            self.ended = true;
        }
        let events = self.whole.cut(chunk, seen.through());
        if !events.is_empty() {
            self.held.push(events);
        }
    }

    /// The upstream closed after a whole answer: its last event, even
    /// unterminated, is held too.
    fn closed(mut self) -> Self {
        let last = self.whole.last();
        if !last.is_empty() {
            self.held.push(last);
        }
        Self { ended: true, ..self }
    }
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
    let mut ready = Ready::default();
    loop {
        let next = tokio::time::timeout_at(deadline, upstream.next()).await.map_err(|_| NotReady::Timeout)?;
        match next {
            None => {
                let last = watch.finish();
                return match NotReady::of(&last) {
                    Some(why) => Err(why),
                    None if watch.is_complete() => Ok(ready.closed()),
                    None if last.ready => Err(NotReady::Truncated),
                    None => Err(NotReady::EarlyEof),
                };
            }
            Some(Err(e)) => return Err(NotReady::Broken(e.to_string())),
            Some(Ok(chunk)) => {
                let seen = watch.feed(&chunk);
                if let Some(why) = NotReady::of(&seen) {
                    return Err(why);
                }
                ready.hold(chunk, &seen);
                if seen.ready {
                    return Ok(ready);
                }
            }
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
    // Counted in whole events: a huge event still arriving commits nothing.
    let held = |ready: &Ready| ready.held.iter().map(Bytes::len).sum::<usize>();
    while !ready.ended && held(&ready) < HOLDBACK_BYTES {
        let Ok(next) = tokio::time::timeout_at(until, upstream.next()).await else { break };
        match next {
            None => {
                if let Some(why) = NotReady::of(&watch.finish()) {
                    return Err(why);
                }
                if !watch.is_complete() {
                    return Err(NotReady::Truncated);
                }
                ready = ready.closed();
            }
            Some(Err(e)) => return Err(NotReady::Broken(e.to_string())),
            Some(Ok(chunk)) => {
                let seen = watch.feed(&chunk);
                if let Some(why) = NotReady::of(&seen) {
                    return Err(why);
                }
                ready.hold(chunk, &seen);
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
    const DELTA: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n";
    const STOP: &str = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

    fn chunks(parts: &[&str]) -> impl Stream<Item = Item> + Unpin + use<> {
        stream::iter(parts.iter().map(|p| Ok(Bytes::from(p.to_string()))).collect::<Vec<_>>())
    }

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
        tx.send(Ok(Bytes::from(DELTA))).unwrap();
        let mut w = Watch::new(Protocol::Anthropic);
        let ready = first_event(&mut rx, &mut w, Instant::now() + Duration::from_secs(1)).await.unwrap();
        let held: Vec<Bytes> = [PING, START, DELTA].map(Bytes::from).into();
        assert_eq!(ready.held, held, "metadata is held (as whole events), the text commits");
        assert!(!ready.ended);
    }

    /// An OpenAI upstream's first chunk says only who speaks: a stall
    /// after it is a stream that never became ready, which fails over.
    #[tokio::test(start_paused = true)]
    async fn a_role_chunk_then_silence_is_a_readiness_timeout() {
        let (tx, mut rx) = channel();
        tx.send(Ok(Bytes::from("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")))
            .unwrap();
        let mut w = Watch::new(Protocol::OpenaiChat);
        let started = Instant::now();
        let res = first_event(&mut rx, &mut w, started + Duration::from_secs(80)).await;
        assert_eq!((res.err(), started.elapsed()), (Some(NotReady::Timeout), Duration::from_secs(80)));
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
        let mut whole = chunks(&[&format!("{START}{DELTA}{STOP}")]);
        let mut w = Watch::new(Protocol::Anthropic);
        assert!(first_event(&mut whole, &mut w, deadline).await.is_ok_and(|r| r.ended), "a whole answer in one read");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_or_garbled_stream_is_not_ready() {
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut w = Watch::new(Protocol::Anthropic);
        let cut = first_event(&mut chunks(&[START, DELTA.trim_end()]), &mut w, deadline).await;
        assert_eq!(cut.err(), Some(NotReady::Truncated), "text, then the end without message_stop");
        let mut w = Watch::new(Protocol::Anthropic);
        let garbage = first_event(&mut chunks(&[START, "data: {\"type\": nope\n\n"]), &mut w, deadline).await;
        assert!(matches!(garbage.err(), Some(NotReady::Malformed(_))));
        let mut w = Watch::new(Protocol::OpenaiChat);
        let cr = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\rdata: [DONE]\r\r";
        assert!(matches!(first_event(&mut chunks(&[cr]), &mut w, deadline).await.err(), Some(NotReady::Malformed(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn the_terminator_ends_the_answer_where_it_stands() {
        let (tx, mut rx) = channel();
        tx.send(Ok(Bytes::from(format!("{DELTA}{STOP}event: content_block_delta\ndata: late\n\n")))).unwrap();
        let mut w = Watch::new(Protocol::Anthropic);
        let ready = first_event(&mut rx, &mut w, Instant::now() + Duration::from_secs(1)).await.unwrap();
        assert!(ready.ended, "no wait for the upstream to close");
        assert_eq!(ready.held, vec![Bytes::from(format!("{DELTA}{STOP}"))], "what followed is dropped");
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_back_catches_an_early_break_and_lets_a_healthy_stream_through() {
        let ready = || Ready { held: vec![Bytes::from(START)], ..Ready::default() };
        let delta = DELTA;
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
        let mut w = Watch::new(Protocol::Anthropic);
        let whole = hold_back(&mut chunks(&[delta, STOP]), &mut w, ready()).await;
        assert!(whole.is_ok_and(|r| r.ended && r.held.len() == 3));
        // A huge line still arriving is no reason to commit: it is read
        // to its end, and found to be garbage.
        let mut w = Watch::new(Protocol::Anthropic);
        let huge = format!("data: {}", "x".repeat(HOLDBACK_BYTES * 2));
        let garbled = hold_back(&mut chunks(&[delta, &huge, "\n\n"]), &mut w, ready()).await;
        assert!(matches!(garbled.err(), Some(NotReady::Malformed(_))));
        // One that closes before its end is cut, and retried unseen.
        let mut w = Watch::new(Protocol::Anthropic);
        assert_eq!(hold_back(&mut chunks(&[delta]), &mut w, ready()).await.err(), Some(NotReady::Truncated));
    }
}
