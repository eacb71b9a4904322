//! The live connection registry: every active connection with its
//! decrypted credential, grouped by provider in routing order. The proxy
//! reads it lock-free (`ArcSwap`); management changes rebuild it from the
//! database. The hot path never touches the database.

use app::types::connection::RateLimitOverrides;
use arc_swap::ArcSwap;
use parking_lot::Mutex;
use sea_orm::{DatabaseConnection, DbErr};
use std::{
    collections::HashMap,
    fmt,
    sync::{
        Arc,
        atomic::{AtomicU32, AtomicU64, Ordering},
    },
};

use super::{affinity::SessionId, combo_state::TargetStats};
use crate::{
    auth::secrets::SecretBox,
    db::connections,
    resilience::usage_wall::OptIns,
    upstream::{
        catalog::{self, Provider},
        executor::{BaseUrl, Endpoint},
        oauth::{self, TokenSet},
    },
};

/// A credential held in memory; `Debug` never shows it.
#[derive(Clone)]
pub struct Credential(pub String);

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

/// One usable connection as the proxy sees it.
#[derive(Debug)]
pub struct LiveConnection {
    pub id: String,
    /// The operator's name for it (shown, never routed on).
    pub name: String,
    pub provider: &'static Provider,
    /// Where to call it: the connection's base URL override, else the
    /// provider default, with its authentication headers.
    pub endpoint: Endpoint,
    /// Kept for redacting upstream texts that echo it.
    pub credential: Option<Credential>,
    /// OAuth connections cool by the OAuth profile (SPEC §R2).
    pub oauth: bool,
    /// When its OAuth access token expires (epoch ms), when known.
    pub expires_at: Option<i64>,
    /// The connection opts out of cooldowns (failures lock the model).
    pub disable_cooling: bool,
    /// Its concurrency and rate limits (SPEC §R4, §R5).
    pub limits: ConnectionLimits,
    /// The model ids its last passing test listed (for `/v1/models`).
    pub discovered_models: Vec<String>,
    /// The account a subscription's token acts for, when known: the
    /// ChatGPT account of a Codex token, the organization of a Claude one.
    pub account_id: Option<String>,
    /// What a Claude subscription does at its usage wall (SPEC §R2.1).
    pub usage_wall: OptIns,
    /// Its attempts since the start; carried over when the registry is rebuilt.
    usage: Arc<Usage>,
}

/// A connection's attempts, for the strategies that weigh connections.
#[derive(Debug, Default)]
struct Usage {
    in_flight: AtomicU32,
    requests: AtomicU64,
    successes: AtomicU64,
    latency_ms_total: AtomicU64,
    /// OAuth session occupancy: the client sessions with an attempt in
    /// flight on a subscription account, and how many each has.
    sessions: Mutex<HashMap<SessionId, u32>>,
}

/// One attempt in flight on a connection, counted until dropped (with its
/// client session, on a subscription account).
#[derive(Debug)]
pub struct InFlight {
    usage: Arc<Usage>,
    session: Option<SessionId>,
}

impl InFlight {
    /// The attempt served, after `latency_ms`.
    pub fn served(&self, latency_ms: u64) {
        self.usage.successes.fetch_add(1, Ordering::Relaxed);
        self.usage.latency_ms_total.fetch_add(latency_ms, Ordering::Relaxed);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.usage.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(session) = &self.session {
            let mut sessions = self.usage.sessions.lock();
            if let Some(n) = sessions.get_mut(session) {
                *n -= 1;
                if *n == 0 {
                    sessions.remove(session);
                }
            }
        }
    }
}

/// A connection's own limits, from its row.
#[derive(Clone, Debug, Default)]
pub struct ConnectionLimits {
    /// `maxConcurrent`: requests in flight at most; `None` is unlimited.
    pub max_concurrent: Option<u32>,
    /// `rateLimitOverrides` (model caps, queue rate and waits).
    pub overrides: RateLimitOverrides,
    /// `rate_limit_protection`: `Some` forces the request queue on or off
    /// (SPEC §R5); `None` follows auto-enable.
    pub protection: Option<bool>,
    /// An API-key connection (auto-enable protects those).
    pub api_key_auth: bool,
}

impl LiveConnection {
    pub fn new(id: String, provider: &'static Provider, base_url: BaseUrl, credential: Option<Credential>) -> Self {
        let endpoint = Endpoint::new(provider.protocol, base_url, credential.as_ref().map(|c| c.0.as_str()));
        Self {
            id,
            name: String::new(),
            provider,
            endpoint,
            credential,
            oauth: false,
            expires_at: None,
            disable_cooling: false,
            limits: ConnectionLimits::default(),
            discovered_models: Vec::new(),
            account_id: None,
            usage_wall: OptIns::default(),
            usage: Arc::default(),
        }
    }

    /// Counts an attempt on it, for the client `session` when known; in
    /// flight until the returned guard is dropped. A subscription account
    /// also counts the session as live on it while it has an attempt here.
    pub fn begin_attempt(&self, session: Option<SessionId>) -> InFlight {
        self.usage.requests.fetch_add(1, Ordering::Relaxed);
        self.usage.in_flight.fetch_add(1, Ordering::Relaxed);
        let session = session.filter(|_| self.oauth);
        if let Some(s) = session {
            *self.usage.sessions.lock().entry(s).or_default() += 1;
        }
        InFlight { usage: self.usage.clone(), session }
    }

    /// How many client sessions other than `session` have an attempt in
    /// flight on it (0 on an API-key connection).
    pub fn foreign_sessions(&self, session: SessionId) -> usize {
        if !self.oauth {
            return 0;
        }
        let sessions = self.usage.sessions.lock();
        sessions.len() - usize::from(sessions.contains_key(&session))
    }

    /// Attempts on it now.
    pub fn in_flight(&self) -> u32 {
        self.usage.in_flight.load(Ordering::Relaxed)
    }

    /// Its attempts since the start, as the strategies weigh them.
    pub fn stats(&self) -> TargetStats {
        TargetStats {
            requests: self.usage.requests.load(Ordering::Relaxed),
            successes: self.usage.successes.load(Ordering::Relaxed),
            latency_ms_total: self.usage.latency_ms_total.load(Ordering::Relaxed),
        }
    }

    /// `text` without any part of this connection's credential
    /// ([`crate::auth::redact`]): upstream error text goes through this
    /// before it reaches a log row, `lastError` or a test result.
    pub fn redact(&self, text: &str) -> String {
        match &self.credential {
            Some(c) => crate::auth::redact::redact(text, &c.0).into_owned(),
            None => text.to_owned(),
        }
    }

    /// The connection a stored row describes, its credential decrypted
    /// (`plain`): an OAuth connection's is its token set, and its access
    /// token goes out as a bearer token.
    pub fn from_row(
        row: &crate::db::entities::provider_connection::Model,
        provider: &'static Provider,
        base_url: BaseUrl,
        plain: Option<String>,
    ) -> Self {
        if row.auth_type != "oauth" {
            return Self::new(row.id.clone(), provider, base_url, plain.map(Credential)).with_policy(row);
        }
        let tokens = plain.as_deref().map(TokenSet::read);
        let token = tokens.as_ref().map(|t| t.access_token.as_str());
        let mut endpoint = Endpoint::oauth(provider.protocol, base_url.clone(), token);
        if let Some(tokens) = &tokens {
            endpoint.headers.extend(oauth::backend_headers(provider.id, tokens));
        }
        if let Some(path) = provider.wire.models_path() {
            endpoint.models_path = path;
        }
        let mut conn = Self::new(row.id.clone(), provider, base_url, None);
        conn.endpoint = endpoint;
        conn.credential = tokens.as_ref().map(|t| Credential(t.access_token.clone()));
        conn.expires_at = tokens.as_ref().and_then(|t| t.expires_at);
        conn.account_id = tokens.and_then(|t| t.account_id);
        conn.with_policy(row)
    }

    /// The connection's own cooldown policy, from its row.
    fn with_policy(mut self, row: &crate::db::entities::provider_connection::Model) -> Self {
        self.name.clone_from(&row.name);
        self.discovered_models =
            row.discovered_models.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default();
        self.oauth = row.auth_type == "oauth";
        self.disable_cooling = row.disable_cooling;
        self.usage_wall = usage_wall_opt_ins(row.provider_specific_data.as_deref());
        self.limits = ConnectionLimits {
            max_concurrent: row.max_concurrent.and_then(|m| u32::try_from(m).ok()).filter(|m| *m > 0),
            overrides: row
                .rate_limit_overrides
                .as_deref()
                .and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or_default(),
            protection: row.rate_limit_protection,
            api_key_auth: row.auth_type == "apikey",
        };
        self
    }
}

/// An immutable view of every routable connection.
#[derive(Default, Debug)]
pub struct Snapshot {
    by_provider: HashMap<&'static str, Vec<Arc<LiveConnection>>>,
}

impl Snapshot {
    /// Groups connections (already in routing order) by provider.
    pub fn from_live(conns: impl IntoIterator<Item = LiveConnection>) -> Self {
        let mut by_provider: HashMap<&'static str, Vec<Arc<LiveConnection>>> = HashMap::new();
        for c in conns {
            by_provider.entry(c.provider.id).or_default().push(Arc::new(c));
        }
        Self { by_provider }
    }

    /// Active connections of `provider` in routing order (priority, age).
    pub fn candidates(&self, provider: &str) -> &[Arc<LiveConnection>] {
        self.by_provider.get(provider).map(Vec::as_slice).unwrap_or_default()
    }

    /// The active connection `id`, of any provider.
    pub fn connection(&self, id: &str) -> Option<&Arc<LiveConnection>> {
        self.by_provider.values().flatten().find(|c| c.id == id)
    }

    /// Every active connection, providers in catalog order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<LiveConnection>> + '_ {
        catalog::all().iter().flat_map(|p| self.candidates(p.id))
    }

    /// Providers with at least one active connection.
    pub fn active_providers(&self) -> impl Iterator<Item = &'static Provider> + '_ {
        catalog::all().iter().filter(|p| self.by_provider.contains_key(p.id))
    }

    /// The models each provider with an active connection serves: the
    /// catalog's, then those its connections' last passing tests listed
    /// (the only source for a custom upstream), each once.
    pub fn served_models(&self) -> Vec<(&'static Provider, Vec<&str>)> {
        self.active_providers()
            .map(|p| {
                let discovered =
                    self.candidates(p.id).iter().flat_map(|c| c.discovered_models.iter().map(String::as_str));
                let mut seen = std::collections::HashSet::new();
                (p, p.models.iter().copied().chain(discovered).filter(|m| seen.insert(*m)).collect())
            })
            .collect()
    }
}

#[derive(Default)]
pub struct ConnectionRegistry {
    snapshot: ArcSwap<Snapshot>,
    /// One OAuth refresh at a time per connection: the others wait for its
    /// token (a refresh token is single-use).
    refreshing: dashmap::DashMap<String, Arc<tokio::sync::Mutex<()>>>,
}

impl ConnectionRegistry {
    /// The turn to refresh connection `id`'s token, once the refresh
    /// before it (if any) is done.
    pub async fn refresh_turn(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = self.refreshing.entry(id.to_owned()).or_default().clone();
        lock.lock_owned().await
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Rebuilds the snapshot from the database. Connections whose
    /// credential cannot be decrypted or that lack a base URL are left out
    /// with a warning (never with the secret).
    pub async fn reload(&self, db: &DatabaseConnection, secrets: &SecretBox) -> Result<(), DbErr> {
        let mut live = Vec::new();
        let before = self.snapshot();
        for row in connections::list(db, None).await? {
            if !row.is_active {
                continue;
            }
            let Some(provider) = catalog::find(&row.provider) else {
                tracing::warn!(connection_id = %row.id, provider = %row.provider, "connection of an unknown provider skipped");
                continue;
            };
            let plain = match row.credential_enc.as_deref().map(|c| secrets.decrypt(c)) {
                None => None,
                Some(Ok(plain)) => Some(plain),
                Some(Err(e)) => {
                    tracing::warn!(connection_id = %row.id, error = %e, "connection skipped");
                    continue;
                }
            };
            let Some(base_url) = BaseUrl::parse(row.base_url.as_deref().unwrap_or(provider.default_base_url)) else {
                tracing::warn!(connection_id = %row.id, "connection without a usable base URL skipped");
                continue;
            };
            let mut conn = LiveConnection::from_row(&row, provider, base_url, plain);
            if let Some(old) = before.connection(&row.id) {
                conn.usage = old.usage.clone();
            }
            live.push(conn);
        }
        // Rows arrive in routing order already; grouping keeps it.
        self.snapshot.store(Arc::new(Snapshot::from_live(live)));
        Ok(())
    }
}

/// The usage-wall opt-ins stored in a row's `provider_specific_data`
/// (`lowPriorityMode`, `autoLimitReset`).
fn usage_wall_opt_ins(stored: Option<&str>) -> OptIns {
    let data: serde_json::Value = stored.and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
    let on = |key: &str| data[key].as_bool().unwrap_or(false);
    OptIns { low_priority: on("lowPriorityMode"), limit_reset: on("autoLimitReset") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(oauth: bool) -> LiveConnection {
        let claude = catalog::find("claude").unwrap();
        let mut c = LiveConnection::new("c".into(), claude, BaseUrl::parse("http://127.0.0.1:1").unwrap(), None);
        c.oauth = oauth;
        c
    }

    #[test]
    fn a_subscription_counts_the_other_sessions_in_flight_until_their_attempts_end() {
        let (me, other) = (SessionId::of("me"), SessionId::of("other"));
        let c = connection(true);
        let first = c.begin_attempt(Some(other));
        let second = c.begin_attempt(Some(other));
        let mine = c.begin_attempt(Some(me));
        let anonymous = c.begin_attempt(None);
        assert_eq!((c.foreign_sessions(me), c.foreign_sessions(other)), (1, 1), "a session counts once");
        drop((first, mine, anonymous));
        assert_eq!(c.foreign_sessions(me), 1, "one of its two attempts is still in flight");
        drop(second);
        assert_eq!((c.foreign_sessions(me), c.in_flight()), (0, 0));
        let api_key = connection(false);
        let _held = api_key.begin_attempt(Some(other));
        assert_eq!(api_key.foreign_sessions(me), 0, "an API key counts no sessions");
    }
}
