//! Which connections may serve a request: the live connection registry
//! (memory, reloaded on every change), model addressing, the one view
//! that answers eligibility (`view`), the plan of targets (`plan`) and the
//! strategies that order it.

pub mod affinity;
pub mod aliases;
pub mod combo_state;
pub mod combos;
pub mod connection_order;
pub mod handoffs;
pub mod leases;
pub mod plan;
pub mod quota;
pub mod registry;
pub mod resolve;
pub mod strategies;
pub mod view;

use std::sync::Arc;

use crate::resilience::{
    clock::Clock,
    tool_limits::{ToolLimitChanges, ToolLimits},
};

/// The live state routing decisions read (besides the engine's health):
/// what may be addressed, who is pinned or leased where, and what the
/// strategies remember.
pub struct Routing {
    pub connections: registry::ConnectionRegistry,
    /// Combos by name (virtual models over several targets).
    pub combos: combos::ComboRegistry,
    pub aliases: aliases::AliasRegistry,
    /// Session affinity pins (SPEC §R2.2).
    pub affinity: affinity::Affinity,
    /// Exclusive session leases (SPEC §R2.3).
    pub leases: leases::Leases,
    /// The accounts' quotas as the upstreams' rate-limit headers report them.
    pub quotas: quota::Quotas,
    /// How many tools each provider's models refused (SPEC §R8).
    pub tool_limits: ToolLimits,
    /// What the combo strategies remember between requests.
    pub combo_states: combo_state::ComboStates,
    /// The conversation summaries of `context-relay` combos.
    pub handoffs: handoffs::Handoffs,
    /// The rotation of `fallbackStrategy` per provider.
    pub connection_order: connection_order::ConnectionOrder,
}

impl Routing {
    /// Empty registries (filled by their `reload`); pins go to `pins`,
    /// learnt tool limits to `tool_limits`.
    pub fn new(clock: Arc<dyn Clock>, pins: Arc<affinity::PinChanges>, tool_limits: Arc<ToolLimitChanges>) -> Self {
        Self {
            connections: Default::default(),
            combos: Default::default(),
            aliases: Default::default(),
            affinity: affinity::Affinity::new(clock.clone(), pins),
            leases: leases::Leases::new(clock),
            quotas: Default::default(),
            tool_limits: ToolLimits::new(tool_limits),
            combo_states: Default::default(),
            handoffs: Default::default(),
            connection_order: Default::default(),
        }
    }
}
