//! New API keys waiting to be shown once after a plain form post. The
//! stash is shared by every worker: each worker thread builds its own
//! router and dashboard backend, and the post and the page that shows the
//! key may arrive on different connections, so on different workers.

use app::types::CreatedApiKey;
use parking_lot::Mutex;
use std::collections::HashMap;

/// How long a new key waits to be shown after a plain form post.
const STASH_TTL_MS: i64 = 5 * 60 * 1000;

/// Key id → (key, stashed at, epoch ms).
#[derive(Default)]
pub struct NewKeyStash(Mutex<HashMap<String, (CreatedApiKey, i64)>>);

impl NewKeyStash {
    /// Keeps `created` to be shown once; forgets keys older than the TTL.
    pub fn stash(&self, created: CreatedApiKey, now: i64) {
        let mut stash = self.0.lock();
        stash.retain(|_, (_, at)| now - *at < STASH_TTL_MS);
        stash.insert(created.id.clone(), (created, now));
    }

    /// The key stashed under `id`, once, unless it waited too long.
    pub fn take(&self, id: &str, now: i64) -> Option<CreatedApiKey> {
        let (created, at) = self.0.lock().remove(id)?;
        (now - at < STASH_TTL_MS).then_some(created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> CreatedApiKey {
        CreatedApiKey { id: id.into(), key: format!("sk-{id}") }
    }

    #[test]
    fn a_key_is_taken_once_and_only_within_its_ttl() {
        let stash = NewKeyStash::default();
        stash.stash(key("a"), 0);
        stash.stash(key("b"), 0);
        assert_eq!(stash.take("a", 1).map(|k| k.id), Some("a".into()));
        assert!(stash.take("a", 2).is_none(), "shown once");
        assert!(stash.take("b", STASH_TTL_MS).is_none(), "too old");
    }
}
