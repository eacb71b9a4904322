//! Values kept a short while for one later request, shared by every
//! worker (each worker thread builds its own router, and the request that
//! takes a value may arrive on another connection, so on another worker):
//! a new API key waiting to be shown after a plain form post, a sign-in
//! waiting for its code.

use parking_lot::Mutex;
use std::collections::HashMap;

/// Values by id, each taken at most once and only within `TTL_MS` of
/// being put.
pub struct Stash<T, const TTL_MS: i64>(Mutex<HashMap<String, (T, i64)>>);

impl<T, const TTL_MS: i64> Default for Stash<T, TTL_MS> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<T, const TTL_MS: i64> Stash<T, TTL_MS> {
    /// Keeps `value` under `id`; forgets values older than the TTL.
    pub fn put(&self, id: String, value: T, now: i64) {
        let mut stash = self.0.lock();
        stash.retain(|_, (_, at)| now - *at < TTL_MS);
        stash.insert(id, (value, now));
    }

    /// What `f` reads of the value under `id`, leaving it in place.
    pub fn peek<R>(&self, id: &str, now: i64, f: impl FnOnce(&T) -> R) -> Option<R> {
        let stash = self.0.lock();
        stash.get(id).filter(|(_, at)| now - *at < TTL_MS).map(|(value, _)| f(value))
    }

    /// The value under `id`, once, unless it waited too long.
    pub fn take(&self, id: &str, now: i64) -> Option<T> {
        let (value, at) = self.0.lock().remove(id)?;
        (now - at < TTL_MS).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_taken_once_and_only_within_its_ttl() {
        let stash = Stash::<&str, 100>::default();
        stash.put("a".into(), "first", 0);
        stash.put("b".into(), "second", 0);
        assert_eq!(stash.peek("a", 1, |v| v.len()), Some(5), "a peek leaves it");
        assert_eq!(stash.take("a", 1), Some("first"));
        assert!(stash.take("a", 2).is_none(), "taken once");
        assert!(stash.take("b", 100).is_none(), "too old");
    }
}
