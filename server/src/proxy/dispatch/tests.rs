//! The dispatch loop on paused tokio time against the in-process fake
//! upstream: exact readiness budgets, retries and failover, no sockets.
//! (Time is paused once the state is built; see `harness`.)

use super::{attempt::AttemptGuard, slots::Slots, *};
use crate::{
    config::Config,
    proxy::request::ClientRequest,
    routing::{
        plan::Planned,
        registry::{Credential, LiveConnection},
        resolve::Target,
    },
    upstream::{
        catalog,
        executor::BaseUrl,
        fake::{FakeUpstream, Reply, Step},
    },
};
use axum::http::HeaderMap;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::time::Instant;

const A: &str = "http://a.test/v1";
const B: &str = "http://b.test/v1";
const TEXT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

struct Harness {
    state: Arc<AppState>,
    fake: Arc<FakeUpstream>,
    snapshot: Snapshot,
    _dir: tempfile::TempDir,
}

async fn harness() -> Harness {
    harness_with(|_| {}).await
}

async fn harness_with(adjust: impl FnOnce(&mut Config)) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::for_data_dir(dir.path().to_path_buf());
    adjust(&mut config);
    let mut state = crate::build_state(config).await.unwrap();
    let fake = Arc::new(FakeUpstream::default());
    Arc::get_mut(&mut state).unwrap().upstream = fake.clone();
    let openai = catalog::find("openai").unwrap();
    let conn = |id: &str, url: &str| {
        LiveConnection::new(id.into(), openai, BaseUrl::parse(url).unwrap(), Some(Credential(format!("sk-{id}"))))
    };
    let snapshot = Snapshot::from_live([conn("a", A), conn("b", B)]);
    // Paused only now: opening the database waits on its own threads,
    // which paused time would race.
    tokio::time::pause();
    Harness { state, fake, snapshot, _dir: dir }
}

impl Harness {
    /// A streamed chat request for `openai/gpt-4o-mini`: the response (or
    /// error status) and the body text.
    async fn stream(&self) -> (Result<Response, DispatchError>, Duration) {
        let target = Target { provider: catalog::find("openai").unwrap(), model: "gpt-4o-mini".into() };
        self.stream_plan(&Plan::single(target, None)).await
    }

    /// A streamed chat request served by `plan`.
    async fn stream_plan(&self, plan: &Plan) -> (Result<Response, DispatchError>, Duration) {
        let body =
            Bytes::from(r#"{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}"#);
        let req = ClientRequest::parse(Protocol::OpenaiChat, body, &HeaderMap::new()).unwrap();
        let caller = caller(&self.state, &req);
        let started = Instant::now();
        let res = run(&self.state, &self.snapshot, plan, &caller, |p, m| req.body_for(p, m)).await;
        (res, started.elapsed())
    }
}

/// A chat client's request, with the gateway's request deadline.
fn caller<'a>(state: &AppState, req: &'a ClientRequest) -> Caller<'a> {
    Caller {
        request_id: "r1",
        endpoint: "/v1/chat/completions",
        client: Protocol::OpenaiChat,
        stream: req.stream,
        key: None,
        passthrough_headers: &req.passthrough_headers,
        recovered: Default::default(),
        alias: None,
        request: Some(req),
        lease: None,
        resume: None,
        continuing: None,
        handoff: None,
        deadline: RequestDeadline::new(state.config.request_deadline),
        held: Default::default(),
    }
}

async fn text(resp: Response) -> String {
    let mut body = resp.into_body().into_data_stream();
    let mut out = String::new();
    while let Some(chunk) = body.next().await {
        out.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    out
}

/// `took` is `secs`, to tokio's 1 ms timer resolution (a deadline fires at
/// the first tick at or after it).
fn is_about(took: Duration, secs: u64) -> bool {
    let want = Duration::from_secs(secs);
    took >= want && took < want + Duration::from_millis(5)
}

fn served_by(resp: &Response) -> &str {
    resp.headers()[&crate::proxy::context::SELECTED_CONNECTION].to_str().unwrap()
}

#[tokio::test]
async fn headers_that_never_come_fail_over_after_exactly_the_readiness_budget() {
    let h = harness().await;
    h.fake.script(A, [Reply::Never]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    let (res, took) = h.stream().await;
    let resp = res.unwrap();
    assert_eq!(served_by(&resp), "b");
    assert!(is_about(took, 80), "{took:?}");
    assert!(text(resp).await.contains("hello"));
}

#[tokio::test]
async fn the_readiness_budget_counts_from_the_attempt_start_and_keepalives_do_not_stop_it() {
    let h = harness().await;
    let slow = vec![
        Step::Wait(Duration::from_secs(79)),
        Step::Send(": ping\n\n"),
        Step::Wait(Duration::from_secs(5)),
        Step::Send(TEXT),
    ];
    h.fake.script(A, [Reply::Answer(200, slow)]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    let (res, took) = h.stream().await;
    assert_eq!(served_by(&res.unwrap()), "b");
    assert!(is_about(took, 80), "{took:?}");
    let health = h.state.engine.health("a");
    assert!(health.last_error.is_some_and(|e| e.contains("80000ms")), "a timeout is a failure of the connection");
}

#[tokio::test]
async fn an_early_end_is_retried_once_unmarked_then_fails_over() {
    let h = harness().await;
    let early = Reply::Answer(200, vec![]);
    h.fake.script(A, [early.clone(), early]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    let (res, took) = h.stream().await;
    assert_eq!((served_by(&res.unwrap()), took), ("b", Duration::ZERO));
    assert_eq!(h.fake.calls(), [A, A, B]);
    assert_eq!(h.state.engine.health("a"), Default::default(), "no account marking");
}

#[tokio::test]
async fn with_nothing_left_a_stream_that_never_became_ready_is_a_504() {
    let h = harness().await;
    h.fake.script(A, [Reply::Never]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Silence])]);
    let (res, took) = h.stream().await;
    let e = ProxyError::from(res.unwrap_err());
    assert_eq!((e.status.as_u16(), e.code), (504, "STREAM_READINESS_TIMEOUT"));
    assert!(is_about(took, 160), "each connection had its own 80 s: {took:?}");
}

#[tokio::test]
async fn attempts_share_the_request_deadline_and_the_one_it_cuts_short_is_not_held_against_its_connection() {
    let h = harness_with(|c| c.request_deadline = Duration::from_secs(100)).await;
    h.fake.script(A, [Reply::Never]);
    h.fake.script(B, [Reply::Never]);
    let (res, took) = h.stream().await;
    let e = ProxyError::from(res.unwrap_err());
    assert_eq!((e.status.as_u16(), e.code), (504, "REQUEST_DEADLINE_EXCEEDED"), "{}", e.message);
    assert!(is_about(took, 100), "a had its own 80 s, b what was left of 100 s, not 80 s more: {took:?}");
    assert!(h.state.engine.health("a").last_error.is_some(), "a's own timeout counts against it");
    assert_eq!(h.state.engine.health("b"), Default::default(), "b did not get its full time");
}

#[tokio::test]
async fn no_attempt_starts_once_the_request_deadline_passed() {
    let h = harness_with(|c| c.request_deadline = Duration::from_secs(80)).await;
    h.fake.script(A, [Reply::Never]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    let (res, took) = h.stream().await;
    let e = ProxyError::from(res.unwrap_err());
    assert_eq!((e.status.as_u16(), e.code), (504, "REQUEST_DEADLINE_EXCEEDED"));
    assert!(e.message.contains("after 1 attempt(s) | tried: openai (no answer)"), "{}", e.message);
    assert!(is_about(took, 80), "{took:?}");
    assert_eq!(h.fake.calls(), [A], "b was never called");
}

/// A combo target whose attempt timed out passes the request to the next
/// target: a provider whose connections stall in turn costs one readiness
/// budget, not one per connection.
#[tokio::test]
async fn a_combo_target_that_timed_out_passes_the_request_to_the_next_target() {
    const C: &str = "http://c.test/v1";
    let mut h = harness().await;
    let conn = |id: &str, provider: &str, url: &str| {
        let provider = catalog::find(provider).unwrap();
        LiveConnection::new(id.into(), provider, BaseUrl::parse(url).unwrap(), Some(Credential(format!("sk-{id}"))))
    };
    h.snapshot = Snapshot::from_live([conn("a", "openai", A), conn("b", "openai", B), conn("c", "deepseek", C)]);
    h.fake.script(A, [Reply::Never]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    h.fake.script(C, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    let target =
        |provider: &str, model: &str| Target { provider: catalog::find(provider).unwrap(), model: model.into() };
    let planned = |index: usize, target: Target| {
        let spec = format!("{}/{}", target.provider.id, target.model);
        Planned { key: spec.clone(), spec, index, weight: 0, target: Some(target), pinned: None }
    };
    let combo = app::types::combo::Combo {
        name: "stalls-then-works".into(),
        strategy: app::types::combo::Strategy::Priority,
        targets: Vec::new(),
        config: Default::default(),
    };
    let plan = Plan {
        combo: Some(Arc::new(combo)),
        targets: vec![planned(0, target("openai", "gpt-4o-mini")), planned(1, target("deepseek", "deepseek-chat"))],
    };
    let (res, took) = h.stream_plan(&plan).await;
    assert_eq!(served_by(&res.unwrap()), "c");
    assert!(is_about(took, 80), "{took:?}");
    assert_eq!(h.fake.calls(), [A, C], "b, a's sibling, was passed over");
}

#[tokio::test]
async fn a_committed_stream_reports_its_end_to_the_engine_when_it_breaks() {
    let h = harness().await;
    h.fake.script(A, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Wait(Duration::from_secs(1)), Step::Break])]);
    let (res, _) = h.stream().await;
    let resp = res.unwrap();
    assert_eq!(h.state.engine.health("a"), Default::default(), "nothing is known when the headers arrive");
    let body = text(resp).await;
    assert!(body.contains("hello") && body.contains("\"error\""), "{body}");
    let health = h.state.engine.health("a");
    assert!(health.rate_limited_until.is_some(), "the drop cooled the connection: {health:?}");
}

#[tokio::test]
async fn with_stream_recovery_an_early_break_is_retried_where_the_client_cannot_see_it() {
    let h = harness_with(|c| c.stream_recovery = true).await;
    let early_break = vec![Step::Send(TEXT), Step::Wait(Duration::from_millis(200)), Step::Break];
    h.fake.script(A, [Reply::Answer(200, early_break)]);
    h.fake.script(B, [Reply::Answer(200, vec![Step::Send(TEXT), Step::Send(DONE)])]);
    let (res, took) = h.stream().await;
    let resp = res.unwrap();
    assert_eq!(served_by(&resp), "b");
    assert!(took < Duration::from_millis(300), "failed over at the break, not after the window: {took:?}");
    let body = text(resp).await;
    assert_eq!(body.matches("hello").count(), 1, "only b's stream, no duplicate, no error: {body}");
    assert!(!body.contains("\"error\""), "{body}");
    assert!(h.state.engine.health("a").rate_limited_until.is_some(), "the break counted against a");
}

/// A queued request is parked inside `run`: boxing the attempt keeps what
/// it holds there smaller than one attempt's state (1,000 queued requests
/// cost their futures, SPEC §R5's memory budget).
#[tokio::test]
async fn a_request_waiting_for_its_slots_does_not_hold_an_attempts_state() {
    let h = harness().await;
    let body = Bytes::from(r#"{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#);
    let req = ClientRequest::parse(Protocol::OpenaiChat, body, &HeaderMap::new()).unwrap();
    let caller = caller(&h.state, &req);
    let target = Target { provider: catalog::find("openai").unwrap(), model: "gpt-4o-mini".into() };
    let plan = Plan::single(target.clone(), None);
    let waiting = std::mem::size_of_val(&run(&h.state, &h.snapshot, &plan, &caller, |p, m| req.body_for(p, m)));
    let (body, handoff, timeout) = (Bytes::new(), None, None);
    let call = Call { caller: &caller, target: &target, combo: false, body, handoff, timeout, next_target: false };
    let conn = h.snapshot.candidates("openai")[0].clone();
    let cfg = crate::resilience::engine::breaker_config(&h.state.resilience.current(), app::types::Category::Apikey);
    let mut run = TargetRun {
        candidates: vec![&conn],
        requester: permits::Requester::Direct,
        cfg,
        probe: None,
        pin: None,
        session: None,
    };
    let guard = AttemptGuard::start(&h.state, &call, &mut run, &conn, Slots::default());
    let one_attempt = std::mem::size_of_val(&call_upstream::attempt(&h.state, &call, guard));
    assert!(waiting < one_attempt, "run {waiting} B, one attempt {one_attempt} B");
}
