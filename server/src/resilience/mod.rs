//! The resilience engine: pure logic, no HTTP, no database (SPEC §R).
//! Everything here reads its knobs from [`settings::SettingsHandle`].

pub mod settings;
