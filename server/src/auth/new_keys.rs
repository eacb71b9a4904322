//! New API keys waiting to be shown once after a plain form post.

use app::types::CreatedApiKey;

/// How long a new key waits to be shown after a plain form post.
const STASH_TTL_MS: i64 = 5 * 60 * 1000;

/// Key id → the new key.
pub type NewKeyStash = super::stash::Stash<CreatedApiKey, STASH_TTL_MS>;
