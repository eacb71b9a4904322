//! Exclusive session leases (SPEC §R2.3) as the request path sees them: an
//! owner (known by the SHA-256 of its `vlo_` token) holds one connection
//! under a generation; inference requests that present the owner must
//! present that exact generation through the key that took the lease (the
//! fence), and every other request passes the leased connection over.
//!
//! The table is memory, so the fence costs a hash-map read; the lifecycle
//! (`services::leases`) writes each change through to `session_leases`,
//! whose unique columns are the arbiter between instances. Nothing times
//! leases out in the background: an expired lease is simply not seen (like
//! the breaker, time is read when asked), and its row is cleared when its
//! connection or owner is next needed.

use dashmap::DashMap;
use sha2::{Digest, Sha256};
use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use crate::{db::entities::session_lease, resilience::clock::Clock};

/// The owner token's prefix; 43 base64url characters follow.
pub const OWNER_PREFIX: &str = "vlo_";
const OWNER_BODY_LEN: usize = 43;

/// The SHA-256 of an owner token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner(pub [u8; 32]);

impl Owner {
    /// The owner a `X-OmniRoute-Lease-Owner` value names, if well formed.
    pub fn parse(token: &str) -> Option<Self> {
        let body = token.strip_prefix(OWNER_PREFIX)?;
        let base64url = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        (body.len() == OWNER_BODY_LEN && body.bytes().all(base64url))
            .then(|| Self(Sha256::digest(token.as_bytes()).into()))
    }

    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// An active lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub id: String,
    pub owner: Owner,
    /// The API key that took it.
    pub key_id: String,
    pub provider: &'static str,
    pub connection_id: Arc<str>,
    pub generation: u64,
    pub expires_at: i64,
}

impl Lease {
    /// Its `session_leases` row as taken at `now`: active, holding the
    /// owner's and the connection's unique slots.
    pub fn active_row(&self, now: i64) -> session_lease::Model {
        let owner = self.owner.hex();
        session_lease::Model {
            id: self.id.clone(),
            owner_hash: owner.clone(),
            key_id: self.key_id.clone(),
            provider: self.provider.to_owned(),
            connection_id: self.connection_id.to_string(),
            generation: i64::try_from(self.generation).unwrap_or(i64::MAX),
            state: "ACTIVE".into(),
            active_owner: Some(owner),
            active_connection: Some(self.connection_id.to_string()),
            created_at: now,
            expires_at: self.expires_at,
            released_at: None,
            release_reason: None,
        }
    }
}

/// Why a request's lease context does not pass the fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stale {
    /// No active lease for the owner (never taken, released, expired).
    NoLease,
    WrongGeneration,
    /// Presented through another API key than the one that took it.
    ForeignKey,
}

impl Stale {
    pub fn message(self) -> &'static str {
        match self {
            Self::NoLease => "the lease is not active (released, expired or never acquired)",
            Self::WrongGeneration => "the lease generation is not the current one",
            Self::ForeignKey => "the lease belongs to another API key",
        }
    }
}

pub struct Leases {
    clock: Arc<dyn Clock>,
    by_owner: DashMap<Owner, Lease>,
    /// Who holds each leased connection, until when (the per-candidate check).
    by_connection: DashMap<Arc<str>, (Owner, i64)>,
    /// Leases held, expired ones included until replaced: zero lets every
    /// request skip the per-connection check.
    held: AtomicUsize,
    /// One lifecycle change at a time in this process (the database
    /// arbitrates between processes).
    pub lifecycle: tokio::sync::Mutex<()>,
}

impl Leases {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            by_owner: DashMap::new(),
            by_connection: DashMap::new(),
            held: AtomicUsize::new(0),
            lifecycle: Default::default(),
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The owner's unexpired lease.
    pub fn of(&self, owner: &Owner) -> Option<Lease> {
        let now = self.now();
        self.by_owner.get(owner).filter(|l| l.expires_at > now).map(|l| l.clone())
    }

    /// The fence: the owner's active lease, if `generation` is its current
    /// one and `key_id` took it.
    pub fn fence(&self, owner: &Owner, generation: u64, key_id: &str) -> Result<Lease, Stale> {
        let lease = self.of(owner).ok_or(Stale::NoLease)?;
        if lease.key_id != key_id {
            Err(Stale::ForeignKey)
        } else if lease.generation != generation {
            Err(Stale::WrongGeneration)
        } else {
            Ok(lease)
        }
    }

    /// Whether an unexpired lease of another owner than `me` holds the connection.
    pub fn held_by_other(&self, connection_id: &str, me: Option<&Owner>) -> bool {
        if self.held.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let Some(holder) = self.by_connection.get(connection_id) else { return false };
        let (owner, expires_at) = *holder;
        expires_at > self.now() && Some(&owner) != me
    }

    /// The unexpired leases, for the dashboard and capacity answers.
    pub fn active(&self) -> Vec<Lease> {
        let now = self.now();
        self.by_owner.iter().filter(|l| l.expires_at > now).map(|l| l.clone()).collect()
    }

    /// A lease taken, renewed or restored.
    pub fn put(&self, lease: Lease) {
        self.by_connection.insert(lease.connection_id.clone(), (lease.owner, lease.expires_at));
        match self.by_owner.insert(lease.owner, lease.clone()) {
            None => {
                self.held.fetch_add(1, Ordering::Relaxed);
            }
            Some(old) if old.connection_id != lease.connection_id => {
                self.by_connection.remove_if(&old.connection_id, |_, (o, _)| *o == lease.owner);
            }
            Some(_) => {}
        }
    }

    /// The owner's lease is gone (released, or replaced after expiry).
    pub fn remove(&self, owner: &Owner) {
        if let Some((_, old)) = self.by_owner.remove(owner) {
            self.by_connection.remove_if(&old.connection_id, |_, (o, _)| o == owner);
            self.held.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Makes `stored` the leases held (what the database holds after
    /// another instance changed one).
    pub fn replace_all(&self, stored: Vec<Lease>) {
        let gone: Vec<Owner> =
            self.by_owner.iter().map(|l| l.owner).filter(|o| !stored.iter().any(|s| s.owner == *o)).collect();
        for owner in gone {
            self.remove(&owner);
        }
        for lease in stored {
            self.put(lease);
        }
    }

    /// Leases of other owners on `connection_id` that have expired: their
    /// slot may be taken.
    pub fn drop_expired_on(&self, connection_id: &str) {
        let now = self.now();
        let expired: Vec<Owner> = self
            .by_owner
            .iter()
            .filter(|l| *l.connection_id == *connection_id && l.expires_at <= now)
            .map(|l| l.owner)
            .collect();
        for owner in expired {
            self.remove(&owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resilience::clock::ManualClock;

    fn owner(c: char) -> Owner {
        Owner::parse(&format!("vlo_{}", c.to_string().repeat(43))).unwrap()
    }

    fn lease(o: Owner, conn: &str, generation: u64, expires_at: i64) -> Lease {
        Lease {
            id: format!("l-{conn}"),
            owner: o,
            key_id: "k1".into(),
            provider: "openai",
            connection_id: conn.into(),
            generation,
            expires_at,
        }
    }

    #[test]
    fn owner_tokens_are_vlo_and_43_base64url_characters() {
        assert!(Owner::parse(&format!("vlo_{}", "aZ09-_".repeat(7) + "x")).is_some());
        for bad in ["", "vlo_", "vlo_short", &format!("vlx_{}", "a".repeat(43)), &format!("vlo_{}", "a".repeat(44))] {
            assert!(Owner::parse(bad).is_none(), "{bad}");
        }
        assert!(Owner::parse(&format!("vlo_{}=", "a".repeat(42))).is_none(), "padding is not base64url");
        assert_ne!(owner('a'), owner('b'));
        assert_eq!(owner('a').hex().len(), 64);
    }

    #[test]
    fn the_fence_needs_the_current_generation_through_the_same_key_until_expiry() {
        let clock = Arc::new(ManualClock::new(1_000));
        let leases = Leases::new(clock.clone());
        assert_eq!(leases.fence(&owner('a'), 1, "k1"), Err(Stale::NoLease));
        leases.put(lease(owner('a'), "c1", 3, 61_000));
        assert_eq!(leases.fence(&owner('a'), 3, "k1").unwrap().connection_id.as_ref(), "c1");
        assert_eq!(leases.fence(&owner('a'), 2, "k1"), Err(Stale::WrongGeneration));
        assert_eq!(leases.fence(&owner('a'), 3, "k2"), Err(Stale::ForeignKey));
        clock.advance(60_000);
        assert_eq!(leases.fence(&owner('a'), 3, "k1"), Err(Stale::NoLease), "expired: no timer needed");
    }

    #[test]
    fn a_leased_connection_is_held_against_other_owners_only_while_unexpired() {
        let clock = Arc::new(ManualClock::new(1_000));
        let leases = Leases::new(clock.clone());
        assert!(!leases.held_by_other("c1", None));
        leases.put(lease(owner('a'), "c1", 1, 11_000));
        assert!(leases.held_by_other("c1", None));
        assert!(leases.held_by_other("c1", Some(&owner('b'))));
        assert!(!leases.held_by_other("c1", Some(&owner('a'))), "not against its owner");
        assert!(!leases.held_by_other("c2", None));
        clock.advance(10_000);
        assert!(!leases.held_by_other("c1", None), "expired");
        assert!(leases.active().is_empty());
        leases.drop_expired_on("c1");
        assert_eq!(leases.held.load(Ordering::Relaxed), 0);
        leases.put(lease(owner('b'), "c1", 1, 31_000));
        leases.remove(&owner('b'));
        assert_eq!(leases.held.load(Ordering::Relaxed), 0);
    }
}
