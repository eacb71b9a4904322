//! One connection's health (SPEC §R2): its cooldown, last error, backoff
//! level and terminal state, as stored in `provider_connections`. The
//! rules that keep it sane under load live here:
//! * **thundering herd**: while a cooldown runs, a new failure neither
//!   re-marks nor escalates — it only reports the remaining time;
//! * **terminal states** (`banned`, `expired`, `credits_exhausted`) are
//!   never overwritten by a transient cooldown and only an operator (or
//!   new credentials) clears them; `banned` also follows 3 consecutive
//!   `request_rejected` refusals, `expired` an auth failure that survived
//!   `EXPIRED_RETRY_MAX` retries on the backoff ladder;
//! * **lazy expiry**: an expired cooldown simply stops excluding, and the
//!   next selection resets the backoff level;
//! * a success clears every error field.
//!
//! The caller serializes marking per connection.

use app::types::settings::ErrorReason;

use super::classify::{Terminal, Verdict};

/// Auth failures retried (with backoff) before the account is `expired`.
pub const EXPIRED_RETRY_MAX: u32 = 3;
/// Consecutive `request_rejected` refusals that mean `banned`.
pub const REJECTED_STREAK_BAN: u32 = 3;
/// Longest error text kept.
const MAX_ERROR_CHARS: usize = 500;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TerminalStatus {
    Banned,
    Expired,
    CreditsExhausted,
}

impl TerminalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Banned => "banned",
            Self::Expired => "expired",
            Self::CreditsExhausted => "credits_exhausted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "banned" => Some(Self::Banned),
            "expired" => Some(Self::Expired),
            "credits_exhausted" => Some(Self::CreditsExhausted),
            _ => None,
        }
    }
}

impl From<Terminal> for TerminalStatus {
    fn from(t: Terminal) -> Self {
        match t {
            Terminal::Banned => Self::Banned,
            Terminal::CreditsExhausted => Self::CreditsExhausted,
        }
    }
}

/// What cools along with a failing connection (SPEC §R7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedBy {
    /// The egress-bucketed lock: siblings that leave through the same IP.
    EgressIp,
    /// An operator rule with `scope: "provider"`: every connection of it.
    ProviderRule,
}

/// A failing connection's limit as its siblings take it on.
#[derive(Clone, Copy, Debug)]
pub struct SharedLimit<'a> {
    pub failing_id: &'a str,
    pub status: u16,
    /// When the failing connection's cooldown ends.
    pub until: i64,
    pub by: SharedBy,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectionHealth {
    /// Excluded until this instant (epoch ms).
    pub rate_limited_until: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_type: Option<String>,
    /// The upstream status of the last error.
    pub error_code: Option<String>,
    pub backoff_level: u32,
    pub terminal: Option<TerminalStatus>,
    pub expired_retries: u32,
    pub rejected_streak: u32,
}

/// What marking a failure did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marked {
    /// The connection now cools for this long.
    Cooled(u64),
    /// It was already cooling; nothing changed (this much is left).
    StillCooling(u64),
    /// It is (now or already) terminal.
    Terminal(TerminalStatus),
    /// The error was recorded; no cooldown (stall, disabled cooling, …).
    Recorded,
}

impl ConnectionHealth {
    /// Whether selection may use the connection now.
    pub fn is_eligible(&self, now: i64) -> bool {
        self.terminal.is_none() && self.remaining_ms(now) == 0
    }

    pub fn remaining_ms(&self, now: i64) -> u64 {
        self.rate_limited_until.map_or(0, |until| u64::try_from(until.saturating_sub(now)).unwrap_or(0))
    }

    /// Applies a failure's verdict. `cool` is false when the connection
    /// opts out of cooling or the failure must not cool (a stream stall).
    pub fn mark_failure(&mut self, v: &Verdict, status: Option<u16>, message: &str, now: i64, cool: bool) -> Marked {
        if let Some(t) = self.terminal {
            return Marked::Terminal(t);
        }
        let remaining = self.remaining_ms(now);
        if remaining > 0 {
            return Marked::StillCooling(remaining);
        }
        self.last_error = Some(message.chars().take(MAX_ERROR_CHARS).collect());
        self.last_error_type = Some(v.reason.as_str().to_owned());
        self.error_code = status.map(|s| s.to_string());
        self.rejected_streak =
            if v.reason == ErrorReason::RequestRejected { self.rejected_streak.saturating_add(1) } else { 0 };
        let terminal = v
            .terminal
            .map(TerminalStatus::from)
            .or_else(|| (self.rejected_streak >= REJECTED_STREAK_BAN).then_some(TerminalStatus::Banned));
        let terminal = terminal.or_else(|| {
            (v.reason == ErrorReason::AuthError && self.expired_retries >= EXPIRED_RETRY_MAX)
                .then_some(TerminalStatus::Expired)
        });
        if let Some(t) = terminal {
            self.terminal = Some(t);
            self.rate_limited_until = None;
            return Marked::Terminal(t);
        }
        if v.reason == ErrorReason::AuthError {
            self.expired_retries += 1;
        }
        let cooldown = v.cooldown_ms;
        if cooldown == 0 || !cool {
            // Recorded only: the ladder does not climb for a failure that
            // cools nothing (a stall, a connection that opts out).
            return Marked::Recorded;
        }
        self.backoff_level = v.backoff_level;
        self.rate_limited_until = Some(now.saturating_add(i64::try_from(cooldown).unwrap_or(i64::MAX)));
        Marked::Cooled(cooldown)
    }

    /// A limit shared with a failing sibling (SPEC §R7): `v` hit the
    /// sibling and holds here too, so this connection cools until the
    /// sibling does — never turned terminal, never a running cooldown
    /// shortened, the backoff level untouched. Whether anything changed.
    pub fn mark_shared_limit(&mut self, v: &Verdict, shared: &SharedLimit<'_>) -> bool {
        if self.terminal.is_some() || self.rate_limited_until.is_some_and(|u| u >= shared.until) {
            return false;
        }
        self.rate_limited_until = Some(shared.until);
        let why = match shared.by {
            SharedBy::EgressIp => "which shares this egress IP",
            SharedBy::ProviderRule => "and a provider-wide rule cools every connection of the provider",
        };
        self.last_error = Some(format!("{} on connection {}, {why}", v.reason.as_str(), shared.failing_id));
        self.last_error_type = Some(v.reason.as_str().to_owned());
        self.error_code = Some(shared.status.to_string());
        true
    }

    /// Selection considers the connection again: once its cooldown has
    /// passed, the ladder starts over. Whether anything changed.
    pub fn on_selected(&mut self, now: i64) -> bool {
        let passed = self.rate_limited_until.is_some_and(|until| until <= now);
        let changed = self.terminal.is_none() && passed && self.backoff_level != 0;
        if changed {
            self.backoff_level = 0;
        }
        changed
    }

    /// A success: every error field cleared (`clear_account_error`).
    /// Whether anything changed.
    pub fn clear(&mut self) -> bool {
        let cleared = Self { terminal: self.terminal, ..Self::default() };
        let changed = *self != cleared;
        *self = cleared;
        changed
    }

    /// The operator's reset: terminal states too.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests;
