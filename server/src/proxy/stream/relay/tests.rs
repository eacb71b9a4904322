//! The relay on paused tokio time with an in-process upstream: no sockets,
//! exact budgets.

use super::*;
use crate::protocols::sse;
use futures_util::StreamExt;
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::mpsc;

type Ends = Arc<Mutex<Vec<StreamEnd>>>;

struct Recorder(Ends);

impl Finish for Recorder {
    fn relayed(&mut self) {}
    fn finish(&mut self, end: StreamEnd, _: Option<ir::Usage>) {
        self.0.lock().push(end);
    }
    fn redact(&self, text: &str) -> String {
        text.replace("sk-live-secret", "[redacted]")
    }
}

const STALL: Duration = Duration::from_secs(600);
const BUDGETS: Budgets = Budgets { stall: STALL, heartbeat: Duration::from_secs(15), throughput: None };

fn relay(
    client: Protocol,
    upstream: Protocol,
) -> (mpsc::UnboundedSender<Result<Bytes, String>>, Relay<Recorder>, Ends) {
    let (tx, rx) = mpsc::unbounded_channel();
    let body = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) }).boxed();
    let ends = Ends::default();
    let committed =
        Committed { held: vec![], ended: false, watch: Watch::new(upstream), whole: WholeEvents::default() };
    let translator = (client != upstream).then(|| StreamTranslator::new(upstream, client, 0));
    (tx, Relay::new(body, committed, BUDGETS, client, translator, Recorder(ends.clone())), ends)
}

fn delta(kind: &str, field: &str, text: &str) -> Bytes {
    let data = serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: text}});
    sse::frame(Some("content_block_delta"), &data.to_string())
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_output_is_aborted_after_the_stall_budget_and_reasoning_restarts_it() {
    let (tx, mut relay, ends) = relay(Protocol::Anthropic, Protocol::Anthropic);
    let started = Instant::now();
    let think = delta("thinking_delta", "thinking", "");
    let ping = sse::frame(Some("ping"), r#"{"type":"ping"}"#);
    tx.send(Ok(think.clone())).unwrap();
    assert_eq!(relay.next().await.unwrap().unwrap(), think);
    // Pings every 100 s keep the connection busy but are not output.
    // Upstream pings every 10 s keep the connection busy but are not output.
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        tx.send(Ok(ping.clone())).unwrap();
        assert_eq!(relay.next().await.unwrap().unwrap(), ping);
    }
    tx.send(Ok(think.clone())).unwrap(); // at 500 s: the budget starts over
    assert_eq!(relay.next().await.unwrap().unwrap(), think);
    let mut last = relay.next().await.unwrap().unwrap();
    while last == frames::keepalive(Protocol::Anthropic) {
        last = relay.next().await.unwrap().unwrap();
    }
    assert_eq!(started.elapsed(), Duration::from_secs(1100), "600 s after the last reasoning frame");
    let text = String::from_utf8_lossy(&last).into_owned();
    assert!(text.starts_with("event: error\n") && text.contains("stalled"), "{text}");
    assert!(relay.next().await.is_none());
    drop(relay);
    assert_eq!(*ends.lock(), vec![StreamEnd::Stalled(STALL)], "finished once, as a stall");
}

/// An upstream that echoes its key in an error event: the client sees
/// the event without the key, passed through or translated.
#[tokio::test(start_paused = true)]
async fn an_upstream_error_event_reaches_the_client_without_the_credential() {
    for client in [Protocol::OpenaiChat, Protocol::Anthropic, Protocol::Responses] {
        let (tx, r, ends) = relay(client, Protocol::OpenaiChat);
        tx.send(Ok(Bytes::from("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"))).unwrap();
        let echo = "data: {\"error\":{\"message\":\"Incorrect API key provided: sk-live-secret\"}}\n\n";
        tx.send(Ok(Bytes::from(echo))).unwrap();
        drop(tx);
        let all: Vec<_> = r.map(|c| String::from_utf8_lossy(&c.unwrap()).into_owned()).collect().await;
        let text = all.concat();
        assert!(text.contains("Incorrect API key provided") && text.contains("[redacted]"), "{client:?}: {text}");
        assert!(!text.contains("sk-live-secret"), "{client:?}: {text}");
        assert_eq!(ends.lock().len(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn each_ending_is_reported_exactly_once() {
    // Complete.
    let (tx, mut r, ends) = relay(Protocol::OpenaiChat, Protocol::OpenaiChat);
    tx.send(Ok(Bytes::from("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))).unwrap();
    drop(tx);
    assert!(r.next().await.is_some());
    assert!(r.next().await.is_none());
    drop(r);
    assert_eq!(*ends.lock(), vec![StreamEnd::Complete]);

    // Broken mid-way: the client gets the error event of its protocol.
    let (tx, mut r, ends) = relay(Protocol::Responses, Protocol::OpenaiChat);
    tx.send(Ok(Bytes::from("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"))).unwrap();
    tx.send(Err("reset by peer".into())).unwrap();
    let all: Vec<_> = r.by_ref().map(|c| String::from_utf8_lossy(&c.unwrap()).into_owned()).collect().await;
    assert!(all.last().unwrap().contains("response.failed"), "{all:?}");
    drop(r);
    assert_eq!(*ends.lock(), vec![StreamEnd::Broken("reset by peer".into())]);

    // An error event passed through is a failed stream.
    let (tx, mut r, ends) = relay(Protocol::OpenaiChat, Protocol::OpenaiChat);
    tx.send(Ok(Bytes::from("data: {\"error\":{\"message\":\"overloaded\"}}\n\n"))).unwrap();
    drop(tx);
    while r.next().await.is_some() {}
    drop(r);
    assert_eq!(*ends.lock(), vec![StreamEnd::UpstreamError("overloaded".into())]);

    // The client goes away (the body is dropped mid-stream).
    let (tx, mut r, ends) = relay(Protocol::OpenaiChat, Protocol::OpenaiChat);
    tx.send(Ok(Bytes::from("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"))).unwrap();
    assert!(r.next().await.is_some());
    drop(r);
    assert_eq!(*ends.lock(), vec![StreamEnd::ClientGone]);
}

#[tokio::test(start_paused = true)]
async fn held_chunks_go_first_and_an_ended_upstream_completes() {
    let ends = Ends::default();
    let held = vec![Bytes::from("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n")];
    // The readiness gate's watch has read them.
    let mut watch = Watch::new(Protocol::OpenaiChat);
    watch.feed(&held[0]);
    let committed = Committed { held: held.clone(), ended: true, watch, whole: WholeEvents::default() };
    let never = futures_util::stream::pending().boxed();
    let mut r = Relay::new(never, committed, BUDGETS, Protocol::OpenaiChat, None, Recorder(ends.clone()));
    assert_eq!(r.next().await.unwrap().unwrap(), held[0]);
    assert!(r.next().await.is_none());
    assert_eq!(*ends.lock(), vec![StreamEnd::Complete]);
}

#[tokio::test(start_paused = true)]
async fn upstream_silence_gets_a_keepalive_every_heartbeat_period_in_the_clients_protocol() {
    let (tx, mut relay, ends) = relay(Protocol::OpenaiChat, Protocol::Anthropic);
    let started = Instant::now();
    let mut at = Vec::new();
    for _ in 0..3 {
        assert_eq!(relay.next().await.unwrap().unwrap(), frames::keepalive(Protocol::OpenaiChat));
        at.push(started.elapsed().as_secs());
    }
    // Output resets the period: the next keepalive is 15 s after it.
    tx.send(Ok(delta("text_delta", "text", "hi"))).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let text = relay.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&text).contains("hi"));
    assert_eq!(relay.next().await.unwrap().unwrap(), frames::keepalive(Protocol::OpenaiChat));
    at.push(started.elapsed().as_secs());
    assert_eq!(at, vec![15, 30, 45, 65]);
    assert!(ends.lock().is_empty(), "keepalives end nothing");
}

#[tokio::test(start_paused = true)]
async fn the_throughput_watchdog_aborts_a_trickle_and_spares_a_healthy_stream() {
    use app::types::settings::ThroughputWatchdogSettings;
    let cfg = ThroughputWatchdogSettings {
        enabled: true,
        warmup_ms: 1_000,
        window_ms: 2_000,
        min_useful_bytes_per_second: 10,
        min_useful_bytes: 1,
    };
    let budgets = Budgets { throughput: Some(cfg), ..BUDGETS };
    let make = || {
        let (tx, rx) = mpsc::unbounded_channel::<Result<Bytes, String>>();
        let body = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) }).boxed();
        let ends = Ends::default();
        let committed = Committed {
            held: vec![],
            ended: false,
            watch: Watch::new(Protocol::Anthropic),
            whole: WholeEvents::default(),
        };
        (tx, Relay::new(body, committed, budgets.clone(), Protocol::Anthropic, None, Recorder(ends.clone())), ends)
    };
    // "x" at 0, then silence: judged at 3000 ms, aborted.
    let (tx, mut r, ends) = make();
    let started = Instant::now();
    tx.send(Ok(delta("text_delta", "text", "x"))).unwrap();
    assert!(r.next().await.is_some());
    let last = String::from_utf8_lossy(&r.next().await.unwrap().unwrap()).into_owned();
    assert_eq!(started.elapsed(), Duration::from_millis(3_000));
    assert!(last.contains("STREAM_THROUGHPUT_TOO_LOW"), "{last}");
    drop(r);
    assert_eq!(*ends.lock(), vec![StreamEnd::TooSlow]);

    // 30 B every second is well above 10 B/s: never aborted.
    let (tx, mut r, ends) = make();
    for _ in 0..10 {
        tx.send(Ok(delta("text_delta", "text", &"y".repeat(30)))).unwrap();
        assert!(r.next().await.is_some());
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tx.send(Ok(sse::frame(Some("message_stop"), r#"{"type":"message_stop"}"#))).unwrap();
    while r.next().await.is_some() {}
    drop(r);
    assert_eq!(*ends.lock(), vec![StreamEnd::Complete]);
}

const TEXT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"the quick\"}}]}\n\n";
const STOPPED: &str = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";

async fn all_of(r: Relay<Recorder>) -> String {
    r.map(|c| String::from_utf8_lossy(&c.unwrap()).into_owned()).collect::<Vec<_>>().await.concat()
}

/// A clean end before the upstream said the answer is whole: every client
/// protocol gets its error event, never its normal end.
#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_before_its_answer_is_whole_ends_with_the_error_event() {
    let normal_ends = ["message_stop", "response.completed", "finishReason", "[DONE]"];
    for client in [Protocol::OpenaiChat, Protocol::Anthropic, Protocol::Responses, Protocol::Gemini] {
        let (tx, r, ends) = relay(client, Protocol::OpenaiChat);
        tx.send(Ok(Bytes::from(TEXT))).unwrap();
        drop(tx);
        let text = all_of(r).await;
        assert!(text.contains("ended before its answer was complete"), "{client:?}: {text}");
        for normal in normal_ends {
            assert!(!text.contains(normal), "{client:?} got {normal}: {text}");
        }
        assert_eq!(*ends.lock(), vec![StreamEnd::Truncated], "{client:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn garbage_after_commit_is_a_malformed_stream_and_is_not_relayed() {
    for client in [Protocol::OpenaiChat, Protocol::Anthropic] {
        let (tx, r, ends) = relay(client, Protocol::OpenaiChat);
        tx.send(Ok(Bytes::from(TEXT))).unwrap();
        tx.send(Ok(Bytes::from("data: <html>502 Bad Gateway</html>\n\n"))).unwrap();
        let text = all_of(r).await;
        assert!(!text.contains("<html>") && text.contains("unreadable"), "{client:?}: {text}");
        assert!(matches!(ends.lock().as_slice(), [StreamEnd::Malformed(_)]), "{client:?}");
        drop(tx);
    }
}

/// The upstream's terminator ends the client's stream at once, though the
/// upstream lingers and sends more.
#[tokio::test(start_paused = true)]
async fn the_terminator_ends_the_clients_stream_without_waiting_for_the_upstream() {
    for client in [Protocol::OpenaiChat, Protocol::Anthropic] {
        let (tx, mut r, ends) = relay(client, Protocol::OpenaiChat);
        let started = Instant::now();
        tx.send(Ok(Bytes::from(format!("{TEXT}{STOPPED}data: [DONE]\n\ndata: {{\"choices\":[]}}\n\n")))).unwrap();
        let mut text = String::new();
        while let Some(c) = r.next().await {
            text.push_str(&String::from_utf8_lossy(&c.unwrap()));
        }
        assert_eq!(started.elapsed(), Duration::ZERO, "{client:?}: no wait for the upstream to close");
        assert!(!text.contains("error") && text.contains("the quick"), "{client:?}: {text}");
        if client == Protocol::OpenaiChat {
            assert!(text.ends_with("data: [DONE]\n\n"), "nothing after the terminator: {text}");
        } else {
            assert!(text.contains("message_stop"), "{text}");
        }
        assert_eq!(*ends.lock(), vec![StreamEnd::Complete], "{client:?}");
        assert!(tx.send(Ok(Bytes::from(TEXT))).is_err(), "{client:?}: the upstream body was let go");
    }
}

/// Once the model has stopped, silence is no failure: the stream ends as
/// the whole answer it is, without an error event.
#[tokio::test(start_paused = true)]
async fn silence_after_the_model_stopped_ends_the_answer_as_complete() {
    let (tx, r, ends) = relay(Protocol::Anthropic, Protocol::OpenaiChat);
    tx.send(Ok(Bytes::from(format!("{TEXT}{STOPPED}")))).unwrap();
    let text = all_of(r).await;
    assert!(text.contains("message_stop") && !text.contains("event: error"), "{text}");
    assert_eq!(*ends.lock(), vec![StreamEnd::Complete]);
    drop(tx);
}
