//! Session affinity (SPEC §R2.2): a client session is pinned to the
//! connection that last served it, per provider, so the next turn of a
//! conversation reaches the same account (its prompt cache, its
//! subscription session) instead of hopping by priority order.
//!
//! The pin table lives in memory — one lookup per request is a hash-map
//! read, never a database round trip — and is written behind to
//! `session_account_affinity` (restored at start). Only hashes are kept:
//! a session is known by the SHA-256 of its key, never by the key.
//!
//! The rules: an unexpired pin puts its connection first, ahead of
//! strategy and priority order; when that connection is not eligible
//! (cooling, locked, terminal, breaker, the key's allow-list) another one
//! serves and the pin moves to it; a 429 or a terminal error on the pinned
//! connection evicts the pin. A pin expires `sessionAffinityTtlMs` after
//! its last use (a shorter TTL saved later applies at once); expired pins
//! are dropped when read. A provider with one usable connection pins
//! nothing: there is nothing to choose — nor does a combo whose strategy
//! ranks accounts: its plan makes one target per connection, so the
//! strategy, not the session, chooses the account.

use dashmap::DashMap;
use sha2::{Digest, Sha256};
use std::{collections::HashMap, sync::Arc};

use crate::{db::entities::session_affinity, outbox::Outbox, resilience::clock::Clock, upstream::catalog};

/// Where the table leaves its changes for the store: a pin made, moved or
/// touched (`Some`), or dropped (`None`), the newest per session and provider.
pub type PinChanges = Outbox<PinKey, Option<Pin>>;

/// Pins held at most; past it expired pins go first, then the least
/// recently used tenth.
pub const MAX_PINS: usize = 50_000;

/// A touch of an existing pin is stored at most this often (its expiry
/// in the database may lag by this much; a moved or new pin is stored at
/// once).
const TOUCH_STORE_INTERVAL_MS: i64 = 60_000;

/// The SHA-256 of a session key: how a session is known everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SessionId(pub [u8; 32]);

impl SessionId {
    pub fn of(session_key: &str) -> Self {
        Self(Sha256::digest(session_key.as_bytes()).into())
    }

    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// A session on one provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PinKey {
    pub session: SessionId,
    pub provider: &'static str,
}

/// Where a session is pinned, and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub connection_id: Arc<str>,
    pub created_at: i64,
    pub last_used_at: i64,
    pub expires_at: i64,
}

impl Pin {
    /// Whether it still holds at `now` under `ttl_ms` (the stored expiry,
    /// or the last use plus a TTL shortened since).
    fn holds(&self, now: i64, ttl_ms: u64) -> bool {
        let ttl = i64::try_from(ttl_ms).unwrap_or(i64::MAX);
        now < self.expires_at.min(self.last_used_at.saturating_add(ttl))
    }
}

struct Entry {
    pin: Pin,
    /// When the pin was last sent to the writer.
    stored_at: i64,
}

impl PinKey {
    /// The key a row is stored under: the session hash's hex and the
    /// provider (`None` for an unknown provider or a malformed hash).
    pub fn stored(session_hex: &str, provider: &str) -> Option<Self> {
        let session = <[u8; 32]>::try_from(hex::decode(session_hex).ok()?).ok()?;
        Some(Self { session: SessionId(session), provider: catalog::find(provider)?.id })
    }
}

/// A stored row's key and pin.
pub fn stored_pin(row: session_affinity::Model) -> Option<(PinKey, Pin)> {
    let key = PinKey::stored(&row.key, &row.provider)?;
    let pin = Pin {
        connection_id: row.connection_id.into(),
        created_at: row.created_at,
        last_used_at: row.last_used_at,
        expires_at: row.expires_at,
    };
    Some((key, pin))
}

pub struct Affinity {
    clock: Arc<dyn Clock>,
    pins: DashMap<PinKey, Entry>,
    changes: Arc<PinChanges>,
}

impl Affinity {
    pub fn new(clock: Arc<dyn Clock>, changes: Arc<PinChanges>) -> Self {
        Self { clock, pins: DashMap::new(), changes }
    }

    fn store(&self, key: PinKey, pin: Option<Pin>) {
        self.changes.put(key, pin);
    }

    /// The connection `key` is pinned to; an expired pin is dropped.
    pub fn pinned(&self, key: &PinKey, ttl_ms: u64) -> Option<Arc<str>> {
        let now = self.clock.now_ms();
        let entry = self.pins.get(key)?;
        if entry.pin.holds(now, ttl_ms) {
            return Some(entry.pin.connection_id.clone());
        }
        drop(entry);
        if self.pins.remove_if(key, |_, e| !e.pin.holds(now, ttl_ms)).is_some() {
            self.store(*key, None);
        }
        None
    }

    /// `connection_id` served the session: its pin is made, moved there or
    /// touched, and lasts `ttl_ms` from now.
    pub fn served(&self, key: PinKey, connection_id: &str, ttl_ms: u64) {
        let now = self.clock.now_ms();
        let expires_at = now.saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX));
        if let Some(mut e) = self.pins.get_mut(&key)
            && *e.pin.connection_id == *connection_id
        {
            e.pin.last_used_at = now;
            e.pin.expires_at = expires_at;
            if now - e.stored_at >= TOUCH_STORE_INTERVAL_MS {
                e.stored_at = now;
                let pin = e.pin.clone();
                drop(e);
                self.store(key, Some(pin));
            }
            return;
        }
        if self.pins.len() >= MAX_PINS && !self.pins.contains_key(&key) {
            self.make_room(now, ttl_ms);
        }
        let pin = Pin { connection_id: connection_id.into(), created_at: now, last_used_at: now, expires_at };
        self.pins.insert(key, Entry { pin: pin.clone(), stored_at: now });
        self.store(key, Some(pin));
    }

    /// A 429 or a terminal error on `connection_id`: a pin of `key` there
    /// is evicted (the next request takes the normal order).
    pub fn evict(&self, key: &PinKey, connection_id: &str) {
        if self.pins.remove_if(key, |_, e| *e.pin.connection_id == *connection_id).is_some() {
            self.store(*key, None);
        }
    }

    /// A pin another instance removed (the row is gone): dropped here
    /// without being stored again.
    pub fn forget(&self, key: &PinKey) {
        self.pins.remove(key);
    }

    /// A stored pin, at start or as another instance stored it.
    pub fn restore(&self, key: PinKey, pin: Pin) {
        let stored_at = pin.last_used_at;
        self.pins.insert(key, Entry { pin, stored_at });
    }

    /// Unexpired pins per connection.
    pub fn pinned_per_connection(&self, ttl_ms: u64) -> HashMap<Arc<str>, usize> {
        let now = self.clock.now_ms();
        let mut counts = HashMap::new();
        for e in self.pins.iter().filter(|e| e.pin.holds(now, ttl_ms)) {
            *counts.entry(e.pin.connection_id.clone()).or_default() += 1;
        }
        counts
    }

    pub fn len(&self) -> usize {
        self.pins.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    /// Drops expired pins, then — still full — the least recently used tenth.
    fn make_room(&self, now: i64, ttl_ms: u64) {
        let mut dropped = Vec::new();
        self.pins.retain(|k, e| {
            let keep = e.pin.holds(now, ttl_ms);
            if !keep {
                dropped.push(*k);
            }
            keep
        });
        if self.pins.len() >= MAX_PINS {
            let mut used: Vec<(i64, PinKey)> = self.pins.iter().map(|e| (e.pin.last_used_at, *e.key())).collect();
            let n = used.len() / 10;
            used.select_nth_unstable_by_key(n, |(at, _)| *at);
            for (_, k) in &used[..=n] {
                self.pins.remove(k);
                dropped.push(*k);
            }
        }
        for k in dropped {
            self.store(k, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resilience::clock::ManualClock;

    const TTL: u64 = 60_000;

    fn key(s: &str) -> PinKey {
        PinKey { session: SessionId::of(s), provider: "openai" }
    }

    fn table() -> (Arc<ManualClock>, Affinity, Arc<PinChanges>) {
        let clock = Arc::new(ManualClock::new(1_000_000));
        let changes = PinChanges::detached();
        (clock.clone(), Affinity::new(clock, changes.clone()), changes)
    }

    /// What is pending for the store since the last look: each changed
    /// pin's connection (`None`: dropped), by session.
    fn stored(changes: &PinChanges) -> Vec<(PinKey, Option<String>)> {
        let mut taken: Vec<_> =
            changes.take().into_iter().map(|(k, pin)| (k, pin.map(|p| p.connection_id.to_string()))).collect();
        taken.sort_by_key(|(k, _)| k.session.0);
        taken
    }

    #[test]
    fn a_pin_moves_to_the_connection_that_served_and_lasts_its_ttl_from_last_use() {
        let (clock, pins, changes) = table();
        assert_eq!(pins.pinned(&key("s"), TTL), None);
        pins.served(key("s"), "c2", TTL);
        assert_eq!(stored(&changes), [(key("s"), Some("c2".into()))], "made");
        assert_eq!(pins.pinned(&key("s"), TTL).as_deref(), Some("c2"));
        assert_eq!(pins.pinned(&key("other"), TTL), None, "another session is not pinned");
        clock.advance(50_000);
        pins.served(key("s"), "c2", TTL);
        assert_eq!(stored(&changes), [], "a touch 50 s later is not stored");
        clock.advance(50_000);
        assert_eq!(pins.pinned(&key("s"), TTL).as_deref(), Some("c2"), "a touch extends the pin");
        pins.served(key("s"), "c1", TTL);
        assert_eq!(stored(&changes), [(key("s"), Some("c1".into()))], "moved");
        assert_eq!(pins.pinned(&key("s"), TTL).as_deref(), Some("c1"), "moved");
        clock.advance(60_000);
        assert_eq!(pins.pinned(&key("s"), TTL), None, "expired");
        assert!(pins.is_empty(), "an expired pin is purged when read");
        assert_eq!(stored(&changes), [(key("s"), None)], "purged");
    }

    #[test]
    fn a_shorter_ttl_applies_to_existing_pins_and_touches_are_stored_once_a_minute() {
        let (clock, pins, changes) = table();
        pins.served(key("s"), "c1", 3_600_000);
        clock.advance(120_000);
        assert_eq!(pins.pinned(&key("s"), 3_600_000).as_deref(), Some("c1"));
        assert_eq!(pins.pinned(&key("s"), 60_000), None, "the TTL saved since is shorter");
        assert_eq!(stored(&changes), [(key("s"), None)], "made s, then purged s");
        pins.served(key("t"), "c1", TTL);
        assert_eq!(stored(&changes).len(), 1, "made t");
        let mut touches = 0;
        for _ in 0..3 {
            clock.advance(30_000);
            pins.served(key("t"), "c1", TTL);
            touches += stored(&changes).len();
        }
        assert_eq!(touches, 1, "one touch of t stored (60 s after it was made)");
    }

    #[test]
    fn eviction_only_removes_a_pin_on_that_connection() {
        let (_, pins, changes) = table();
        pins.served(key("s"), "c1", TTL);
        assert_eq!(stored(&changes), [(key("s"), Some("c1".into()))]);
        pins.evict(&key("s"), "c2");
        assert_eq!(stored(&changes), [], "no pin there: nothing changed");
        assert_eq!(pins.pinned(&key("s"), TTL).as_deref(), Some("c1"));
        pins.evict(&key("s"), "c1");
        assert_eq!(pins.pinned(&key("s"), TTL), None);
        assert_eq!(stored(&changes), [(key("s"), None)]);
    }

    #[test]
    fn the_table_is_bounded_dropping_expired_then_least_recently_used_pins() {
        let (clock, pins, _rx) = table();
        for i in 0..MAX_PINS {
            pins.served(key(&i.to_string()), "c1", TTL);
            clock.advance(1);
        }
        assert_eq!(pins.len(), MAX_PINS);
        pins.served(key("newest"), "c2", TTL);
        assert!(pins.len() < MAX_PINS, "{}", pins.len());
        assert_eq!(pins.pinned(&key("newest"), TTL).as_deref(), Some("c2"));
        assert_eq!(pins.pinned(&key("0"), TTL), None, "the least recently used went first");
        assert_eq!(pins.pinned(&key(&(MAX_PINS - 1).to_string()), TTL).as_deref(), Some("c1"));
    }

    #[test]
    fn counts_unexpired_pins_per_connection() {
        let (clock, pins, _rx) = table();
        pins.served(key("a"), "c1", TTL);
        clock.advance(30_000);
        pins.served(key("b"), "c1", TTL);
        pins.served(key("c"), "c2", TTL);
        clock.advance(40_000);
        let counts = pins.pinned_per_connection(TTL);
        assert_eq!(counts.get("c1"), Some(&1));
        assert_eq!(counts.get("c2"), Some(&1));
    }
}
