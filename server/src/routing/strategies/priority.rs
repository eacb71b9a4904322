//! `priority`: the targets in the order the combo lists them. Use it for a
//! main provider with ordered fallbacks: later targets see traffic only
//! while earlier ones fail or are excluded.

/// The declared order.
pub fn order(n: usize) -> Vec<usize> {
    (0..n).collect()
}
