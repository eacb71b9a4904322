//! The resilience engine: pure logic, no HTTP, no database (SPEC §R).
//! Functions take `now` (epoch ms) from a [`clock::Clock`] held by the
//! caller; knobs come from [`settings::SettingsHandle`].

pub mod breaker;
pub mod breaker_history;
pub mod classify;
pub mod clock;
pub mod concurrency;
pub mod connection_health;
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
