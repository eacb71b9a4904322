//! The order a target's connections are tried in (Settings → Resilience →
//! Connection order, `fallbackStrategy`; SPEC §R8). Combo strategies order
//! the targets; this orders the accounts of one provider inside a target,
//! with the same strategy functions ([`super::strategies`]) applied to the
//! connections: what each has served since the start (kept on the live
//! connection) stands where a combo target's statistics would. The
//! round-robin rotation is one per provider, in memory.
//!
//! `fill-first`, the default, keeps the priority order the registry holds
//! and costs nothing. Session affinity runs after this: a session's pinned
//! connection still goes first.

use app::types::{combo::Strategy, settings::ConnectionStrategy};
use dashmap::DashMap;
use parking_lot::Mutex;
use std::sync::Arc;

use super::{
    combo_state::ComboState,
    registry::LiveConnection,
    strategies::{self, Candidate},
};

#[derive(Default)]
pub struct ConnectionOrder {
    /// What the strategies remember, per provider.
    memory: DashMap<&'static str, Mutex<ComboState>>,
}

impl ConnectionOrder {
    /// Puts `conns` (of `provider`) in `strategy`'s order.
    pub fn order(&self, strategy: ConnectionStrategy, provider: &'static str, conns: &mut Vec<&Arc<LiveConnection>>) {
        let strategy = match strategy {
            ConnectionStrategy::FillFirst => return,
            ConnectionStrategy::RoundRobin => Strategy::RoundRobin,
            ConnectionStrategy::P2c => Strategy::P2c,
            ConnectionStrategy::Random => Strategy::Random,
            ConnectionStrategy::LeastUsed => Strategy::LeastUsed,
        };
        if conns.len() < 2 {
            return;
        }
        let candidates: Vec<Candidate> = conns
            .iter()
            .map(|c| Candidate {
                key: c.id.clone(),
                provider: provider.to_owned(),
                stats: c.stats(),
                ..Candidate::default()
            })
            .collect();
        let memory = self.memory.entry(provider).or_default();
        let order = strategies::order(strategy, &candidates, &mut memory.lock(), &mut rand::thread_rng());
        drop(memory);
        let before = std::mem::take(conns);
        conns.extend(order.into_iter().map(|i| before[i]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::{catalog, executor::BaseUrl};

    fn conns(n: usize) -> Vec<Arc<LiveConnection>> {
        let openai = catalog::find("openai").unwrap();
        (0..n)
            .map(|i| {
                let url = BaseUrl::parse("http://127.0.0.1:1/v1").unwrap();
                Arc::new(LiveConnection::new(format!("c{i}"), openai, url, None))
            })
            .collect()
    }

    fn ids(order: &ConnectionOrder, strategy: ConnectionStrategy, all: &[Arc<LiveConnection>]) -> Vec<String> {
        let mut v: Vec<&Arc<LiveConnection>> = all.iter().collect();
        order.order(strategy, "openai", &mut v);
        v.iter().map(|c| c.id.clone()).collect()
    }

    #[test]
    fn fill_first_keeps_priority_order_and_round_robin_turns() {
        let (order, all) = (ConnectionOrder::default(), conns(3));
        assert_eq!(ids(&order, ConnectionStrategy::FillFirst, &all), ["c0", "c1", "c2"]);
        let leads: Vec<String> = (0..4).map(|_| ids(&order, ConnectionStrategy::RoundRobin, &all)[0].clone()).collect();
        assert_eq!(leads, ["c0", "c1", "c2", "c0"]);
    }

    #[test]
    fn least_used_and_p2c_read_what_each_connection_served() {
        let (order, all) = (ConnectionOrder::default(), conns(2));
        // c0 took two attempts and failed both; c1 served one quickly.
        drop((all[0].begin_attempt(None), all[0].begin_attempt(None)));
        all[1].begin_attempt(None).served(20);
        assert_eq!(ids(&order, ConnectionStrategy::LeastUsed, &all), ["c1", "c0"]);
        for _ in 0..20 {
            assert_eq!(ids(&order, ConnectionStrategy::P2c, &all)[0], "c1", "of two, p2c always draws both");
        }
        assert_eq!(all[0].in_flight(), 0, "a finished attempt is no longer in flight");
    }
}
