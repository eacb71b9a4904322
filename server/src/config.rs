//! Command line and environment → [`Config`]. This is the one place that
//! reads the environment; it reads it through a map so tests can set it.
//! Precedence for each setting: flag > env > built-in default.

use app::types::settings::{EnvSource, read_env};
use clap::{Args, Parser, Subcommand};
use std::{collections::HashMap, path::PathBuf, time::Duration};

pub const DEFAULT_HOST: &str = "127.0.0.1";
/// The prefix of the token endpoint overrides, one per subscription provider.
const OAUTH_TOKEN_URL: &str = "OMNIROUTE_OAUTH_TOKEN_URL_";
pub const DEFAULT_PORT: u16 = 20128;
pub const DEFAULT_DATA_DIR: &str = "./data";
/// Time to establish an upstream TCP/TLS connection (`FETCH_CONNECT_TIMEOUT_MS`).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 30_000;
/// Time until the upstream response starts (`FETCH_TIMEOUT_MS`).
pub const DEFAULT_FETCH_TIMEOUT_MS: u64 = 600_000;
/// The time budget the attempts of one request share, from its first
/// attempt (`OMNIROUTE_REQUEST_DEADLINE_MS`).
pub const DEFAULT_REQUEST_DEADLINE_MS: u64 = 600_000;
/// Time to a stream's first useful event (`STREAM_READINESS_TIMEOUT_MS`).
pub const DEFAULT_STREAM_READINESS_TIMEOUT_MS: u64 = 80_000;
/// Longest silence of a committed stream (`STREAM_IDLE_TIMEOUT_MS`).
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 120_000;
/// Keepalive period for waiting stream clients (`SSE_HEARTBEAT_INTERVAL_MS`).
pub const DEFAULT_SSE_HEARTBEAT_INTERVAL_MS: u64 = 15_000;
/// How long shutdown waits for in-flight requests and streams.
pub const DEFAULT_SHUTDOWN_GRACE_MS: u64 = 30_000;
/// Time a client has for a complete request head, from connecting or from
/// the first byte after an idle keep-alive (`OMNIROUTE_HEADER_READ_TIMEOUT_MS`).
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// Longest pause inside a request body (`OMNIROUTE_BODY_READ_TIMEOUT_MS`).
pub const DEFAULT_BODY_READ_TIMEOUT_MS: u64 = 10_000;
/// Longest a whole request body may take to arrive, from the request's
/// head (`OMNIROUTE_BODY_DEADLINE_MS`): a body trickled a byte per pause
/// holds its connection no longer than this.
pub const DEFAULT_BODY_DEADLINE_MS: u64 = 60_000;
/// How long a keep-alive connection may sit idle between requests
/// (`OMNIROUTE_KEEPALIVE_TIMEOUT_MS`).
pub const DEFAULT_KEEPALIVE_TIMEOUT_MS: u64 = 30_000;
/// Rows of `proxy_logs` kept; older ones are pruned.
pub const DEFAULT_LOG_RETENTION_ROWS: u64 = 100_000;
/// Largest accepted request body on `/v1/*`.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

#[derive(Parser, Debug)]
#[command(name = "omniroute", version, about = "Self-hosted, resilient LLM gateway")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub opts: Flags,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the gateway (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Set a new admin password (generated unless given) and print it.
    ResetPassword {
        /// The new password; generated and printed when absent.
        #[arg(long)]
        password: Option<String>,
    },
}

/// Flags shared by every command.
#[derive(Args, Debug, Default, Clone)]
pub struct Flags {
    /// Listen address [env: OMNIROUTE_HOST] [default: 127.0.0.1]
    #[arg(long, global = true)]
    pub host: Option<String>,
    /// Listen port [env: PORT] [default: 20128]
    #[arg(long, global = true)]
    pub port: Option<u16>,
    /// Data directory: SQLite file, secret key file [env: DATA_DIR] [default: ./data]
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    /// sqlite://… or postgres://… [env: DATABASE_URL] [default: sqlite://<data-dir>/omniroute.db]
    #[arg(long, global = true)]
    pub database_url: Option<String>,
    /// Dashboard assets [env: OMNIROUTE_SITE_ROOT] [default: ./site next to the binary, else target/site]
    #[arg(long, global = true)]
    pub site_root: Option<PathBuf>,
}

/// Everything the server needs to start, resolved once.
#[derive(Clone, Debug)]
pub struct Config {
    pub host: String,
    pub port: u16,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub site_root: PathBuf,
    pub initial_password: Option<String>,
    pub secret_key: Option<String>,
    pub management_key: Option<String>,
    pub log_filter: String,
    pub log_json: bool,
    pub connect_timeout: Duration,
    pub fetch_timeout: Duration,
    /// A PEM file of authorities trusted for upstream HTTPS beside the
    /// webpki roots (`OMNIROUTE_UPSTREAM_CA_FILE`).
    pub upstream_ca_file: Option<PathBuf>,
    /// The time budget the attempts of one request share, counted from its
    /// first attempt (`OMNIROUTE_REQUEST_DEADLINE_MS`).
    pub request_deadline: Duration,
    /// Token endpoints that replace a subscription provider's own
    /// (`OMNIROUTE_OAUTH_TOKEN_URL_<PROVIDER>`), by that upper-case suffix.
    pub oauth_token_urls: HashMap<String, String>,
    /// The port of the Codex CLI's sign-in redirect address, where the
    /// gateway listens during a ChatGPT sign-in from its own machine:
    /// always 1455 (only tests choose another).
    pub oauth_callback_port: u16,
    /// The home directory of the user the gateway runs as (`HOME`), where
    /// the CLIs write their credentials files.
    pub home_dir: Option<PathBuf>,
    /// Time from the start of a stream attempt to its first useful event
    /// (`STREAM_READINESS_TIMEOUT_MS`), the wait for headers included.
    pub stream_readiness_timeout: Duration,
    /// Longest a committed stream may go without model output
    /// (`STREAM_IDLE_TIMEOUT_MS`).
    pub stream_idle_timeout: Duration,
    /// How often a waiting stream client gets a keepalive frame
    /// (`SSE_HEARTBEAT_INTERVAL_MS`).
    pub sse_heartbeat_interval: Duration,
    /// Stream recovery (`STREAM_RECOVERY_ENABLED`, off by default): the
    /// start of a stream is held back so that early failures are retried
    /// where the client cannot see them.
    pub stream_recovery: bool,
    /// Mid-stream recovery (`STREAM_RECOVERY_MIDSTREAM_ENABLED`, off by
    /// default): a stream that breaks after its commit point is continued
    /// by another target that can take the output so far as its prefix.
    pub stream_recovery_midstream: bool,
    pub shutdown_grace: Duration,
    pub log_retention_rows: u64,
    pub max_body_bytes: usize,
    /// Serving threads (`OMNIROUTE_WORKERS`, default: one per CPU), each
    /// with its own listener socket and upstream connection pool.
    pub workers: usize,
    /// The resilience settings the environment sets (SPEC §S: between the
    /// built-in defaults and the persisted values).
    pub resilience_env: Vec<EnvSource>,
    /// `X-Forwarded-Host` / `X-Forwarded-Proto` come from a reverse proxy
    /// the operator runs (`OMNIROUTE_TRUST_PROXY`, off by default).
    pub trust_proxy: bool,
    /// When the session cookie is `Secure` (`OMNIROUTE_SECURE_COOKIE`).
    pub secure_cookie: SecureCookie,
    /// The client connection limits (`listener`).
    pub client: ClientLimits,
}

/// What a client connection may cost before it is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientLimits {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    /// The whole body within this long of the head.
    pub body_deadline: Duration,
    pub keepalive_timeout: Duration,
    /// Open client connections at most (`OMNIROUTE_MAX_CONNECTIONS`);
    /// `None`: derived from the file-descriptor limit at start.
    pub max_connections: Option<usize>,
    /// Of those, kept for the dashboard, `/api` and health checks
    /// (`OMNIROUTE_RESERVED_CONNECTIONS`); `None`: 1/32 of the budget.
    pub reserved_connections: Option<usize>,
    /// At most from one client address
    /// (`OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT`); `None`: 1/8 of the budget,
    /// at least 32.
    pub max_connections_per_client: Option<usize>,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
            body_read_timeout: Duration::from_millis(DEFAULT_BODY_READ_TIMEOUT_MS),
            body_deadline: Duration::from_millis(DEFAULT_BODY_DEADLINE_MS),
            keepalive_timeout: Duration::from_millis(DEFAULT_KEEPALIVE_TIMEOUT_MS),
            max_connections: None,
            reserved_connections: None,
            max_connections_per_client: None,
        }
    }
}

/// `OMNIROUTE_SECURE_COOKIE`: `auto` (default) marks the session cookie
/// `Secure` when a trusted proxy says the client is on https; `true` and
/// `false` force it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecureCookie {
    Auto,
    Always,
    Never,
}

/// A problem with a flag or env value, named so the user can fix it.
#[derive(Debug, thiserror::Error)]
#[error("invalid value for {name}: {value:?} ({reason})")]
pub struct ConfigError {
    pub name: String,
    pub value: String,
    pub reason: String,
}

impl Config {
    /// Resolves flags over `env` over defaults.
    pub fn resolve(flags: &Flags, env: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let data_dir = flags
            .data_dir
            .clone()
            .or_else(|| get("DATA_DIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let database_url = flags
            .database_url
            .clone()
            .or_else(|| get("DATABASE_URL"))
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("omniroute.db").display()));
        let resilience_env = read_env(get).map_err(|e| ConfigError {
            value: get(&e.field).unwrap_or_default(),
            name: e.field,
            reason: e.message,
        })?;
        let port = match flags.port {
            Some(p) => p,
            None => parse_env(env, "PORT", DEFAULT_PORT)?,
        };
        Ok(Self {
            host: flags.host.clone().or_else(|| get("OMNIROUTE_HOST")).unwrap_or_else(|| DEFAULT_HOST.into()),
            port,
            site_root: flags
                .site_root
                .clone()
                .or_else(|| get("OMNIROUTE_SITE_ROOT").map(PathBuf::from))
                .unwrap_or_else(default_site_root),
            data_dir,
            database_url,
            initial_password: get("INITIAL_PASSWORD"),
            secret_key: get("OMNIROUTE_SECRET_KEY"),
            management_key: get("OMNIROUTE_MANAGEMENT_KEY"),
            log_filter: get("OMNIROUTE_LOG").unwrap_or_else(|| "info".into()),
            log_json: get("OMNIROUTE_LOG_FORMAT").is_some_and(|f| f.eq_ignore_ascii_case("json")),
            connect_timeout: parse_ms(env, "FETCH_CONNECT_TIMEOUT_MS", DEFAULT_CONNECT_TIMEOUT_MS)?,
            fetch_timeout: parse_ms(env, "FETCH_TIMEOUT_MS", DEFAULT_FETCH_TIMEOUT_MS)?,
            upstream_ca_file: get("OMNIROUTE_UPSTREAM_CA_FILE").map(PathBuf::from),
            request_deadline: parse_ms(env, "OMNIROUTE_REQUEST_DEADLINE_MS", DEFAULT_REQUEST_DEADLINE_MS)?,
            oauth_token_urls: env
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix(OAUTH_TOKEN_URL)?.to_owned(), v.trim().to_owned())))
                .filter(|(_, v)| !v.is_empty())
                .collect(),
            oauth_callback_port: 1455,
            home_dir: env.get("HOME").filter(|h| !h.trim().is_empty()).map(PathBuf::from),
            stream_readiness_timeout: parse_ms(
                env,
                "STREAM_READINESS_TIMEOUT_MS",
                DEFAULT_STREAM_READINESS_TIMEOUT_MS,
            )?,
            stream_idle_timeout: parse_ms(env, "STREAM_IDLE_TIMEOUT_MS", DEFAULT_STREAM_IDLE_TIMEOUT_MS)?,
            sse_heartbeat_interval: parse_ms(env, "SSE_HEARTBEAT_INTERVAL_MS", DEFAULT_SSE_HEARTBEAT_INTERVAL_MS)?,
            stream_recovery: parse_flag(env, "STREAM_RECOVERY_ENABLED")?,
            stream_recovery_midstream: parse_flag(env, "STREAM_RECOVERY_MIDSTREAM_ENABLED")?,
            shutdown_grace: parse_ms(env, "OMNIROUTE_SHUTDOWN_GRACE_MS", DEFAULT_SHUTDOWN_GRACE_MS)?,
            log_retention_rows: parse_env(env, "OMNIROUTE_LOG_RETENTION_ROWS", DEFAULT_LOG_RETENTION_ROWS)?,
            max_body_bytes: parse_env(env, "OMNIROUTE_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)?,
            workers: parse_workers(env)?,
            resilience_env,
            trust_proxy: parse_flag(env, "OMNIROUTE_TRUST_PROXY")?,
            secure_cookie: parse_secure_cookie(env)?,
            client: ClientLimits {
                header_read_timeout: parse_ms(env, "OMNIROUTE_HEADER_READ_TIMEOUT_MS", DEFAULT_HEADER_READ_TIMEOUT_MS)?,
                body_read_timeout: parse_ms(env, "OMNIROUTE_BODY_READ_TIMEOUT_MS", DEFAULT_BODY_READ_TIMEOUT_MS)?,
                body_deadline: parse_ms(env, "OMNIROUTE_BODY_DEADLINE_MS", DEFAULT_BODY_DEADLINE_MS)?,
                keepalive_timeout: parse_ms(env, "OMNIROUTE_KEEPALIVE_TIMEOUT_MS", DEFAULT_KEEPALIVE_TIMEOUT_MS)?,
                max_connections: parse_count(env, "OMNIROUTE_MAX_CONNECTIONS", 1)?,
                reserved_connections: parse_count(env, "OMNIROUTE_RESERVED_CONNECTIONS", 0)?,
                max_connections_per_client: parse_count(env, "OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT", 1)?,
            },
        })
    }

    /// The config tests start from: a private data dir, defaults elsewhere.
    /// Where `provider`'s OAuth tokens are refreshed, when the environment
    /// says (`OMNIROUTE_OAUTH_TOKEN_URL_GEMINI_CLI` for `gemini-cli`).
    pub fn oauth_token_url(&self, provider: &str) -> Option<&str> {
        self.oauth_token_urls.get(&provider.to_ascii_uppercase().replace('-', "_")).map(String::as_str)
    }

    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        let flags = Flags { data_dir: Some(data_dir), ..Flags::default() };
        // Defaults only: no env value can be invalid.
        Self::resolve(&flags, &HashMap::new()).unwrap_or_else(|e| unreachable!("{e}"))
    }
}

/// An optional count: unset or empty is `None`, else at least `min`.
fn parse_count(env: &HashMap<String, String>, name: &'static str, min: usize) -> Result<Option<usize>, ConfigError> {
    match env.get(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(_) => Ok(Some(parse_env(env, name, 0usize)?.max(min))),
    }
}

fn parse_env<T: std::str::FromStr>(
    env: &HashMap<String, String>,
    name: &'static str,
    default: T,
) -> Result<T, ConfigError> {
    match env.get(name).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| ConfigError {
            name: name.into(),
            value: v.clone(),
            reason: "expected a non-negative integer".into(),
        }),
    }
}

/// A duration variable in milliseconds.
fn parse_ms(env: &HashMap<String, String>, name: &'static str, default_ms: u64) -> Result<Duration, ConfigError> {
    parse_env(env, name, default_ms).map(Duration::from_millis)
}

/// An on/off variable (`true/1/on/yes`, `false/0/off/no`); off when unset.
fn parse_flag(env: &HashMap<String, String>, name: &'static str) -> Result<bool, ConfigError> {
    match env.get(name).filter(|v| !v.is_empty()) {
        None => Ok(false),
        Some(v) => app::types::settings::parse_bool(v.trim()).ok_or_else(|| ConfigError {
            name: name.into(),
            value: v.clone(),
            reason: "expected true or false".into(),
        }),
    }
}

fn parse_secure_cookie(env: &HashMap<String, String>) -> Result<SecureCookie, ConfigError> {
    const NAME: &str = "OMNIROUTE_SECURE_COOKIE";
    match env.get(NAME).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(SecureCookie::Auto),
        Some(v) if v.eq_ignore_ascii_case("auto") => Ok(SecureCookie::Auto),
        Some(v) => match app::types::settings::parse_bool(v) {
            Some(true) => Ok(SecureCookie::Always),
            Some(false) => Ok(SecureCookie::Never),
            None => {
                Err(ConfigError { name: NAME.into(), value: v.into(), reason: "expected auto, true or false".into() })
            }
        },
    }
}

/// `OMNIROUTE_WORKERS`: at least one; one per CPU when unset.
fn parse_workers(env: &HashMap<String, String>) -> Result<usize, ConfigError> {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    match parse_env(env, "OMNIROUTE_WORKERS", cpus)? {
        0 => Err(ConfigError {
            name: "OMNIROUTE_WORKERS".into(),
            value: "0".into(),
            reason: "at least one worker is needed".into(),
        }),
        n => Ok(n),
    }
}

/// `site/` next to the installed binary when present, else the build output.
fn default_site_root() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("site")))
        .filter(|p| p.join("pkg").is_dir())
        .unwrap_or_else(|| PathBuf::from("target/site"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_token_url_override_is_found_by_the_providers_upper_case_name() {
        let env = env(&[
            ("OMNIROUTE_OAUTH_TOKEN_URL_GEMINI_CLI", "http://127.0.0.1:9/token"),
            ("OMNIROUTE_OAUTH_TOKEN_URL_CLAUDE", " "),
        ]);
        let c = Config::resolve(&Flags::default(), &env).unwrap();
        assert_eq!(c.oauth_token_url("gemini-cli"), Some("http://127.0.0.1:9/token"));
        assert_eq!(c.oauth_token_url("claude"), None, "an empty override is none");
    }

    #[test]
    fn defaults_apply_without_flags_or_env() {
        let c = Config::resolve(&Flags::default(), &HashMap::new()).unwrap();
        assert_eq!((c.host.as_str(), c.port), (DEFAULT_HOST, DEFAULT_PORT));
        assert_eq!(c.database_url, "sqlite://./data/omniroute.db");
        assert_eq!((c.fetch_timeout, c.request_deadline), (Duration::from_secs(600), Duration::from_secs(600)));
        assert_eq!(
            (c.stream_readiness_timeout, c.stream_idle_timeout),
            (Duration::from_secs(80), Duration::from_secs(120)),
            "SPEC §R6: a silent stream is ended after two minutes, not the original's ten"
        );
        let c = Config::resolve(&Flags::default(), &env(&[("STREAM_READINESS_TIMEOUT_MS", "250")])).unwrap();
        assert_eq!(c.stream_readiness_timeout, Duration::from_millis(250));
        assert_eq!(c.sse_heartbeat_interval, Duration::from_secs(15));
        assert!(!c.stream_recovery);
        assert!(
            Config::resolve(&Flags::default(), &env(&[("STREAM_RECOVERY_ENABLED", "on")])).unwrap().stream_recovery
        );
        let err = Config::resolve(&Flags::default(), &env(&[("STREAM_RECOVERY_ENABLED", "maybe")])).unwrap_err();
        assert_eq!(err.name, "STREAM_RECOVERY_ENABLED");
    }

    #[test]
    fn env_beats_default_and_flag_beats_env() {
        let e = env(&[("PORT", "9000"), ("DATA_DIR", "/tmp/x"), ("OMNIROUTE_HOST", "0.0.0.0")]);
        let c = Config::resolve(&Flags::default(), &e).unwrap();
        assert_eq!((c.port, c.host.as_str()), (9000, "0.0.0.0"));
        assert_eq!(c.database_url, "sqlite:///tmp/x/omniroute.db");
        let flags = Flags { port: Some(1234), database_url: Some("postgres://db/x".into()), ..Flags::default() };
        let c = Config::resolve(&flags, &e).unwrap();
        assert_eq!((c.port, c.database_url.as_str()), (1234, "postgres://db/x"));
    }

    #[test]
    fn bad_env_numbers_are_named() {
        let err = Config::resolve(&Flags::default(), &env(&[("FETCH_TIMEOUT_MS", "soon")])).unwrap_err();
        assert_eq!(err.name, "FETCH_TIMEOUT_MS");
        let err = Config::resolve(&Flags::default(), &env(&[("RATE_LIMIT_AUTO_ENABLE", "sometimes")])).unwrap_err();
        assert_eq!((err.name.as_str(), err.value.as_str()), ("RATE_LIMIT_AUTO_ENABLE", "sometimes"));
    }

    #[test]
    fn client_limits_default_and_are_read() {
        let c = Config::resolve(&Flags::default(), &HashMap::new()).unwrap().client;
        assert_eq!((c.header_read_timeout, c.keepalive_timeout), (Duration::from_secs(10), Duration::from_secs(30)));
        assert_eq!((c.body_read_timeout, c.max_connections), (Duration::from_secs(10), None));
        assert_eq!(c, ClientLimits::default());
        let e = env(&[
            ("OMNIROUTE_MAX_CONNECTIONS", "500"),
            ("OMNIROUTE_HEADER_READ_TIMEOUT_MS", "2000"),
            ("OMNIROUTE_BODY_DEADLINE_MS", "30000"),
            ("OMNIROUTE_RESERVED_CONNECTIONS", "0"),
            ("OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT", "100"),
        ]);
        let c = Config::resolve(&Flags::default(), &e).unwrap().client;
        assert_eq!((c.max_connections, c.header_read_timeout), (Some(500), Duration::from_secs(2)));
        assert_eq!(
            (c.body_deadline, c.reserved_connections, c.max_connections_per_client),
            (Duration::from_secs(30), Some(0), Some(100))
        );
        let bad = env(&[("OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT", "many")]);
        assert_eq!(Config::resolve(&Flags::default(), &bad).unwrap_err().name, "OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT");
    }

    #[test]
    fn proxy_trust_and_secure_cookies_are_read() {
        let c = Config::resolve(&Flags::default(), &HashMap::new()).unwrap();
        assert_eq!((c.trust_proxy, c.secure_cookie), (false, SecureCookie::Auto));
        let e = env(&[("OMNIROUTE_TRUST_PROXY", "yes"), ("OMNIROUTE_SECURE_COOKIE", "false")]);
        let c = Config::resolve(&Flags::default(), &e).unwrap();
        assert_eq!((c.trust_proxy, c.secure_cookie), (true, SecureCookie::Never));
        let err = Config::resolve(&Flags::default(), &env(&[("OMNIROUTE_SECURE_COOKIE", "sometimes")])).unwrap_err();
        assert_eq!(err.name, "OMNIROUTE_SECURE_COOKIE");
    }

    #[test]
    fn workers_default_to_the_cpus_and_refuse_zero() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(Config::resolve(&Flags::default(), &HashMap::new()).unwrap().workers, cpus);
        assert_eq!(Config::resolve(&Flags::default(), &env(&[("OMNIROUTE_WORKERS", "3")])).unwrap().workers, 3);
        let err = Config::resolve(&Flags::default(), &env(&[("OMNIROUTE_WORKERS", "0")])).unwrap_err();
        assert_eq!((err.name.as_str(), err.value.as_str()), ("OMNIROUTE_WORKERS", "0"));
    }

    #[test]
    fn resilience_variables_are_read_from_the_same_map() {
        let c = Config::resolve(&Flags::default(), &env(&[("RATE_LIMIT_MAX_QUEUE_DEPTH", "12")])).unwrap();
        assert_eq!(c.resilience_env.len(), 1);
        assert_eq!(
            (c.resilience_env[0].field.as_str(), &c.resilience_env[0].value),
            ("requestQueue.maxQueueDepth", &12.into())
        );
    }
}
