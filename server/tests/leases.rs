//! Exclusive session leases through the real server (SPEC §R2.3, reference
//! §2.12): every row of the response matrix as its own test, the fence on
//! inference, exclusivity against other requests, lazy expiry, and the
//! owner token kept out of answers, upstreams and logs.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{Gateway, chat_body, v1};
use fake_upstream::FakeUpstream;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use server::resilience::clock::ManualClock;
use std::sync::Arc;

const PATH: &str = "/api/v1/session-leases";

fn owner(c: char) -> String {
    format!("vlo_{}", c.to_string().repeat(43))
}

struct Setup {
    fake: FakeUpstream,
    gw: Gateway,
    clock: Arc<ManualClock>,
    /// The connections, in priority order.
    conns: Vec<String>,
    /// A key with `lease:exclusive` and every connection allowed.
    key: String,
}

/// `n` OpenAI connections and a lease key allowed on all of them.
async fn setup(n: usize) -> Setup {
    let fake = FakeUpstream::start().await.unwrap();
    let (gw, clock) = Gateway::start_with_clock(tempfile::tempdir().unwrap()).await;
    let mut conns = Vec::new();
    for i in 0..n {
        conns.push(gw.add_connection("openai", &format!("c{i}"), &format!("sk-c{i}"), &v1(&fake), i as i32).await);
    }
    let body = json!({"name": "lease", "scopes": ["inference", "lease:exclusive"], "allowedConnections": conns});
    let key = gw.create_key(body).await["key"].as_str().unwrap().to_owned();
    Setup { fake, gw, clock, conns, key }
}

impl Setup {
    async fn lease(&self, key: &str, owner: &str, body: Value) -> Response {
        let req = self
            .gw
            .http
            .post(format!("{}{PATH}", self.gw.url))
            .bearer_auth(key)
            .header("x-omniroute-lease-owner", owner);
        req.json(&body).send().await.unwrap()
    }

    async fn acquire(&self, owner: &str) -> Response {
        self.lease(&self.key, owner, json!({"action": "acquire", "model": "openai/gpt-4o-mini"})).await
    }

    /// A chat request holding `owner`'s lease at `generation`.
    async fn chat_leased(&self, key: &str, owner: &str, generation: &str) -> Response {
        let req = self.gw.http.post(format!("{}/v1/chat/completions", self.gw.url)).bearer_auth(key);
        let req = req.header("x-omniroute-lease-owner", owner).header("x-omniroute-lease-generation", generation);
        req.json(&chat_body("openai/gpt-4o-mini", false)).send().await.unwrap()
    }

    fn upstream_calls(&self) -> usize {
        self.fake.requests().iter().filter(|r| r.path.starts_with("/v1/chat")).count()
    }
}

async fn body(resp: Response) -> Value {
    resp.json().await.unwrap()
}

async fn code(resp: Response) -> (StatusCode, Value) {
    let status = resp.status();
    (status, body(resp).await["error"]["code"].clone())
}

#[tokio::test]
async fn acquire_answers_active_with_generation_1_and_a_re_acquire_the_same_generation() {
    let s = setup(1).await;
    let first = s.acquire(&owner('a')).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-omniroute-lease-generation"], "1");
    let text = first.text().await.unwrap();
    let b: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((b["state"].clone(), b["generation"].clone()), (json!("ACTIVE"), json!(1)));
    assert_eq!(b["ttlMs"], 300_000);
    assert!(!text.contains(&s.conns[0]) && !text.contains("sk-c0") && !text.contains(&owner('a')), "{text}");
    let again = body(s.acquire(&owner('a')).await).await;
    assert_eq!((again["state"].clone(), again["generation"].clone()), (json!("ACTIVE"), json!(1)));
    let health = s.gw.get_json("/api/monitoring/health").await;
    let leases = health["sessionLeases"].as_array().unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!((leases[0]["connectionId"].clone(), leases[0]["generation"].clone()), (json!(s.conns[0]), json!(1)));
    assert_eq!(leases[0]["ownerHash"].as_str().unwrap().len(), 8, "a hash prefix, never the owner");
    assert!(!health.to_string().contains(&owner('a')));
    s.gw.stop().await;
}

#[tokio::test]
async fn renew_with_another_generation_is_stale_and_with_the_current_one_extends() {
    let s = setup(1).await;
    let acquired = body(s.acquire(&owner('a')).await).await;
    assert_eq!(
        code(s.lease(&s.key, &owner('a'), json!({"action": "renew", "generation": 2})).await).await,
        (StatusCode::CONFLICT, json!("LEASE_FENCE_STALE"))
    );
    s.clock.advance(60_000);
    let renewed = s.lease(&s.key, &owner('a'), json!({"action": "renew", "generation": 1, "ttlMs": 600_000})).await;
    assert_eq!(renewed.status(), 200);
    let renewed = body(renewed).await;
    assert_eq!(renewed["generation"], 1);
    assert_eq!(renewed["expiresAt"].as_i64().unwrap(), acquired["expiresAt"].as_i64().unwrap() + 60_000 + 300_000);
    s.gw.stop().await;
}

#[tokio::test]
async fn release_is_idempotent_and_a_new_acquire_gets_the_next_generation() {
    let s = setup(1).await;
    s.acquire(&owner('a')).await;
    for _ in 0..2 {
        let released =
            s.lease(&s.key, &owner('a'), json!({"action": "release", "generation": 1, "reason": "done"})).await;
        assert_eq!(released.status(), 200);
        assert_eq!(body(released).await, json!({"state": "RELEASED"}));
    }
    assert_eq!(body(s.acquire(&owner('a')).await).await["generation"], 2, "a generation is never reused");
    s.gw.stop().await;
}

#[tokio::test]
async fn an_unauthenticated_request_is_401() {
    let s = setup(1).await;
    let anonymous = s.gw.http.post(format!("{}{PATH}", s.gw.url)).header("x-omniroute-lease-owner", owner('a'));
    let anonymous = anonymous.json(&json!({"action": "acquire", "model": "openai/gpt-4o-mini"})).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(s.lease("omr-not-a-key", &owner('a'), json!({"action": "acquire"})).await.status(), 401);
    s.gw.stop().await;
}

#[tokio::test]
async fn a_key_without_the_lease_scope_is_403() {
    let s = setup(1).await;
    let plain = s.gw.create_key(json!({"name": "plain"})).await["key"].as_str().unwrap().to_owned();
    let resp = s.lease(&plain, &owner('a'), json!({"action": "acquire", "model": "openai/gpt-4o-mini"})).await;
    assert_eq!(code(resp).await, (StatusCode::FORBIDDEN, json!("insufficient_scope")));
    s.gw.stop().await;
}

#[tokio::test]
async fn a_missing_owner_is_400_lease_context_required() {
    let s = setup(1).await;
    let req = s.gw.http.post(format!("{}{PATH}", s.gw.url)).bearer_auth(&s.key);
    let resp = req.json(&json!({"action": "acquire", "model": "openai/gpt-4o-mini"})).send().await.unwrap();
    let (status, b) = (resp.status(), body(resp).await);
    assert_eq!((status, b["error"]["code"].clone()), (StatusCode::BAD_REQUEST, json!("LEASE_CONTEXT_REQUIRED")));
    assert_eq!(b["error"]["param"], "X-OmniRoute-Lease-Owner");
    s.gw.stop().await;
}

#[tokio::test]
async fn malformed_context_is_400_lease_context_invalid_naming_the_field_and_changes_nothing() {
    let s = setup(1).await;
    let cases = [
        ("vlo_short", json!({"action": "acquire", "model": "openai/gpt-4o-mini"}), "X-OmniRoute-Lease-Owner"),
        (&owner('a')[..], json!({"action": "steal"}), "action"),
        (&owner('a')[..], json!({"action": "renew", "generation": "1"}), "generation"),
        (&owner('a')[..], json!({"action": "release", "generation": 1.5}), "generation"),
        (&owner('a')[..], json!({"action": "acquire", "model": "openai/gpt-4o-mini", "ttlMs": 5}), "ttlMs"),
        (&owner('a')[..], json!({"action": "acquire"}), "model"),
    ];
    for (who, req, field) in cases {
        let resp = s.lease(&s.key, who, req.clone()).await;
        let (status, b) = (resp.status(), body(resp).await);
        assert_eq!(status, StatusCode::BAD_REQUEST, "{req}");
        assert_eq!(
            (b["error"]["code"].clone(), b["error"]["param"].clone()),
            (json!("LEASE_CONTEXT_INVALID"), json!(field))
        );
    }
    assert!(s.gw.state.routing.leases.active().is_empty(), "nothing was taken");
    s.gw.stop().await;
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415_lease_content_type_required() {
    let s = setup(1).await;
    let req =
        s.gw.http.post(format!("{}{PATH}", s.gw.url)).bearer_auth(&s.key).header("x-omniroute-lease-owner", owner('a'));
    let resp = req.header("content-type", "text/plain").body(r#"{"action":"acquire"}"#).send().await.unwrap();
    assert_eq!(code(resp).await, (StatusCode::UNSUPPORTED_MEDIA_TYPE, json!("LEASE_CONTENT_TYPE_REQUIRED")));
    s.gw.stop().await;
}

#[tokio::test]
async fn the_same_owner_through_another_key_is_409_stale() {
    let s = setup(1).await;
    s.acquire(&owner('a')).await;
    let body = json!({"name": "other", "scopes": ["inference", "lease:exclusive"], "allowedConnections": s.conns});
    let other = s.gw.create_key(body).await["key"].as_str().unwrap().to_owned();
    let resp = s.lease(&other, &owner('a'), json!({"action": "acquire", "model": "openai/gpt-4o-mini"})).await;
    assert_eq!(code(resp).await, (StatusCode::CONFLICT, json!("LEASE_FENCE_STALE")));
    let resp = s.lease(&other, &owner('a'), json!({"action": "release", "generation": 1})).await;
    assert_eq!(resp.status(), StatusCode::CONFLICT, "nor can it release it");
    s.gw.stop().await;
}

#[tokio::test]
async fn a_second_owner_on_the_only_connection_waits_for_capacity_with_an_equal_retry_after() {
    let s = setup(1).await;
    assert_eq!(s.acquire(&owner('a')).await.status(), 200);
    s.clock.advance(250_000);
    let resp = s.acquire(&owner('b')).await;
    assert_eq!(resp.status(), 429);
    let retry_after: u64 = resp.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    let b = body(resp).await;
    assert_eq!(b["state"], "WAITING_FOR_CAPACITY");
    assert_eq!(b["reason"], "NO_FREE_ELIGIBLE_CONNECTION");
    assert_eq!(b["freeCount"], 0);
    assert_eq!(b["error"]["code"], "LEASE_CAPACITY_UNAVAILABLE");
    assert_eq!(b["retryAfter"], retry_after, "body and header agree");
    assert_eq!(retry_after, 50, "the first lease ends in 50 s");
    // Expired without any timer: the connection is free for the next owner.
    s.clock.advance(50_000);
    let taken = body(s.acquire(&owner('b')).await).await;
    assert_eq!(taken["state"], "ACTIVE");
    s.gw.stop().await;
}

#[tokio::test]
async fn two_concurrent_acquires_of_the_last_free_connection_give_one_lease() {
    let s = setup(1).await;
    let (a, b) = (owner('a'), owner('b'));
    let (one, two) = tokio::join!(s.acquire(&a), s.acquire(&b));
    let mut statuses = [one.status().as_u16(), two.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 429]);
    let rows = server::db::leases::load_active(&s.gw.state.db, 0).await.unwrap();
    assert_eq!(rows.len(), 1, "one active row");
    s.gw.stop().await;
}

#[tokio::test]
async fn empty_eligibility_is_not_a_lease_conflict_but_the_routing_error() {
    let s = setup(1).await;
    s.gw.state.engine.on_failure(
        &server::resilience::engine::AttemptFailure {
            provider: "openai",
            connection_id: &s.conns[0],
            model: "gpt-4o-mini",
            oauth: false,
            disable_cooling: false,
            stall: false,
            status: Some(429),
            headers: &http::HeaderMap::new(),
            body: "",
            egress_ip: None,
            quota_scope: server::resilience::lockout::QuotaScope::Connection,
        },
        &s.gw.state.resilience.current(),
        &server::resilience::engine::breaker_config(&s.gw.state.resilience.current(), app::types::Category::Apikey),
        None,
    );
    let (status, code) = code(s.acquire(&owner('a')).await).await;
    assert_eq!((status, code), (StatusCode::SERVICE_UNAVAILABLE, json!("all_targets_cooling_down")));
    s.gw.stop().await;
}

#[tokio::test]
async fn inference_through_the_fence_reaches_the_leased_connection_and_others_pass_it_over() {
    let s = setup(2).await;
    // Owner a leases c0 (first by priority); owner b gets c1.
    assert_eq!(body(s.acquire(&owner('a')).await).await["generation"], 1);
    s.acquire(&owner('b')).await;
    let served = s.chat_leased(&s.key, &owner('b'), "1").await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["x-omniroute-selected-connection-id"], s.conns[1].as_str());
    // A request without a lease finds both connections leased.
    let plain = s.gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&s.key)).await;
    assert_ne!(plain.status(), 200, "every connection is held by a lease");
    s.lease(&s.key, &owner('a'), json!({"action": "release", "generation": 1})).await;
    let plain = s.gw.chat(chat_body("openai/gpt-4o-mini", false), Some(&s.key)).await;
    assert_eq!(plain.headers()["x-omniroute-selected-connection-id"], s.conns[0].as_str(), "released: free again");
    s.gw.stop().await;
}

#[tokio::test]
async fn a_stale_or_foreign_fence_is_refused_before_any_upstream_call() {
    let s = setup(1).await;
    s.acquire(&owner('a')).await;
    let other = s.gw.create_key(json!({"name": "other"})).await["key"].as_str().unwrap().to_owned();
    let before = s.upstream_calls();
    for (key, who, generation) in [(&s.key, owner('a'), "2"), (&other, owner('a'), "1"), (&s.key, owner('c'), "1")] {
        let (status, code) = code(s.chat_leased(key, &who, generation).await).await;
        assert_eq!((status, code), (StatusCode::CONFLICT, json!("LEASE_FENCE_STALE")), "{who} {generation}");
    }
    let missing = s.gw.http.post(format!("{}/v1/chat/completions", s.gw.url)).bearer_auth(&s.key);
    let missing = missing.header("x-omniroute-lease-owner", owner('a')).json(&chat_body("openai/gpt-4o-mini", false));
    assert_eq!(code(missing.send().await.unwrap()).await, (StatusCode::BAD_REQUEST, json!("LEASE_CONTEXT_REQUIRED")));
    assert_eq!(s.upstream_calls(), before, "no upstream call");
    // An expired lease is stale too, lazily.
    s.clock.advance(300_000);
    assert_eq!(s.chat_leased(&s.key, &owner('a'), "1").await.status(), StatusCode::CONFLICT);
    s.gw.stop().await;
}

#[tokio::test]
async fn a_lease_survives_a_restart_and_its_headers_reach_no_upstream() {
    let s = setup(1).await;
    s.acquire(&owner('a')).await;
    let dir = s.gw.stop().await;
    let (gw, _clock) = Gateway::start_with_clock(dir).await;
    let s = Setup { gw, ..s };
    let served = s.chat_leased(&s.key, &owner('a'), "1").await;
    assert_eq!(served.status(), 200, "the restored lease passes the fence");
    for r in s.fake.requests() {
        assert!(r.headers.keys().all(|h| !h.contains("lease")), "{:?}", r.headers);
    }
    let rows = server::db::leases::load_active(&s.gw.state.db, 0).await.unwrap();
    assert!(!serde_json::to_string(&format!("{rows:?}")).unwrap().contains(&owner('a')), "only the hash is stored");
    let logs = serde_json::to_string(&s.gw.logs().await).unwrap();
    assert!(!logs.contains(&owner('a')[4..20]));
    s.gw.stop().await;
}

#[tokio::test]
async fn a_lease_whose_connection_cools_moves_to_a_free_one_under_the_next_generation() {
    let s = setup(2).await;
    s.acquire(&owner('a')).await;
    s.fake.push_rule(fake_upstream::Rule {
        api_key: Some("sk-c0".into()),
        status: Some(429),
        times: Some(1),
        ..Default::default()
    });
    let limited = s.chat_leased(&s.key, &owner('a'), "1").await;
    assert_eq!(limited.status(), 429, "the leased connection alone serves the lease");
    let moved = s.chat_leased(&s.key, &owner('a'), "1").await;
    assert_eq!(moved.status(), 200);
    assert_eq!(moved.headers()["x-omniroute-selected-connection-id"], s.conns[1].as_str());
    assert_eq!(moved.headers()["x-omniroute-lease-generation"], "2", "the answer names the new generation");
    assert_eq!(s.chat_leased(&s.key, &owner('a'), "1").await.status(), StatusCode::CONFLICT, "the old one is stale");
    let next = s.chat_leased(&s.key, &owner('a'), "2").await;
    assert_eq!(next.headers()["x-omniroute-selected-connection-id"], s.conns[1].as_str());
    let rows = server::db::leases::load_active(&s.gw.state.db, 0).await.unwrap();
    assert_eq!((rows.len(), rows[0].generation, rows[0].connection_id.as_str()), (1, 2, s.conns[1].as_str()));
    s.gw.stop().await;
}

#[tokio::test]
async fn lease_owners_reach_no_log_line() {
    let captured = common::capture_logs();
    let s = setup(1).await;
    s.acquire(&owner('q')).await;
    s.chat_leased(&s.key, &owner('q'), "1").await;
    s.chat_leased(&s.key, &owner('q'), "9").await;
    s.lease(&s.key, &owner('q'), json!({"action": "release", "generation": 1})).await;
    s.gw.logs().await;
    let log = captured.text();
    assert!(log.contains("session lease acquired") && log.contains("session lease released"), "{log}");
    assert!(!log.contains("qqqqqqqq"), "{log}");
    s.gw.stop().await;
}

#[tokio::test]
async fn the_database_refuses_a_second_active_lease_of_one_connection_or_owner() {
    use server::{
        db::leases::{Taken, insert},
        routing::leases::{Lease, Owner},
    };
    let s = setup(1).await;
    let lease = |id: &str, who: char, conn: &str| Lease {
        id: id.into(),
        owner: Owner::parse(&owner(who)).unwrap(),
        key_id: "k".into(),
        provider: "openai",
        connection_id: conn.into(),
        generation: 1,
        expires_at: i64::MAX,
    };
    let db = &s.gw.state.db;
    assert!(matches!(insert(db, lease("1", 'a', "c-x").active_row(0)).await.unwrap(), Taken::Yes));
    assert!(
        matches!(insert(db, lease("2", 'b', "c-x").active_row(0)).await.unwrap(), Taken::Conflict),
        "same connection"
    );
    assert!(matches!(insert(db, lease("3", 'a', "c-y").active_row(0)).await.unwrap(), Taken::Conflict), "same owner");
    assert!(matches!(insert(db, lease("4", 'b', "c-y").active_row(0)).await.unwrap(), Taken::Yes));
    s.gw.stop().await;
}

#[tokio::test]
async fn options_allows_both_lease_headers() {
    let s = setup(1).await;
    let resp = s.gw.http.request(reqwest::Method::OPTIONS, format!("{}{PATH}", s.gw.url)).send().await.unwrap();
    assert_eq!(resp.status(), 204);
    let allowed = resp.headers()["access-control-allow-headers"].to_str().unwrap().to_owned();
    assert!(
        allowed.contains("x-omniroute-lease-owner") && allowed.contains("x-omniroute-lease-generation"),
        "{allowed}"
    );
    s.gw.stop().await;
}
