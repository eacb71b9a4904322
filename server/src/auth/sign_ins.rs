//! Subscription sign-ins between their start (the user is sent to the
//! provider's page) and their code coming back: the PKCE verifier stays
//! here, keyed by the sign-in's `state`, and is taken once.

use serde::{Deserialize, Serialize};

/// How long a started sign-in waits for its code.
pub const SIGN_IN_TTL_MS: i64 = 10 * 60 * 1000;

/// A started sign-in.
#[derive(Serialize, Deserialize)]
pub struct SignIn {
    pub provider: String,
    /// The PKCE verifier whose challenge the sign-in URL carries.
    pub verifier: String,
    /// The gateway listens at the provider's redirect address for it.
    pub listening: bool,
    /// The dashboard it was started from (`scheme://host`), where the
    /// redirect address sends the browser once it completed.
    pub dashboard: Option<String>,
}

/// Until when (epoch ms) the gateway listens at the Codex CLI's redirect
/// address for sign-ins; 0: it does not.
#[derive(Default)]
pub struct CallbackWindow {
    pub open_until: std::sync::atomic::AtomicI64,
}

/// Kept by its `state`.
impl super::stash::Stashed for SignIn {
    const KIND: &'static str = "sign-in";
    const TTL_MS: i64 = SIGN_IN_TTL_MS;
}
