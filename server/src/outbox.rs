//! Where a producer of live state leaves its changes for the store
//! (`store/`), without waiting and without knowing who stores them.
//!
//! An outbox keeps only the newest value per key: a breaker that moves
//! ten times before the writer wakes is stored once, as it is now. So it
//! is bounded by the number of keys (breakers, connections, pins, keys),
//! never by the rate of changes, and it never drops one: what the writer
//! takes is always the latest state of every key that changed. Putting a
//! change takes the outbox's lock for one map insert and wakes the writer
//! (a lock-free flag while the writer is already awake).

use parking_lot::Mutex;
use std::{collections::HashMap, hash::Hash, sync::Arc};
use tokio::sync::Notify;

/// The newest pending value per key of one family of changes.
pub struct Outbox<K, V> {
    pending: Mutex<HashMap<K, V>>,
    wake: Arc<Notify>,
}

impl<K: Eq + Hash, V> Outbox<K, V> {
    /// An outbox that wakes `wake` (the writer's) on every change.
    pub fn new(wake: Arc<Notify>) -> Self {
        Self { pending: Mutex::new(HashMap::new()), wake }
    }

    /// An outbox nobody drains (tests of a producer alone read it with
    /// [`Outbox::take`]).
    pub fn detached() -> Arc<Self> {
        Arc::new(Self::new(Arc::new(Notify::new())))
    }

    /// Records `value` as the newest state of `key`, replacing an older
    /// one not yet taken.
    pub fn put(&self, key: K, value: V) {
        self.pending.lock().insert(key, value);
        self.wake.notify_one();
    }

    /// Everything pending, leaving the outbox empty.
    pub fn take(&self) -> HashMap<K, V> {
        std::mem::take(&mut *self.pending.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_value_per_key_is_kept_and_taken_once() {
        let outbox = Outbox::detached();
        outbox.put("a", 1);
        outbox.put("b", 2);
        outbox.put("a", 3);
        let mut taken: Vec<_> = outbox.take().into_iter().collect();
        taken.sort();
        assert_eq!(taken, [("a", 3), ("b", 2)]);
        assert!(outbox.take().is_empty());
    }

    #[tokio::test]
    async fn a_put_wakes_the_writer_even_before_it_waits() {
        let wake = Arc::new(Notify::new());
        let outbox = Outbox::new(wake.clone());
        outbox.put(1, ());
        // The permit is kept: a writer that starts waiting later is woken.
        tokio::time::timeout(std::time::Duration::from_secs(5), wake.notified()).await.unwrap();
    }
}
