//! One owner of "who may serve": for a target or a connection, *may it
//! serve this request now — and if not, why, and until when?*
//!
//! The answer reads the connection snapshot, the engine's health
//! (breakers, cooldowns, terminal states, model lockouts, the window
//! gate), the leases, the tool limits and the asking key's allowed
//! connections. The target gates, planning (the strategies' `eligible`
//! and per-account expansion), both wait policies, lease placement and
//! the Combos page all ask here, so they cannot disagree about who is
//! held back. The view is read-only: handing out a breaker's probe slot
//! or a concurrency permit stays with the gates that take them.

use app::types::settings::ResilienceSettings;
use std::sync::Arc;

use super::{
    Routing,
    leases::Lease,
    registry::{LiveConnection, Snapshot},
    strategies::Health,
};
use crate::{
    auth::api_keys::KeyEntry,
    resilience::{
        breaker::BreakerState,
        combo_wait::{Lapse, transient},
        engine::{self, Engine, Exclusion},
    },
    upstream::catalog::Provider,
};

/// Who is asking: what bounds the connections a request may use.
#[derive(Clone, Copy)]
pub struct Asker<'a> {
    /// The API key, whose allowed connections bound the accounts.
    pub key: Option<&'a KeyEntry>,
    /// The exclusive session lease the request holds (SPEC §R2.3).
    pub lease: Option<&'a Lease>,
    /// Whether leases are judged: not while a request that presents a
    /// lease context is planned (its lease is fenced against the plan).
    leases_judged: bool,
}

impl<'a> Asker<'a> {
    /// A request with `key`, holding `lease` (or none).
    pub fn new(key: Option<&'a KeyEntry>, lease: Option<&'a Lease>) -> Self {
        Self { key, lease, leases_judged: true }
    }

    /// Anyone: no key bounds it and it holds no lease (the dashboard's view).
    pub fn anyone() -> Self {
        Self::new(None, None)
    }

    /// A request with `key` whose lease context is not fenced yet: leases
    /// are left to the gates, which see the fenced lease.
    pub fn unfenced(key: Option<&'a KeyEntry>) -> Self {
        Self { key, lease: None, leases_judged: false }
    }
}

/// Why a connection may not serve a request now.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Not among the key's allowed connections.
    NotAllowed,
    /// The request's lease binds it to another connection of this provider.
    OutsideLease,
    /// Another session's unexpired lease holds it.
    Leased,
    /// The engine holds it back: cooling, model locked or terminal.
    Excluded(Exclusion),
}

/// What routing decisions read, for one request (or one page view).
pub struct RoutingView<'a> {
    pub snapshot: &'a Snapshot,
    routing: &'a Routing,
    engine: &'a Engine,
    settings: &'a ResilienceSettings,
}

impl<'a> RoutingView<'a> {
    pub fn new(
        snapshot: &'a Snapshot,
        routing: &'a Routing,
        engine: &'a Engine,
        settings: &'a ResilienceSettings,
    ) -> Self {
        Self { snapshot, routing, engine, settings }
    }

    pub fn routing(&self) -> &'a Routing {
        self.routing
    }

    pub fn engine(&self) -> &'a Engine {
        self.engine
    }

    pub fn settings(&self) -> &'a ResilienceSettings {
        self.settings
    }

    /// Whether `asker` may address connection `conn` of `provider` at all:
    /// the key's allowed connections, its own lease, other sessions' leases.
    pub fn may_address(&self, asker: &Asker<'_>, provider: &str, conn: &str) -> Result<(), Refusal> {
        if !asker.key.is_none_or(|k| k.may_use(conn)) {
            return Err(Refusal::NotAllowed);
        }
        match asker.lease.filter(|l| l.provider == provider) {
            _ if !asker.leases_judged => Ok(()),
            Some(l) if *l.connection_id != *conn => Err(Refusal::OutsideLease),
            Some(_) => Ok(()),
            None if self.routing.leases.held_by_other(conn, asker.lease.map(|l| &l.owner)) => Err(Refusal::Leased),
            None => Ok(()),
        }
    }

    /// Whether connection `conn` of `provider` may serve `model` for
    /// `asker` now; if not, why (and, in the exclusion, until when).
    pub fn may_serve(&self, asker: &Asker<'_>, provider: &str, conn: &str, model: &str) -> Result<(), Refusal> {
        self.may_address(asker, provider, conn)?;
        self.excluded(provider, conn, model).map_or(Ok(()), |e| Err(Refusal::Excluded(e)))
    }

    /// The engine's hold on a connection for `model`, if any.
    pub fn excluded(&self, provider: &str, conn: &str, model: &str) -> Option<Exclusion> {
        self.engine.exclusion(provider, conn, model)
    }

    /// The active connections of `provider` that `asker` may address — the
    /// one `pinned` to only, when given — in the snapshot's order.
    pub fn addressable<'s>(
        &'s self,
        asker: &'s Asker<'_>,
        provider: &'s str,
        pinned: Option<&'s str>,
    ) -> impl Iterator<Item = &'a Arc<LiveConnection>> + 's {
        self.snapshot
            .candidates(provider)
            .iter()
            .filter(move |c| pinned.is_none_or(|p| p == c.id))
            .filter(move |c| self.may_address(asker, provider, &c.id).is_ok())
    }

    /// Whether some connection of `provider` (the `pinned` one, if given)
    /// may serve `model` for `asker` now.
    pub fn usable(&self, asker: &Asker<'_>, provider: &str, model: &str, pinned: Option<&str>) -> bool {
        self.addressable(asker, provider, pinned).any(|c| self.excluded(provider, &c.id, model).is_none())
    }

    /// The provider's breaker state under its class's profile.
    pub fn breaker(&self, provider: &Provider) -> BreakerState {
        self.engine.breaker_state(provider.id, &engine::breaker_config(self.settings, provider.category))
    }

    /// The provider's breaker as the strategies weigh it.
    pub fn health(&self, provider: &Provider) -> Health {
        match self.breaker(provider) {
            BreakerState::Closed => Health::Closed,
            BreakerState::HalfOpen | BreakerState::Degraded => Health::HalfOpen,
            BreakerState::Open => Health::Open,
        }
    }

    /// Whether a request with `tools` tools is known to be refused by
    /// `model` of `provider` (SPEC §R8).
    pub fn refuses_tools(&self, provider: &'static str, model: &str, tools: usize) -> bool {
        self.routing.tool_limits.refused_from(provider, model).is_some_and(|from| tools >= from)
    }

    /// The locks holding back the connections of `provider` that `asker`
    /// may address (the `pinned` one, if given) for `model`: cooldowns and
    /// model locks, with how long each has left and whether it is the
    /// short, transient kind a combo waits for.
    pub fn lapses(&self, asker: &Asker<'_>, provider: &str, model: &str, pinned: Option<&str>) -> Vec<Lapse> {
        self.addressable(asker, provider, pinned)
            .filter_map(|c| match self.excluded(provider, &c.id, model)? {
                Exclusion::Cooling { remaining_ms, reason, .. } => {
                    Some(Lapse { remaining_ms, transient: transient(reason), connection: true })
                }
                Exclusion::ModelLocked { remaining_ms, reason } => {
                    Some(Lapse { remaining_ms, transient: transient(Some(reason)), connection: true })
                }
                Exclusion::Terminal(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        resilience::{clock::ManualClock, engine::EngineChanges},
        routing::{affinity::PinChanges, leases::Owner},
        upstream::{catalog, executor::BaseUrl},
    };

    const NOW: i64 = 1_767_225_600_000;

    struct World {
        routing: Routing,
        engine: Engine,
        snapshot: Snapshot,
        settings: ResilienceSettings,
    }

    fn world() -> World {
        let clock = Arc::new(ManualClock::new(NOW));
        let openai = catalog::find("openai").unwrap();
        let conn =
            |id: &str| LiveConnection::new(id.into(), openai, BaseUrl::parse("http://127.0.0.1:1/v1").unwrap(), None);
        World {
            routing: Routing::new(clock.clone(), PinChanges::detached(), crate::outbox::Outbox::detached()),
            engine: Engine::new(clock, EngineChanges::detached()),
            snapshot: Snapshot::from_live([conn("a"), conn("b"), conn("c")]),
            settings: ResilienceSettings::default(),
        }
    }

    fn lease(owner: u8, connection: &str) -> Lease {
        Lease {
            id: format!("l{owner}"),
            owner: Owner([owner; 32]),
            key_id: "k".into(),
            provider: "openai",
            connection_id: connection.into(),
            generation: 1,
            expires_at: NOW + 60_000,
        }
    }

    fn ids(view: &RoutingView<'_>, asker: &Asker<'_>) -> Vec<String> {
        view.addressable(asker, "openai", None).map(|c| c.id.clone()).collect()
    }

    #[test]
    fn the_key_and_the_leases_bound_what_a_request_may_address() {
        let w = world();
        let view = RoutingView::new(&w.snapshot, &w.routing, &w.engine, &w.settings);
        let key = KeyEntry::new("k".into(), Vec::new(), Some(vec!["a".into(), "b".into()]));
        assert_eq!(ids(&view, &Asker::anyone()), ["a", "b", "c"]);
        assert_eq!(ids(&view, &Asker::new(Some(&key), None)), ["a", "b"]);
        assert_eq!(view.may_address(&Asker::new(Some(&key), None), "openai", "c"), Err(Refusal::NotAllowed));
        let mine = lease(1, "b");
        w.routing.leases.put(mine.clone());
        assert_eq!(ids(&view, &Asker::anyone()), ["a", "c"], "another session's lease holds b");
        assert_eq!(view.may_address(&Asker::anyone(), "openai", "b"), Err(Refusal::Leased));
        let holder = Asker::new(Some(&key), Some(&mine));
        assert_eq!(ids(&view, &holder), ["b"], "the lease binds its holder to b");
        assert_eq!(view.may_address(&holder, "openai", "a"), Err(Refusal::OutsideLease));
        assert_eq!(ids(&view, &Asker::unfenced(Some(&key))), ["a", "b"], "leases are left to the gates while planning");
        let pinned: Vec<_> = view.addressable(&Asker::anyone(), "openai", Some("c")).map(|c| c.id.clone()).collect();
        assert_eq!(pinned, ["c"]);
    }

    #[test]
    fn the_engine_says_why_and_until_when_and_the_lapses_follow_the_asker() {
        let w = world();
        let view = RoutingView::new(&w.snapshot, &w.routing, &w.engine, &w.settings);
        w.engine.lock_model("openai", "a", "m", 429, 30_000);
        match view.may_serve(&Asker::anyone(), "openai", "a", "m") {
            Err(Refusal::Excluded(e)) => assert_eq!(e.remaining_ms(), Some(30_000)),
            other => panic!("{other:?}"),
        }
        assert!(view.may_serve(&Asker::anyone(), "openai", "a", "other-model").is_ok(), "a model lock is per model");
        assert!(view.usable(&Asker::anyone(), "openai", "m", None), "b and c still serve m");
        assert!(!view.usable(&Asker::anyone(), "openai", "m", Some("a")));
        assert_eq!(view.lapses(&Asker::anyone(), "openai", "m", None).len(), 1);
        let key = KeyEntry::new("k".into(), Vec::new(), Some(vec!["b".into()]));
        assert!(view.lapses(&Asker::new(Some(&key), None), "openai", "m", None).is_empty(), "a is not this key's");
        assert_eq!(view.health(catalog::find("openai").unwrap()), Health::Closed);
    }
}
