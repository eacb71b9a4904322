//! Micro-benchmark of the resilience gates one request passes (run by
//! `cargo xtask bench`): the breaker admission of its provider, the §R1.1
//! window gate, and the exclusion check of every connection of the
//! provider (cooldown, terminal state, model lockout) — with the engine
//! holding state for 100 providers × 10 connections: some breakers
//! degraded, a third of the connections cooling, live model lockouts and
//! window entries, so no fast path hides the work. Prints one JSON line.

use app::types::{Category, settings::ResilienceSettings};
use http::HeaderMap;
use server::resilience::{
    clock::ManualClock,
    engine::{self, AttemptFailure, Engine, EngineChanges},
    lockout::QuotaScope,
};
use std::{hint::black_box, sync::Arc};
use tokio::time::Instant;

const PROVIDERS: usize = 100;
const CONNECTIONS: usize = 10;
const REQUESTS: usize = 200_000;

fn main() {
    let mut settings = ResilienceSettings::default();
    settings.provider_cooldown.enabled = true;
    let cfg = engine::breaker_config(&settings, Category::Apikey);
    let engine = Engine::new(Arc::new(ManualClock::new(1_767_225_600_000)), EngineChanges::detached());
    let providers: Vec<String> = (0..PROVIDERS).map(|p| format!("provider-{p}")).collect();
    let connections: Vec<Vec<String>> =
        (0..PROVIDERS).map(|p| (0..CONNECTIONS).map(|c| format!("conn-{p}-{c}")).collect()).collect();
    let headers = HeaderMap::new();
    for (p, provider) in providers.iter().enumerate() {
        let provider: &'static str = Box::leak(provider.clone().into_boxed_str());
        for (c, id) in connections[p].iter().enumerate() {
            let status = match (p % 10, c % 3) {
                (0, _) => Some(503),
                (_, 0) => Some(429),
                (_, 1) => Some(404),
                _ => continue,
            };
            let failure = AttemptFailure {
                provider,
                connection_id: id,
                model: "model-a",
                oauth: false,
                disable_cooling: false,
                stall: false,
                status,
                headers: &headers,
                body: "",
                egress_ip: None,
                quota_scope: QuotaScope::Connection,
            };
            engine.on_failure(&failure, &settings, &cfg, None);
        }
        engine.record_target_failure(provider, Category::Apikey, None, &settings.provider_cooldown);
    }

    let start = Instant::now();
    let mut excluded = 0usize;
    for i in 0..REQUESTS {
        let p = i % PROVIDERS;
        let provider = providers[p].as_str();
        black_box(engine.target_cooldown_ms(provider, Category::Apikey, None, &settings.provider_cooldown));
        black_box(engine.admit(provider, &cfg).ok());
        for id in &connections[p] {
            excluded += usize::from(engine.exclusion(provider, id, "model-a").is_some());
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / REQUESTS as f64;
    println!(
        "{{\"providers\":{PROVIDERS},\"connectionsPerProvider\":{CONNECTIONS},\"nsPerRequest\":{ns:.0},\"excludedPerRequest\":{:.1}}}",
        excluded as f64 / REQUESTS as f64
    );
}
