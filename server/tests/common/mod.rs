//! Test harness: the real server on an ephemeral loopback port with a
//! private SQLite file, plus helpers to drive it over HTTP.
#![allow(dead_code, reason = "each test binary uses a different subset")]

pub mod clients;
#[cfg(feature = "postgres-tests")]
pub mod instances;

use app::types::settings::read_env;
use fake_upstream::FakeUpstream;
use serde_json::{Value, json};
use server::{
    config::Config,
    resilience::clock::{Clock, ManualClock, SystemClock},
    state::AppState,
};
use std::sync::Arc;
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};

pub const MGMT_KEY: &str = "test-management-key-0123456789";
pub const ADMIN_PASSWORD: &str = "admin-password-for-tests";
pub const FORM: &str = "application/x-www-form-urlencoded";

pub struct Gateway {
    pub url: String,
    pub state: Arc<AppState>,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl Gateway {
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir).await
    }

    /// Starts on an existing data dir (restart tests).
    pub async fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with(dir, None).await
    }

    /// Starts with another database than the data dir's SQLite file.
    pub async fn start_with(dir: tempfile::TempDir, database_url: Option<String>) -> Self {
        Self::start_configured(dir, |config| {
            if let Some(url) = database_url {
                config.database_url = url;
            }
        })
        .await
    }

    /// Starts with the test config adjusted by `adjust` (env-derived fields).
    pub async fn start_configured(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> Self {
        Self::start_full(dir, adjust, Arc::new(SystemClock)).await
    }

    /// Starts with the resilience engine on a clock the test moves.
    pub async fn start_with_clock(dir: tempfile::TempDir) -> (Self, Arc<ManualClock>) {
        Self::start_with_clock_configured(dir, |_| {}).await
    }

    /// [`Self::start_with_clock`], with the configuration adjusted.
    pub async fn start_with_clock_configured(
        dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut Config),
    ) -> (Self, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(1_767_225_600_000));
        (Self::start_full(dir, adjust, clock.clone()).await, clock)
    }

    /// Starts listening on `bind` (`0.0.0.0:0` to be reached from another
    /// network namespace).
    pub async fn start_on(bind: &str, adjust: impl FnOnce(&mut Config)) -> Self {
        Self::launch(tempfile::tempdir().unwrap(), adjust, Arc::new(SystemClock), bind).await
    }

    async fn start_full(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Config), clock: Arc<dyn Clock>) -> Self {
        Self::launch(dir, adjust, clock, "127.0.0.1:0").await
    }

    async fn launch(
        dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut Config),
        clock: Arc<dyn Clock>,
        bind: &str,
    ) -> Self {
        let mut config = Config::for_data_dir(dir.path().to_path_buf());
        // Like the bench, tests run with the request queue's safety net
        // off (`RATE_LIMIT_AUTO_ENABLE=false`), so a test's burst is not
        // paced at 60 a minute; the queue's own tests turn it on.
        config.resilience_env = read_env(|k| (k == "RATE_LIMIT_AUTO_ENABLE").then(|| "false".to_owned())).unwrap();
        adjust(&mut config);
        config.management_key = Some(MGMT_KEY.into());
        config.initial_password = Some(ADMIN_PASSWORD.into());
        let state = server::build_state_with_clock(config, clock).await.unwrap();
        let listener = TcpListener::bind(bind).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}");
        let (stop, rx) = oneshot::channel::<()>();
        #[expect(clippy::disallowed_methods, reason = "the server under test runs beside the test")]
        let task = tokio::spawn(server::serve(state.clone(), listener, async {
            let _ = rx.await;
        }));
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self { url, state, http, dir, stop: Some(stop), task }
    }

    /// Stops the server gracefully; returns its data dir for a restart.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        (&mut self.task).await.unwrap().unwrap();
        self.dir
    }

    pub fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.url)).bearer_auth(MGMT_KEY)
    }

    /// Creates a connection and returns its id.
    pub async fn add_connection(
        &self,
        provider: &str,
        name: &str,
        api_key: &str,
        base_url: &str,
        priority: i32,
    ) -> String {
        let resp = self
            .api(reqwest::Method::POST, "/api/providers")
            .json(&json!({"provider": provider, "name": name, "apiKey": api_key, "baseUrl": base_url, "priority": priority}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
        let body: Value = resp.json().await.unwrap();
        body["connection"]["id"].as_str().unwrap().to_owned()
    }

    /// POSTs a chat completion with an optional client key.
    pub async fn chat(&self, body: Value, key: Option<&str>) -> reqwest::Response {
        let mut req = self.http.post(format!("{}/v1/chat/completions", self.url)).json(&body);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send().await.unwrap()
    }

    /// A fake upstream and a gateway, both on fresh ports.
    pub async fn with_fake() -> (FakeUpstream, Self) {
        (FakeUpstream::start().await.unwrap(), Self::start().await)
    }

    /// A fake and a gateway whose readiness, idle and fetch budgets are all
    /// `budget`: short, so that a hang shows as a failure.
    pub async fn with_fake_and_budgets(budget: std::time::Duration) -> (FakeUpstream, Self) {
        let fake = FakeUpstream::start().await.unwrap();
        let gw = Self::start_configured(tempfile::tempdir().unwrap(), |c| {
            c.stream_readiness_timeout = budget;
            c.stream_idle_timeout = budget;
            c.fetch_timeout = budget;
        })
        .await;
        (fake, gw)
    }

    /// Turns connection cooldowns off (base 0), for tests about plain
    /// failover where a cooled connection would change the attempt order.
    pub async fn without_cooldowns(&self) {
        let body = json!({"connectionCooldown": {"oauth": {"baseCooldownMs": 0}, "apikey": {"baseCooldownMs": 0}}});
        let resp = self.api(reqwest::Method::PATCH, "/api/resilience").json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 200);
    }

    /// `GET` a management path, parsed as JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        self.api(reqwest::Method::GET, path).send().await.unwrap().json().await.unwrap()
    }

    /// `POST /api/keys` with `body`; the answer (`{id, key}`).
    pub async fn create_key(&self, body: Value) -> Value {
        let resp = self.api(reqwest::Method::POST, "/api/keys").json(&body).send().await.unwrap();
        assert_eq!(resp.status(), 201);
        resp.json().await.unwrap()
    }

    /// Signs in through the API; the `Cookie` header value.
    pub async fn sign_in(&self) -> String {
        let login = json!({"password": ADMIN_PASSWORD});
        let resp = self.http.post(format!("{}/api/auth/login", self.url)).json(&login).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned()
    }

    /// POSTs a server function the way the hydrated dashboard does.
    pub fn sfn(&self, name: &str, cookie: &str, body: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}/sfn/{name}", self.url))
            .header("cookie", cookie)
            .header("content-type", FORM)
            .body(body.to_owned())
    }

    /// Every request-log row, newest first, after flushing the writer.
    pub async fn logs(&self) -> Vec<Value> {
        self.state.store.logs.flush().await;
        let body: Value =
            self.api(reqwest::Method::GET, "/api/logs?limit=1000").send().await.unwrap().json().await.unwrap();
        body["logs"].as_array().unwrap().clone()
    }
}

/// `(event, data)` of each SSE event of a response body (`data` parsed as
/// JSON where it is JSON, else kept as a string such as `[DONE]`).
pub async fn sse_events(resp: reqwest::Response) -> Vec<(Option<String>, Value)> {
    parse_sse(&resp.text().await.unwrap())
}

/// `(event, data)` of each SSE event of `text` (comments skipped).
pub fn parse_sse(text: &str) -> Vec<(Option<String>, Value)> {
    text.split("\n\n")
        .filter(|f| !f.trim().is_empty() && !f.starts_with(':'))
        .map(|f| {
            let event = f.lines().find_map(|l| l.strip_prefix("event: ")).map(str::to_owned);
            let data = f.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            (event, serde_json::from_str(data).unwrap_or(json!(data)))
        })
        .collect()
}

/// The fake's OpenAI base URL (`…/v1`).
/// The credential of each chat request the fake got, in order.
pub fn chat_keys(fake: &FakeUpstream) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/chat"))
        .map(|r| r.headers["authorization"].trim_start_matches("Bearer ").to_owned())
        .collect()
}

pub fn v1(fake: &FakeUpstream) -> String {
    format!("{}/v1", fake.url())
}

pub fn chat_body(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "Say hello"}]})
}

/// A chat body opening another conversation than [`chat_body`]'s: its
/// first user text names another session (SPEC §R2.2), so no pin of an
/// earlier request steers it.
pub fn new_conversation(model: &str, first_text: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": first_text}]})
}

/// A fresh database on the Postgres test cluster (`OMNIROUTE_TEST_POSTGRES_URL`,
/// which `cargo xtask test` sets), so reruns start clean; its URL.
#[cfg(feature = "postgres-tests")]
pub async fn fresh_postgres_database() -> String {
    use sea_orm::ConnectionTrait;
    let admin = std::env::var("OMNIROUTE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| panic!("OMNIROUTE_TEST_POSTGRES_URL is not set (cargo xtask test sets it)"));
    let name = format!("omniroute_test_{}", uuid::Uuid::new_v4().simple());
    let conn = sea_orm::Database::connect(&admin).await.unwrap();
    conn.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
    let (base, _) = admin.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

/// A base URL where nothing listens (connection refused).
pub async fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/v1")
}

/// Every log line of the process from now on (the server's tasks log
/// from any thread, so the subscriber is the process-wide one: one call
/// per test binary).
pub fn capture_logs() -> Captured {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    captured
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
pub struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
