//! DTOs shared by the dashboard and the server: what the management API
//! accepts and returns, with the validation rules both sides run. No leptos,
//! no IO — so the same checks run in the browser and on the server.

pub mod alias;
pub mod api_key;
pub mod catalog;
pub mod combo;
pub mod connection;
pub mod logs;
pub mod monitoring;
pub mod onboarding;
pub mod rate_limits;
pub mod settings;
pub mod subscription;
pub mod traffic;
pub mod usage;
pub mod validation;

pub use api_key::*;
pub use catalog::*;
pub use connection::*;
pub use logs::*;
pub use validation::*;
