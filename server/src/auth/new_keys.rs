//! New API keys waiting to be shown once after a plain form post.

use app::types::CreatedApiKey;

impl super::stash::Stashed for CreatedApiKey {
    const KIND: &'static str = "new-key";
    /// How long a new key waits to be shown after a plain form post.
    const TTL_MS: i64 = 5 * 60 * 1000;
}
