//! `context-relay`: the targets as listed, like `priority`; what sets it
//! apart happens around the order — when the account serving a
//! conversation nears its quota, a summary of the conversation is written
//! for whichever account takes it over next (`proxy::handoff`). Use it
//! for long agent sessions on rate-limited subscription accounts, where a
//! conversation moving to a fresh account should not start cold.

pub fn order(n: usize) -> Vec<usize> {
    super::priority::order(n)
}
