//! One status truth (§U): what keeps a provider or a connection from
//! serving, computed here once from the live engine and read by Health's
//! summary, the Providers badge and the Cooldown Manager alike, so the
//! pages can never disagree.

use app::types::{
    ConnectionStatus, ConnectionView,
    monitoring::{ProviderConnections, ProviderExclusion},
};
use std::collections::{BTreeMap, HashMap};

use crate::{
    resilience::{breaker::BreakerState, engine::BreakerView, lockout::Lock},
    state::AppState,
    upstream::catalog,
};

/// The engine's provider- and model-level state at one instant.
pub struct Status {
    now: i64,
    breakers: HashMap<String, BreakerView>,
    locks: Vec<Lock>,
}

impl Status {
    pub fn of(state: &AppState) -> Self {
        let settings = state.resilience.current();
        let breakers = state.engine.breakers(&settings, catalog::category_of);
        Self {
            now: state.engine.now(),
            breakers: breakers.into_iter().map(|b| (b.provider.clone(), b)).collect(),
            locks: state.engine.lockouts(),
        }
    }

    pub fn breakers(&self) -> impl Iterator<Item = &BreakerView> {
        self.breakers.values()
    }

    /// The OPEN breaker of `provider`: how long until it probes again.
    fn open_for(&self, provider: &str) -> Option<u64> {
        self.breakers.get(provider).filter(|b| b.state == BreakerState::Open).map(|b| b.retry_after_ms)
    }

    /// Refines a connection's stored status with its provider's breaker
    /// and its model lockouts (terminal and disabled stay as they are).
    pub fn refine(&self, mut view: ConnectionView) -> ConnectionView {
        let cooling = view.rate_limited_until.map(|t| u64::try_from(t - self.now).unwrap_or(0)).filter(|ms| *ms > 0);
        let locked = self.locks.iter().filter(|l| l.connection_id == view.id).map(|l| l.until - self.now).min();
        let (status, remaining) = match view.status {
            ConnectionStatus::Terminal | ConnectionStatus::Disabled => (view.status, None),
            _ => match (self.open_for(&view.provider), cooling, locked) {
                (Some(ms), _, _) => (ConnectionStatus::BreakerOpen, Some(ms)),
                (None, Some(ms), _) => (ConnectionStatus::CoolingDown, Some(ms)),
                (None, None, Some(ms)) => (ConnectionStatus::ModelLocked, u64::try_from(ms).ok()),
                (None, None, None) => (ConnectionStatus::Active, None),
            },
        };
        view.status = status;
        view.status_remaining_ms = remaining;
        view
    }

    /// Providers held back as a whole: a breaker that is not CLOSED, and
    /// (when on) the §R1.1 window gate.
    pub fn provider_exclusions(&self, state: &AppState, providers: &[&str]) -> Vec<ProviderExclusion> {
        let settings = state.resilience.current();
        let mut out: Vec<ProviderExclusion> = self
            .breakers
            .values()
            .filter(|b| b.state != BreakerState::Closed)
            .map(|b| ProviderExclusion {
                provider: b.provider.clone(),
                kind: "breaker".into(),
                state: b.state.as_str().to_owned(),
                remaining_ms: b.retry_after_ms,
                failure_count: b.failure_count,
            })
            .collect();
        for p in providers {
            let category = catalog::category_of(p);
            let ms = state.engine.target_cooldown_ms(p, category, None, &settings.provider_cooldown);
            if ms > 0 {
                let failure_count = 0;
                let kind = "window_gate".into();
                out.push(ProviderExclusion {
                    provider: (*p).to_owned(),
                    kind,
                    state: "COOLING".into(),
                    remaining_ms: ms,
                    failure_count,
                });
            }
        }
        out.sort_by(|a, b| a.provider.cmp(&b.provider).then_with(|| a.kind.cmp(&b.kind)));
        out
    }

    /// The gateway's summary (`healthy`, `degraded`, `down`) and why.
    pub fn summary(
        &self,
        connection_health: &BTreeMap<String, ProviderConnections>,
        db_ok: bool,
    ) -> (String, Vec<String>) {
        let mut reasons = Vec::new();
        if !db_ok {
            reasons.push("The database does not answer.".to_owned());
        }
        let mut serving = 0;
        for (provider, c) in connection_health {
            let open = self.open_for(provider);
            match (open, c.total.saturating_sub(c.cooling_down + c.terminal)) {
                (Some(ms), _) => reasons.push(format!(
                    "{provider}: breaker open, failing fast; probing again in {}.",
                    app::format::duration(ms)
                )),
                (None, 0) => reasons.push(format!(
                    "{provider}: no eligible connection ({} cooling down, {} terminal).",
                    c.cooling_down, c.terminal
                )),
                (None, _) => serving += 1,
            }
        }
        for b in self.breakers.values().filter(|b| matches!(b.state, BreakerState::HalfOpen | BreakerState::Degraded)) {
            reasons.push(format!("{}: breaker {}.", b.provider, app::format::breaker_state(b.state.as_str())));
        }
        let status = match () {
            _ if !connection_health.is_empty() && serving == 0 => "down",
            _ if reasons.is_empty() => "healthy",
            _ => "degraded",
        };
        (status.to_owned(), reasons)
    }
}
