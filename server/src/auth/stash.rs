//! What may be kept a few minutes for one later request (the database
//! keeps it: `services::stash`): a new API key waiting to be shown after a
//! plain form post, a sign-in waiting for its code.

use serde::{Serialize, de::DeserializeOwned};

/// A kind of value kept for one later request.
pub trait Stashed: Serialize + DeserializeOwned {
    /// Its name in the `stashes` table.
    const KIND: &'static str;
    /// How long it may wait to be taken.
    const TTL_MS: i64;
}
