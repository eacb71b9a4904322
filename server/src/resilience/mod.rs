//! The resilience engine: pure logic, no HTTP, no database (SPEC §R).
//! Functions take `now` (epoch ms) from a [`clock::Clock`] held by the
//! caller; knobs come from [`settings::SettingsHandle`].

pub mod breaker;
pub mod breaker_history;
pub mod classify;
pub mod clock;
pub mod combo_wait;
pub mod concurrency;
pub mod connection_health;
pub mod cooldown_wait;
pub mod egress;
pub mod engine;
pub mod lockout;
pub mod provider_cooldown;
pub mod request_queue;
pub mod restate;
pub mod retry_hints;
pub mod rules;
pub mod settings;
pub mod throughput;
pub mod tool_limits;
pub mod usage_wall;

/// Who may start now (SPEC §R4): concurrency slots per connection and
/// model, and the request queues that pace and hold the rest.
#[derive(Default)]
pub struct Admission {
    pub concurrency: concurrency::Concurrency,
    pub queues: request_queue::RequestQueues,
    /// Requests waiting now for a cooldown or a combo's short lock to end.
    pub waiting_for_cooldown: std::sync::atomic::AtomicU32,
}
