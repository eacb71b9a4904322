//! Client API keys in memory: hash → key facts, swapped atomically when a
//! key is created or revoked, so checking a key never touches the database.
//! A key's last use is kept here and written behind, at most once a
//! minute per key.

use app::types::Scope;
use arc_swap::ArcSwap;
use sea_orm::{DatabaseConnection, DbErr};
use sha2::{Digest as _, Sha256};
use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
};

use crate::{db::api_keys, outbox::Outbox, resilience::clock::Clock};

/// A key's use is stored at most this often (the list shows the time to
/// the minute).
const USE_STORE_INTERVAL_MS: i64 = 60_000;

/// Prefix of every generated client key.
pub const KEY_PREFIX: &str = "omr-";

/// What the gateway knows about a presented, valid key.
#[derive(Debug)]
pub struct KeyEntry {
    pub id: String,
    pub scopes: Vec<Scope>,
    /// `None` = every connection.
    pub allowed_connections: Option<Vec<String>>,
    /// Epoch ms of its last use; 0 when never used.
    last_used_at: AtomicI64,
}

impl KeyEntry {
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    pub fn may_use(&self, connection_id: &str) -> bool {
        self.allowed_connections.as_ref().is_none_or(|ids| ids.iter().any(|id| id == connection_id))
    }

    pub fn new(id: String, scopes: Vec<Scope>, allowed_connections: Option<Vec<String>>) -> Self {
        Self { id, scopes, allowed_connections, last_used_at: AtomicI64::new(0) }
    }

    /// When it was last used (`None`: never).
    pub fn last_used_at(&self) -> Option<i64> {
        Some(self.last_used_at.load(Ordering::Relaxed)).filter(|at| *at > 0)
    }

    /// Marks a use at `now`; whether it is due to be stored.
    fn used(&self, now: i64) -> bool {
        let before = self.last_used_at.load(Ordering::Relaxed);
        before <= now - USE_STORE_INTERVAL_MS
            && self.last_used_at.compare_exchange(before, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

/// A key's SHA-256, as bytes: the registry hashes the presented key on
/// every `/v1` request and looks it up without writing it out as hex.
type Digest = [u8; 32];

pub struct KeyRegistry {
    by_hash: ArcSwap<HashMap<Digest, Arc<KeyEntry>>>,
    clock: Arc<dyn Clock>,
    uses: Arc<KeyUses>,
}

/// Where the registry leaves the keys' uses for the store: key id → last
/// use (epoch ms), the newest per key.
pub type KeyUses = Outbox<String, i64>;

impl KeyRegistry {
    pub fn new(clock: Arc<dyn Clock>, uses: Arc<KeyUses>) -> Self {
        Self { by_hash: ArcSwap::default(), clock, uses }
    }

    /// The key presented, if valid; its use is recorded.
    pub fn lookup(&self, presented: &str) -> Option<Arc<KeyEntry>> {
        let digest: Digest = Sha256::digest(presented.as_bytes()).into();
        let entry = self.by_hash.load().get(&digest).cloned()?;
        let now = self.clock.now_ms();
        if entry.used(now) {
            self.uses.put(entry.id.clone(), now);
        }
        Some(entry)
    }

    /// When the key `id` was last used, as known in memory.
    pub fn last_used_at(&self, id: &str) -> Option<i64> {
        self.by_hash.load().values().find(|k| k.id == id)?.last_used_at()
    }

    /// `requireApiKey`: once any key exists, `/v1/*` needs one.
    pub fn any(&self) -> bool {
        !self.by_hash.load().is_empty()
    }

    pub async fn reload(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let before = self.by_hash.load();
        let map = api_keys::list(db)
            .await?
            .into_iter()
            .filter_map(|row| {
                let mut digest: Digest = [0; 32];
                if hex::decode_to_slice(&row.key_hash, &mut digest).is_err() {
                    tracing::error!(key_id = row.id, "an API key's stored hash is not SHA-256 hex; the key is ignored");
                    return None;
                }
                let allowed = row.allowed_connections.as_deref().and_then(|s| serde_json::from_str(s).ok());
                let entry = KeyEntry::new(row.id, parse_scopes(&row.scopes), allowed);
                // A use not stored yet is not lost by the reload.
                let known = before.get(&digest).and_then(|k| k.last_used_at());
                entry.last_used_at.store(known.max(row.last_used_at).unwrap_or(0), Ordering::Relaxed);
                Some((digest, Arc::new(entry)))
            })
            .collect();
        self.by_hash.store(Arc::new(map));
        Ok(())
    }
}

/// Scope names from the stored JSON array; unknown names are ignored.
pub fn parse_scopes(json: &str) -> Vec<Scope> {
    serde_json::from_str::<Vec<String>>(json).unwrap_or_default().iter().filter_map(|s| Scope::parse(s)).collect()
}

/// A new random client key.
pub fn generate() -> String {
    format!("{KEY_PREFIX}{}", super::random_token(32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_unique_and_prefixed() {
        let (a, b) = (generate(), generate());
        assert!(a.starts_with(KEY_PREFIX) && a.len() > 40);
        assert_ne!(a, b);
    }

    #[test]
    fn allow_list_restricts_connections() {
        let k = KeyEntry::new("k".into(), vec![Scope::Inference], Some(vec!["c1".into()]));
        assert!(k.may_use("c1") && !k.may_use("c2"));
        assert!(k.has(Scope::Inference) && !k.has(Scope::Management));
    }

    #[tokio::test]
    async fn keys_are_found_by_their_digest_and_a_row_whose_hash_is_not_hex_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::connect(&format!("sqlite://{}", dir.path().join("k.db").display())).await.unwrap();
        let row = |id: &str, key_hash: String| api_keys::ApiKeyRow {
            id: id.into(),
            name: id.into(),
            key_hash,
            key_prefix: "omr-".into(),
            scopes: r#"["inference"]"#.into(),
            allowed_connections: None,
            created_at: 0,
            last_used_at: None,
        };
        api_keys::insert(&db, row("good", super::super::sha256_hex("omr-good"))).await.unwrap();
        api_keys::insert(&db, row("bad", "not-hex".into())).await.unwrap();
        let clock = Arc::new(crate::resilience::clock::ManualClock::new(1_000));
        let registry = KeyRegistry::new(clock, Arc::new(KeyUses::new(Arc::default())));
        registry.reload(&db).await.unwrap();
        assert_eq!(registry.lookup("omr-good").map(|k| k.id.clone()).as_deref(), Some("good"));
        assert!(registry.lookup("omr-other").is_none());
        assert_eq!(registry.by_hash.load().len(), 1, "the unreadable row is left out");
    }

    #[test]
    fn a_use_is_due_for_storage_once_a_minute() {
        let k = KeyEntry::new("k".into(), vec![Scope::Inference], None);
        assert_eq!(k.last_used_at(), None);
        assert!(k.used(1_000_000));
        assert!(!k.used(1_030_000), "within the minute: kept in memory only");
        assert_eq!(k.last_used_at(), Some(1_000_000));
        assert!(k.used(1_060_000));
        assert_eq!(k.last_used_at(), Some(1_060_000));
    }
}
