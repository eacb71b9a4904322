//! Context handoffs of `context-relay` combos (reference strategies §2.4):
//! a summary of a conversation, written while the account serving it
//! neared its quota, for the account that takes the conversation over.
//!
//! Per (session, combo) at most one handoff exists or is being written:
//! `claim` reserves the slot for the writer, `store` fills it, `abandon`
//! frees it when writing failed. A handoff lapses when the quota window
//! that prompted it resets (the old account is fine again). In memory and
//! bounded: a restart forgets them, and once [`MAX_HANDOFFS`] are held new
//! ones are not written until some lapse.

use dashmap::DashMap;
use std::sync::Arc;

use super::affinity::SessionId;

/// Most handoffs (and writers) held at once.
pub const MAX_HANDOFFS: usize = 10_000;
/// How long a writer may hold its slot before another may claim it.
const WRITER_TIMEOUT_MS: i64 = 5 * 60_000;

/// A written summary and the account whose conversation it summarises.
#[derive(Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The connection that served the conversation until now: it needs no
    /// handoff.
    pub from_connection: String,
    /// The system note for the next account (`<context_handoff>…`).
    pub note: String,
    pub expires_at_ms: i64,
}

#[derive(Debug)]
enum Slot {
    Writing { since_ms: i64 },
    Ready(Arc<Handoff>),
}

impl Slot {
    fn lapsed(&self, now_ms: i64) -> bool {
        match self {
            Self::Writing { since_ms } => now_ms - since_ms >= WRITER_TIMEOUT_MS,
            Self::Ready(h) => h.expires_at_ms <= now_ms,
        }
    }
}

type Key = (SessionId, String);

#[derive(Default)]
pub struct Handoffs {
    slots: DashMap<Key, Slot>,
}

impl Handoffs {
    /// The handoff ready for `session` in `combo`, if one has not lapsed.
    pub fn ready(&self, session: SessionId, combo: &str, now_ms: i64) -> Option<Arc<Handoff>> {
        if self.slots.is_empty() {
            return None;
        }
        let key = (session, combo.to_owned());
        let found = match self.slots.get(&key)?.value() {
            Slot::Ready(h) if h.expires_at_ms > now_ms => return Some(h.clone()),
            slot => slot.lapsed(now_ms),
        };
        if found {
            self.slots.remove_if(&key, |_, slot| slot.lapsed(now_ms));
        }
        None
    }

    /// Reserves the slot for a writer: `false` when a handoff is ready or
    /// being written, or too many are held.
    pub fn claim(&self, session: SessionId, combo: &str, now_ms: i64) -> bool {
        if self.slots.len() >= MAX_HANDOFFS {
            self.slots.retain(|_, slot| !slot.lapsed(now_ms));
            if self.slots.len() >= MAX_HANDOFFS {
                return false;
            }
        }
        let mut claimed = false;
        self.slots
            .entry((session, combo.to_owned()))
            .and_modify(|slot| {
                if slot.lapsed(now_ms) {
                    *slot = Slot::Writing { since_ms: now_ms };
                    claimed = true;
                }
            })
            .or_insert_with(|| {
                claimed = true;
                Slot::Writing { since_ms: now_ms }
            });
        claimed
    }

    pub fn store(&self, session: SessionId, combo: &str, handoff: Handoff) {
        self.slots.insert((session, combo.to_owned()), Slot::Ready(Arc::new(handoff)));
    }

    /// Frees a claimed slot whose summary could not be written.
    pub fn abandon(&self, session: SessionId, combo: &str) {
        self.slots.remove_if(&(session, combo.to_owned()), |_, slot| matches!(slot, Slot::Writing { .. }));
    }

    /// Forgets the handoffs of combos no longer defined.
    pub fn retain(&self, defined: impl Fn(&str) -> bool) {
        self.slots.retain(|(_, combo), _| defined(combo));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handoff(expires_at_ms: i64) -> Handoff {
        Handoff { from_connection: "c1".into(), note: "<context_handoff>…".into(), expires_at_ms }
    }

    #[test]
    fn one_writer_per_session_and_combo_and_a_handoff_lapses_at_its_expiry() {
        let (s, h) = (SessionId::of("a"), Handoffs::default());
        assert!(h.claim(s, "relay", 0));
        assert!(!h.claim(s, "relay", 1), "being written");
        assert!(h.claim(s, "other", 1), "another combo has its own");
        assert_eq!(h.ready(s, "relay", 1), None);
        h.store(s, "relay", handoff(100));
        assert!(!h.claim(s, "relay", 2), "a ready handoff is not rewritten");
        assert_eq!(h.ready(s, "relay", 99).unwrap().from_connection, "c1");
        assert_eq!(h.ready(s, "relay", 100), None, "lapsed at its expiry");
        assert!(h.claim(s, "relay", 100));
        h.abandon(s, "relay");
        assert!(h.claim(s, "relay", 101), "an abandoned slot is free again");
        assert!(!h.claim(s, "relay", 102));
        assert!(h.claim(s, "relay", 101 + WRITER_TIMEOUT_MS), "a writer that never finished is replaced");
    }

    #[test]
    fn the_store_is_bounded() {
        let h = Handoffs::default();
        for i in 0..MAX_HANDOFFS {
            assert!(h.claim(SessionId::of(&i.to_string()), "relay", 0));
        }
        assert!(!h.claim(SessionId::of("one more"), "relay", 1));
        assert!(h.claim(SessionId::of("one more"), "relay", WRITER_TIMEOUT_MS), "once the writers lapsed");
        h.retain(|combo| combo != "relay");
        assert!(h.ready(SessionId::of("one more"), "relay", 0).is_none());
    }
}
