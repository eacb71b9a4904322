//! When a combo request waits for its targets' short, transient locks
//! (SPEC §R4, `comboCooldownWait`; the decision is
//! [`crate::resilience::combo_wait`]): what holds each target back, as
//! the routing view answers for the request's key and lease, and the
//! skips the trail recorded.

use super::{error::Trail, gates::SkipReason};
use crate::{
    resilience::combo_wait::{ComboWaits, Lapse},
    routing::{
        plan::Plan,
        view::{Asker, RoutingView},
    },
};

/// The wait before dispatching `plan` again after it ended in `trail`, if
/// the combo would fail for transient locks and the settings allow it.
pub fn after(
    waits: &mut ComboWaits,
    view: &RoutingView<'_>,
    asker: &Asker<'_>,
    plan: &Plan,
    trail: &Trail,
) -> Option<u64> {
    let s = &view.settings().combo_cooldown_wait;
    if !s.enabled {
        return None;
    }
    let last = trail.tried.last().and_then(|(_, failures)| failures.last());
    if !(trail.tried.is_empty() || last.and_then(|f| f.status) == Some(429)) {
        return None;
    }
    let hint_ms = last.and_then(|f| f.retry_after).map(|secs| secs.saturating_mul(1000));
    waits.next(s, &lapses(view, asker, plan, trail), hint_ms)
}

/// When a combo skipped every target before any attempt and some of its
/// connections are rate-limited for a short, transient reason (SPEC §R4):
/// the time until the first such lock ends, for the client's `429`.
pub fn rate_limited_ms(view: &RoutingView<'_>, asker: &Asker<'_>, plan: &Plan, trail: &Trail) -> Option<u64> {
    if !trail.tried.is_empty() {
        return None;
    }
    lapses(view, asker, plan, trail).iter().filter(|l| l.transient && l.connection).map(|l| l.remaining_ms).min()
}

/// What holds each target of `plan` back now: the cooldowns and model
/// locks of the connections the request may use (looked up afresh:
/// attempts just made may have cooled them), and the open breakers and
/// provider cooldowns it was skipped for.
fn lapses(view: &RoutingView<'_>, asker: &Asker<'_>, plan: &Plan, trail: &Trail) -> Vec<Lapse> {
    let mut lapses = Vec::new();
    for planned in &plan.targets {
        let Some(target) = &planned.target else { continue };
        lapses.extend(view.lapses(asker, target.provider.id, &target.model, planned.pinned.as_deref()));
    }
    let held = trail
        .skipped
        .iter()
        .filter(|s| matches!(s.skip.reason, SkipReason::CircuitOpen | SkipReason::ProviderCooldown));
    lapses.extend(
        held.filter_map(|s| Some(Lapse { remaining_ms: s.skip.retry_after_ms?, transient: true, connection: false })),
    );
    lapses
}
