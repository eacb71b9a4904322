//! sea-orm entities, one per table of `migrations`. Timestamps are epoch ms.

pub mod api_key;
pub mod circuit_breaker;
pub mod combo;
pub mod dashboard_session;
pub mod gateway_instance;
pub mod key_value;
pub mod model_alias;
pub mod model_lockout;
pub mod provider_connection;
pub mod proxy_log;
pub mod session_affinity;
pub mod session_lease;
pub mod stash;
