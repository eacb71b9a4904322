//! The request queue's protection switch (SPEC §R5): `GET/POST /api/rate-limits`.

use serde::{Deserialize, Deserializer, Serialize};

use super::FieldError;

/// `POST /api/rate-limits`: `enabled` `true` forces protection on for the
/// connection, `false` forces it off (even under auto-enable), `null`
/// returns it to auto-enable. The field must be present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetRateLimitProtection {
    pub connection_id: String,
    #[serde(deserialize_with = "present")]
    pub enabled: Option<bool>,
}

/// An `Option` that must be written out (`null` allowed, absence not).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Option::deserialize(d)
}

/// The answer of `POST /api/rate-limits`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitProtectionSet {
    pub success: bool,
    pub connection_id: String,
    /// As stored: `true`, `false`, or `null` (follows auto-enable).
    pub enabled: Option<bool>,
    /// Whether the connection's requests now go through its queue.
    pub protected: bool,
}

/// One connection of `GET /api/rate-limits`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitStatus {
    pub connection_id: String,
    pub provider: String,
    pub name: String,
    /// The stored switch: `true`, `false`, or `null` (follows auto-enable).
    pub rate_limit_protection: Option<bool>,
    /// Whether its requests go through its queue now.
    pub enabled: bool,
    pub active: bool,
    /// Requests waiting in its queues (all its models).
    pub queued: u32,
    /// Requests its queues started that have no answer yet.
    pub running: u32,
    /// How its queue paces starts, while protection is on.
    #[serde(default)]
    pub pacing: Option<Pacing>,
}

/// A protected connection's pace: the global request-queue settings with
/// its own rate-limit overrides applied, and an upstream's pause.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pacing {
    pub requests_per_minute: u64,
    pub min_time_between_requests_ms: u64,
    pub concurrent_requests: u64,
    /// Nothing starts for this long: the upstream said to wait (its
    /// rate-limit headers or a 429), or this minute's starts are used up.
    pub paused_for_ms: Option<u64>,
}

impl Pacing {
    /// "≤ 60/min · 350 ms apart · 1 at once · paused 12 s".
    pub fn describe(&self) -> String {
        let mut parts = vec![
            format!("≤ {}/min", self.requests_per_minute),
            format!("{} ms apart", self.min_time_between_requests_ms),
            format!("{} at once", self.concurrent_requests),
        ];
        if let Some(ms) = self.paused_for_ms.filter(|ms| *ms > 0) {
            parts.push(format!("paused {} s", ms.div_ceil(1000)));
        }
        parts.join(" · ")
    }
}

/// `GET /api/rate-limits`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitList {
    pub connections: Vec<RateLimitStatus>,
    pub auto_enable_api_key_providers: bool,
}

/// The dashboard's protection choice: `auto` (follow auto-enable), `on`, `off`.
pub fn parse_protection(mode: &str) -> Result<Option<bool>, FieldError> {
    match mode.trim() {
        "auto" => Ok(None),
        "on" => Ok(Some(true)),
        "off" => Ok(Some(false)),
        other => Err(FieldError::new("protection", format!("must be auto, on or off, not {other:?}"))),
    }
}

/// The choice as the dashboard's select names it.
pub fn protection_mode(stored: Option<bool>) -> &'static str {
    match stored {
        None => "auto",
        Some(true) => "on",
        Some(false) => "off",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enabled_must_be_present_and_may_be_null() {
        let parse = |s: &str| serde_json::from_str::<SetRateLimitProtection>(s);
        assert_eq!(parse(r#"{"connectionId":"c","enabled":null}"#).unwrap().enabled, None);
        assert_eq!(parse(r#"{"connectionId":"c","enabled":false}"#).unwrap().enabled, Some(false));
        assert!(parse(r#"{"connectionId":"c"}"#).unwrap_err().to_string().contains("enabled"));
        assert!(parse(r#"{"connectionId":"c","enabled":"yes"}"#).is_err());
    }

    #[test]
    fn the_dashboard_choice_round_trips() {
        for stored in [None, Some(true), Some(false)] {
            assert_eq!(parse_protection(protection_mode(stored)), Ok(stored));
        }
        assert_eq!(parse_protection("maybe").unwrap_err().field, "protection");
    }

    #[test]
    fn a_pace_reads_as_a_sentence_and_names_a_pause() {
        let pace = Pacing {
            requests_per_minute: 60,
            min_time_between_requests_ms: 350,
            concurrent_requests: 1,
            paused_for_ms: None,
        };
        assert_eq!(pace.describe(), "≤ 60/min · 350 ms apart · 1 at once");
        let paused = Pacing { paused_for_ms: Some(11_200), ..pace };
        assert_eq!(paused.describe(), "≤ 60/min · 350 ms apart · 1 at once · paused 12 s");
    }
}
