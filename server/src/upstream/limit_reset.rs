//! Claiming a Claude subscription's free limit reset at its usage wall
//! (SPEC §R2.1, `autoLimitReset`), as Claude Code's `/limit-reset` does:
//! the usage endpoint, asked "at the wall", says whether the reset
//! program (`juniper_tide`) offers a reset now; if so, one POST to the
//! organization's `reset_rate_limits` claims it. The organization comes
//! from the token exchange, else from the account's profile.

use serde_json::Value;

use super::{
    Upstream,
    executor::{Endpoint, TransportError, UpstreamResponse},
};

const PROGRAM: &str = "juniper_tide";
const STATUS_PATH: &str = "/api/oauth/usage?at_wall=1&skip_spend=1";
const PROFILE_PATH: &str = "/api/oauth/profile";
/// Largest answer read.
const MAX_ANSWER: usize = 64 * 1024;

/// How a claim ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The window was reset: retry at full speed (the reset is spent).
    Reset,
    /// The window was not limited after all: retry at full speed.
    NotLimited,
    /// No reset now (already used this week, or not offered); the next
    /// one from then (epoch ms), when the answer says.
    Unavailable { next_at: Option<i64> },
    /// The claim could not be made; why.
    Failed(String),
}

/// Claims the reset for the account behind `endpoint` (its bearer token),
/// of `organization` when known.
pub async fn claim(upstream: &dyn Upstream, endpoint: &Endpoint, organization: Option<&str>) -> Claim {
    let status = match read(upstream.get(endpoint, STATUS_PATH)).await {
        Ok(v) => v,
        Err(why) => return Claim::Failed(format!("the usage endpoint: {why}")),
    };
    let offer = &status[PROGRAM];
    if offer["arm"] != "reset" || offer["available"] != true {
        return Claim::Unavailable { next_at: when(&offer["next_available_at"]) };
    }
    let organization = match organization {
        Some(o) => o.to_owned(),
        None => match read(upstream.get(endpoint, PROFILE_PATH)).await {
            Ok(profile) => match profile["organization"]["uuid"].as_str() {
                Some(uuid) => uuid.to_owned(),
                None => return Claim::Failed("the profile names no organization".into()),
            },
            Err(why) => return Claim::Failed(format!("the profile: {why}")),
        },
    };
    if !organization.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Claim::Failed("the organization id is not one".into());
    }
    let path = format!("/api/organizations/{organization}/reset_rate_limits");
    let body = bytes::Bytes::from(serde_json::json!({"program": PROGRAM}).to_string());
    let no_headers = http::HeaderMap::new();
    match read(upstream.post(endpoint, &path, body, false, &no_headers)).await {
        Ok(answer) => match answer["result"].as_str() {
            Some("reset") => Claim::Reset,
            Some("not_limited") => Claim::NotLimited,
            Some("already_used" | "not_offered") => Claim::Unavailable { next_at: when(&answer["next_available_at"]) },
            other => Claim::Failed(format!("the reset answered {}", other.unwrap_or("nothing readable"))),
        },
        Err(why) => Claim::Failed(format!("the reset: {why}")),
    }
}

/// A JSON answer of a 2xx call, or why there is none.
async fn read(call: impl Future<Output = Result<UpstreamResponse, TransportError>>) -> Result<Value, String> {
    call.await.map_err(|e| e.to_string())?.json_answer(MAX_ANSWER).await
}

/// An RFC 3339 time or epoch seconds, as epoch ms.
fn when(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis()),
        Value::Number(n) => n.as_i64()?.checked_mul(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_reset_reads_as_a_time_or_epoch_seconds() {
        assert_eq!(when(&"2026-12-12T00:00:00Z".into()), Some(1_797_033_600_000));
        assert_eq!(when(&1_797_033_600.into()), Some(1_797_033_600_000));
        assert_eq!(when(&Value::Null), None);
    }
}
