//! The per-target gates (SPEC §R8), one sequence for a single model and
//! every combo target alike: a usable connection must exist (active, in
//! the key's allow-list, the pinned one if pinned), in the connection
//! order of `fallbackStrategy`, subscription accounts with fewer other
//! live sessions ahead (§R2.3), the one the request's session is pinned
//! to first (§R2.2); a combo target must
//! pass the optional window gate (§R1.1) and not be known to refuse the
//! request's count of tools (§R8); the provider breaker must admit
//! the request (§R1; a HALF_OPEN breaker hands out a probe slot). The
//! connection-level gates (cooldown, terminal state, model lockout) are
//! asked per connection by the attempt loop.

use app::types::Protocol;

use std::sync::Arc;

use super::{
    call::{Caller, TargetRun},
    permits::Requester,
};
use crate::{
    resilience::engine::{self, Exclusion},
    routing::{
        affinity::{PinKey, SessionId},
        registry::LiveConnection,
        resolve::Target,
        view::RoutingView,
    },
    state::AppState,
    upstream::catalog::Provider,
};

/// Why a target was skipped without an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// No active connection it may use (none configured, a pinned
    /// connection that is gone), or an unknown provider.
    NoConnection,
    /// The provider has active connections, but the API key's allowed
    /// connections name none of them.
    NotAllowed,
    /// Every connection is terminal (banned, expired, out of credits).
    Inactive,
    CircuitOpen,
    ProviderCooldown,
    ConnectionCooldown,
    ModelLockout,
    /// The request has at least as many tools as the target refused before
    /// (`resilience::tool_limits`); combo targets only.
    ToolLimit,
}

impl SkipReason {
    /// The reason as the diagnostics body names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoConnection | Self::Inactive => "unavailable",
            Self::NotAllowed => "not_allowed",
            Self::CircuitOpen => "circuit_open",
            Self::ProviderCooldown => "provider_cooldown",
            Self::ConnectionCooldown => "connection_cooldown",
            Self::ModelLockout => "model_lockout",
            Self::ToolLimit => "tool_limit",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skip {
    pub reason: SkipReason,
    /// `None` when no timer will end it.
    pub retry_after_ms: Option<u64>,
}

impl Skip {
    pub fn new(reason: SkipReason, retry_after_ms: Option<u64>) -> Self {
        Self { reason, retry_after_ms }
    }

    /// The skip of a target whose every connection was excluded.
    pub fn from_exclusions(excluded: &[Exclusion]) -> Self {
        let soonest = |f: fn(&Exclusion) -> Option<u64>| excluded.iter().filter_map(f).min();
        let locked =
            soonest(|e| if let Exclusion::ModelLocked { remaining_ms, .. } = e { Some(*remaining_ms) } else { None });
        let cooling =
            soonest(|e| if let Exclusion::Cooling { remaining_ms, .. } = e { Some(*remaining_ms) } else { None });
        match (cooling, locked) {
            (Some(c), l) => Self::new(SkipReason::ConnectionCooldown, Some(l.map_or(c, |l| l.min(c)))),
            (None, Some(l)) => Self::new(SkipReason::ModelLockout, Some(l)),
            (None, None) => Self::new(SkipReason::Inactive, None),
        }
    }
}

/// Passes a target (pinned to one connection or not) through the target
/// gates: its connections to try and its breaker admission, or why it is
/// skipped. The window gate applies to combo targets only.
pub fn open<'s>(
    state: &AppState,
    view: &RoutingView<'s>,
    target: &Target,
    pinned: Option<&str>,
    caller: &Caller<'_>,
    combo: bool,
) -> Result<TargetRun<'s>, Skip> {
    let provider = target.provider;
    let settings = view.settings();
    if combo && exceeds_tool_limit(view, target, caller) {
        return Err(Skip::new(SkipReason::ToolLimit, None));
    }
    let mut candidates = candidates(view, provider, caller, pinned);
    if candidates.is_empty() {
        let reason =
            if key_allows_none(view, provider, caller) { SkipReason::NotAllowed } else { SkipReason::NoConnection };
        return Err(Skip::new(reason, None));
    }
    state.routing.connection_order.order(settings.fallback_strategy, provider.id, &mut candidates);
    let session = spread_sessions(caller, &mut candidates);
    let pin = session_first(state, caller, provider, settings.session_affinity_ttl_ms, &mut candidates);
    if combo {
        let held = state.engine.target_cooldown_ms(provider.id, provider.category, pinned, &settings.provider_cooldown);
        if held > 0 {
            return Err(Skip::new(SkipReason::ProviderCooldown, Some(held)));
        }
    }
    let cfg = engine::breaker_config(settings, provider.category);
    match state.engine.admit(provider.id, &cfg) {
        Ok(probe) => {
            let requester = if combo {
                Requester::Combo { quota_share: settings.quota_share_concurrency_limit.enabled }
            } else {
                Requester::Direct
            };
            Ok(TargetRun { candidates, requester, cfg, probe, pin, session })
        }
        Err(ms) => Err(Skip::new(SkipReason::CircuitOpen, Some(ms))),
    }
}

/// Whether the request has as many tools as `target` refused before.
pub fn exceeds_tool_limit(view: &RoutingView<'_>, target: &Target, caller: &Caller<'_>) -> bool {
    caller.request.is_some_and(|r| view.refuses_tools(target.provider.id, &target.model, r.tool_count()))
}

/// OAuth session occupancy (SPEC §R2.3): when subscription accounts may
/// serve the request, those with the fewest other client sessions in
/// flight go first (ties keep the connection order), so concurrent agent
/// sessions spread over the accounts instead of sharing the first one's
/// limits. A session's pin still goes first after this. Returns the
/// request's session, for the attempt to count it live on its account.
fn spread_sessions(caller: &Caller<'_>, candidates: &mut [&Arc<LiveConnection>]) -> Option<SessionId> {
    if !candidates.iter().any(|c| c.oauth) {
        return None;
    }
    let session = caller.request?.session()?;
    if candidates.len() > 1 {
        candidates.sort_by_cached_key(|c| c.foreign_sessions(session));
    }
    Some(session)
}

/// Session affinity (SPEC §R2.2): with a choice of connections and a
/// session, the connection the session is pinned to goes first. Returns
/// the session's pin key, for the attempt to pin or unpin.
fn session_first(
    state: &AppState,
    caller: &Caller<'_>,
    provider: &'static Provider,
    ttl_ms: u64,
    candidates: &mut [&Arc<LiveConnection>],
) -> Option<PinKey> {
    if ttl_ms == 0 || candidates.len() < 2 {
        return None;
    }
    let key = PinKey { session: caller.request?.session()?, provider: provider.id };
    if let Some(pinned) = state.routing.affinity.pinned(&key, ttl_ms)
        && let Some(i) = candidates.iter().position(|c| *c.id == *pinned)
    {
        candidates[..=i].rotate_right(1);
    }
    Some(key)
}

/// The active connections of `provider` this request may use (the key's
/// allowed connections, a combo target's pinned connection, the leased
/// one when the request holds a lease of this provider and none leased by
/// another session otherwise: the routing view's answer; for a stream's
/// continuation, those of a provider that continues an assistant prefix
/// but the one that failed), in routing order.
fn candidates<'s>(
    view: &RoutingView<'s>,
    provider: &'static Provider,
    caller: &Caller<'_>,
    pinned: Option<&str>,
) -> Vec<&'s Arc<LiveConnection>> {
    if caller.continuing.is_some() && !continues_a_prefix(provider.protocol) {
        return Vec::new();
    }
    let asker = caller.asker();
    view.addressable(&asker, provider.id, pinned)
        .filter(|c| caller.continuing.is_none_or(|failed| failed != c.id))
        .collect()
}

/// Whether the provider has active connections and the request's API key
/// may use none of them (its allowed connections).
fn key_allows_none(view: &RoutingView<'_>, provider: &Provider, caller: &Caller<'_>) -> bool {
    let Some(key) = caller.asker().key else { return false };
    let active = view.snapshot.candidates(provider.id);
    !active.is_empty() && active.iter().all(|c| !key.may_use(&c.id))
}

/// Whether an upstream of `protocol` continues the assistant turn a
/// request ends with (rather than answering anew): Anthropic's prefill.
pub fn continues_a_prefix(protocol: Protocol) -> bool {
    protocol == Protocol::Anthropic
}
