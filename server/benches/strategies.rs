//! Micro-benchmark of the combo strategies (run by `cargo xtask bench`):
//! ns to order 20 targets, per strategy, with per-target statistics and
//! the strategies' memory as a busy combo has them, model facts for most
//! rate-limit windows for two thirds of them and a session's rendezvous weights. Prints one JSON line.

use app::types::combo::Strategy;
use rand::{SeedableRng, rngs::StdRng};
use server::routing::{
    combo_state::{ComboState, TargetStats},
    quota::Quota,
    strategies::{self, Candidate},
};
use server::upstream::model_facts::ModelFacts;
use std::hint::black_box;
use tokio::time::Instant;

const TARGETS: usize = 20;
const ORDERS: usize = 100_000;

fn main() {
    let targets: Vec<Candidate> = (0..TARGETS)
        .map(|i| Candidate {
            key: format!("{i}:provider-{}/model-{i}", i % 7),
            provider: format!("provider-{}", i % 7),
            weight: (i as u32 * 7) % 101,
            eligible: i % 5 != 0,
            stats: TargetStats { requests: 100 + i as u64, successes: 90, latency_ms_total: 45_000 },
            facts: (i % 4 != 0).then(|| ModelFacts {
                context_window: 128_000 * (i as u32 % 5 + 1),
                input_price: 0.25 * (i % 6) as f64,
                output_price: 2.0,
            }),
            quota: (i % 3 != 0).then(|| Quota {
                windows: vec![((i % 10) as f64 / 10.0, Some(60_000 * (i as u64 % 7))), (0.3, None)],
                // Every other account is a subscription with plan windows.
                session: (i % 2 == 0).then_some((0.4, Some(3_600_000))),
                weekly: (i % 2 == 0).then_some((0.3, None)),
                age_ms: 1_000,
            }),
            in_flight: i as u32 % 3,
            rendezvous: Some(strategies::cache_optimized::weight(&[7; 32], &format!("connection:c{i}"))),
            ..Candidate::default()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(1);
    let mut results = Vec::new();
    for strategy in Strategy::ALL {
        let mut state = ComboState::default();
        let start = Instant::now();
        for _ in 0..ORDERS {
            black_box(strategies::order(strategy, black_box(&targets), &mut state, &mut rng));
        }
        let ns = start.elapsed().as_nanos() as f64 / ORDERS as f64;
        results.push(format!("\"{}\":{ns:.0}", strategy.as_str()));
    }
    println!("{{\"targets\":{TARGETS},\"nsPerOrder\":{{{}}}}}", results.join(","));
}
