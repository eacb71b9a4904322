//! The subscription side of the fake: an OAuth issuer whose refresh
//! tokens are single-use (`POST …/oauth/token`), and the checks a
//! subscription backend makes of a bearer token on Anthropic Messages.
//!
//! * A refresh token is good once: its answer carries the next access and
//!   refresh tokens (`sk-ant-oat01-fake-N`, `sk-ant-ort01-fake-N`, valid
//!   8 hours); a spent one, or one starting with `revoked`, gets `400
//!   {"error":"invalid_grant"}`.
//! * A sign-in's code (`authorization_code`, with its `state`,
//!   `redirect_uri` and PKCE `code_verifier`) is good once if it starts
//!   with `fake-code`; the test checks the verifier against the challenge
//!   of the sign-in URL from the recorded request.
//! * The Codex CLI's client (`client_id` `app_…`) gets JWT access and id
//!   tokens naming the ChatGPT account [`CODEX_ACCOUNT`] and refresh tokens
//!   `rt-codex-fake-N`; its code exchange comes form-encoded, its refresh
//!   as JSON with the scope `openid profile email`.
//! * A bearer token on `/v1/messages` needs the `oauth-2025-04-20` beta
//!   and must come without `x-api-key`; one starting with `expired` is
//!   refused with `401` as an expired token; the request's system prompt
//!   must open with Claude Code's identity (`400` otherwise).
//! * The usage endpoints (`…/api/oauth/usage`, Claude's, and
//!   `…/wham/usage`, Codex's) want a bearer token and answer a plan's
//!   5-hour and weekly windows ([`usage`]; a rule's `body` replaces them).
//!   Claude's, asked `at_wall=1`, also offers the weekly limit reset
//!   (`juniper_tide`) until `…/api/organizations/{org}/reset_rate_limits`
//!   claimed it (for [`CLAUDE_ORG`], which Claude tokens and
//!   `…/api/oauth/profile` name).
//! * Google's client (`….apps.googleusercontent.com`) must send its secret;
//!   its refresh tokens (`1//fake-google-N`, given with a code) last, and a
//!   refresh answers a new access token (`ya29.fake-N`) only.
//! * The Code Assist backend (`/v1internal:…`) sets an account up on its
//!   first `onboardUser` ([`CODE_ASSIST_PROJECT`]) and wants a bearer
//!   token and that project in each generate call's envelope; it answers
//!   Gemini inside `{"response": …}`; `retrieveUserQuota` of that project
//!   has two models' daily buckets.
//! * The Codex backend (`…/codex/responses`) wants a bearer token, the
//!   account header, `stream: true`, `store: false` and `instructions`,
//!   and refuses the public API's token limit and sampling parameters.

use axum::{
    Json,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashSet;

/// The ChatGPT account the fake issuer's Codex tokens act for.
pub const CODEX_ACCOUNT: &str = "acct-fake-codex";
/// The Codex CLI's public client id starts so.
const CODEX_CLIENT: &str = "app_";
/// Google's installed-application client ids (the Gemini CLI's) end so.
const GOOGLE_CLIENT: &str = ".apps.googleusercontent.com";

/// The beta flag an OAuth token needs on Anthropic Messages.
pub const OAUTH_BETA: &str = "oauth-2025-04-20";

/// The Claude organization the fake issuer's Claude tokens act for.
pub const CLAUDE_ORG: &str = "0f1e2d3c-fake-4b5a-claude-org";

#[derive(Default)]
pub struct Issuer {
    spent: Mutex<HashSet<String>>,
    issued: Mutex<u32>,
    /// The weekly limit reset was claimed.
    reset_claimed: std::sync::atomic::AtomicBool,
    /// The Gemini CLI account was set up for Code Assist.
    pub code_assist_onboarded: std::sync::atomic::AtomicBool,
}

impl Issuer {
    /// Tokens issued so far.
    pub fn issued(&self) -> u32 {
        *self.issued.lock()
    }

    /// The token endpoint's answer to `body`.
    pub fn token(&self, body: &Value) -> Response {
        let given = |field: &str| body[field].as_str().filter(|v| !v.is_empty());
        // The grant, when the request is well formed: a refresh token or a code.
        let codex = given("client_id").is_some_and(|c| c.starts_with(CODEX_CLIENT));
        let google = given("client_id").is_some_and(|c| c.ends_with(GOOGLE_CLIENT));
        let grant = match body["grant_type"].as_str() {
            _ if given("client_id").is_none() => None,
            _ if google && given("client_secret").is_none() => None,
            // Google's refresh tokens last: a refresh spends nothing and rotates nothing.
            Some("refresh_token") if google && given("refresh_token").is_some_and(|t| !t.starts_with("revoked")) => {
                return Json(google_tokens(self.next(), false)).into_response();
            }
            Some("refresh_token") if codex && given("scope") != Some("openid profile email") => None,
            Some("refresh_token") => Some(given("refresh_token").filter(|t| !t.starts_with("revoked"))),
            Some("authorization_code") if given("code_verifier").is_some() && given("redirect_uri").is_some() => {
                Some(given("code").filter(|c| c.starts_with("fake-code")))
            }
            _ => None,
        };
        let Some(grant) = grant else {
            return refused(StatusCode::BAD_REQUEST, "invalid_request");
        };
        // Good once.
        if !grant.is_some_and(|g| self.spent.lock().insert(g.to_owned())) {
            return refused(StatusCode::BAD_REQUEST, "invalid_grant");
        }
        let n = self.next();
        if codex {
            return Json(codex_tokens(n)).into_response();
        }
        if google {
            return Json(google_tokens(n, true)).into_response();
        }
        Json(json!({
            "access_token": format!("sk-ant-oat01-fake-{n}"),
            "refresh_token": format!("sk-ant-ort01-fake-{n}"),
            "expires_in": 28_800,
            "token_type": "Bearer",
            "organization": {"uuid": CLAUDE_ORG, "name": "fake@example.test's Organization"},
        }))
        .into_response()
    }

    /// Counts one more token set issued; its number.
    fn next(&self) -> u32 {
        let mut issued = self.issued.lock();
        *issued += 1;
        *issued
    }

    /// The usage endpoint's `juniper_tide` block, asked at the wall: a
    /// reset is offered until it was claimed.
    pub fn reset_offer(&self) -> Value {
        let available = !self.reset_claimed.load(std::sync::atomic::Ordering::Relaxed);
        json!({"eligible": true, "arm": "reset", "available": available, "next_available_at": in_days(7)})
    }

    /// `POST …/api/organizations/{org}/reset_rate_limits`: a reset once a week.
    pub fn claim_reset(&self, path: &str, body: &Value) -> Response {
        let org = path.rsplit('/').nth(1).unwrap_or_default();
        if org != CLAUDE_ORG || body["program"] != "juniper_tide" {
            return (StatusCode::NOT_FOUND, Json(json!({"error": {"message": "no such organization or program"}})))
                .into_response();
        }
        if self.reset_claimed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return Json(json!({"result": "already_used", "next_available_at": in_days(7)})).into_response();
        }
        Json(json!({"result": "reset"})).into_response()
    }
}

/// `days` from now, as RFC 3339.
fn in_days(days: u64) -> String {
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    chrono_free_rfc3339(now_s + days * 86_400)
}

/// The `n`th token set issued to the Gemini CLI's client (a refresh token
/// only with a code).
fn google_tokens(n: u32, with_refresh: bool) -> Value {
    let mut set = json!({"access_token": format!("ya29.fake-{n}"), "expires_in": 3599, "token_type": "Bearer",
                         "scope": "https://www.googleapis.com/auth/cloud-platform"});
    if with_refresh {
        set["refresh_token"] = json!(format!("1//fake-google-{n}"));
    }
    set
}

/// The Code Assist project the fake sets a Gemini CLI account up with.
pub const CODE_ASSIST_PROJECT: &str = "fake-project-4242";

/// Google's Code Assist backend (`/v1internal:…`), but for generating:
/// the account is set up on its first `onboardUser` (until then
/// `loadCodeAssist` names no project); a generate call needs a bearer
/// token and the envelope with the account's project. `None`: generate.
pub fn code_assist(
    path: &str,
    headers: &HeaderMap,
    body: &Value,
    onboarded: &std::sync::atomic::AtomicBool,
) -> Option<Response> {
    use std::sync::atomic::Ordering::Relaxed;
    let method = path.strip_prefix("/v1internal:")?;
    if headers.get("authorization").and_then(|v| v.to_str().ok()).is_none_or(|v| !v.starts_with("Bearer ")) {
        return Some(google_error(StatusCode::UNAUTHORIZED, "Request had invalid authentication credentials."));
    }
    let answer = match method {
        "loadCodeAssist" if onboarded.load(Relaxed) => {
            json!({"currentTier": {"id": "free-tier"}, "cloudaicompanionProject": CODE_ASSIST_PROJECT})
        }
        "loadCodeAssist" => json!({"allowedTiers": [{"id": "free-tier", "isDefault": true}]}),
        "onboardUser" if body["tierId"] == "free-tier" => {
            onboarded.store(true, Relaxed);
            json!({"done": true, "response": {"cloudaicompanionProject": {"id": CODE_ASSIST_PROJECT}}})
        }
        "onboardUser" => return Some(google_error(StatusCode::BAD_REQUEST, "unknown tier")),
        // 20 % of the pro model's daily requests used, none of flash's.
        "retrieveUserQuota" if body["project"] == CODE_ASSIST_PROJECT => json!({"buckets": [
            {"modelId": "gemini-2.5-pro", "tokenType": "REQUESTS", "remainingFraction": 0.8, "resetTime": in_days(1)},
            {"modelId": "gemini-2.5-flash", "tokenType": "REQUESTS", "remainingFraction": 1.0, "resetTime": in_days(1)}]}),
        _ if body["project"] != CODE_ASSIST_PROJECT => {
            return Some(google_error(StatusCode::FORBIDDEN, "The caller does not have permission (project)"));
        }
        _ if !body["model"].is_string() || !body["request"]["contents"].is_array() => {
            return Some(google_error(StatusCode::BAD_REQUEST, "Invalid JSON payload: model and request.contents"));
        }
        _ => return None,
    };
    Some(Json(answer).into_response())
}

/// A generate answer's frames inside Code Assist's envelope.
pub fn code_assist_envelope(frames: Vec<bytes::Bytes>, streaming: bool) -> Vec<bytes::Bytes> {
    let wrap = |inner: &str| format!("{{\"response\":{inner},\"traceId\":\"fake-trace\"}}");
    if !streaming {
        let whole: String = frames.iter().map(|f| String::from_utf8_lossy(f)).collect();
        return vec![bytes::Bytes::from(wrap(&whole))];
    }
    frames
        .iter()
        .map(|f| {
            let text = String::from_utf8_lossy(f);
            let wrapped: String = text
                .split("\n\n")
                .filter(|e| !e.is_empty())
                .map(|e| match e.strip_prefix("data: ") {
                    Some(data) => format!("data: {}\n\n", wrap(data)),
                    None => format!("{e}\n\n"),
                })
                .collect();
            bytes::Bytes::from(wrapped)
        })
        .collect()
}

fn google_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": {"code": status.as_u16(), "message": message, "status": "FAILED"}}))).into_response()
}

/// The `n`th token set issued to the Codex CLI's client.
fn codex_tokens(n: u32) -> Value {
    let auth = json!({"chatgpt_account_id": CODEX_ACCOUNT, "chatgpt_plan_type": "pro"});
    let claims = json!({"sub": "user-fake", "n": n, "https://api.openai.com/auth": auth});
    json!({
        "access_token": jwt(&claims),
        "id_token": jwt(&json!({"email": "fake@example.test", "https://api.openai.com/auth": auth})),
        "refresh_token": format!("rt-codex-fake-{n}"),
        "expires_in": 28_800,
    })
}

/// An unsigned JWT carrying `claims`.
pub fn jwt(claims: &Value) -> String {
    use base64::Engine;
    let part = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.fake-signature", part(&json!({"alg": "RS256", "typ": "JWT"})), part(claims))
}

/// A form-encoded token request as the JSON object the issuer reads.
pub fn form(body: &[u8]) -> Value {
    Value::Object(form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), Value::from(v.into_owned()))).collect())
}

/// The parameters the Codex backend refuses.
const CODEX_REFUSES: [&str; 4] = ["max_output_tokens", "temperature", "top_p", "user"];

/// Why the Codex backend refuses a request, if it does.
pub fn codex_refusal(headers: &HeaderMap, body: &Value) -> Option<Response> {
    let token = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let detail = |status: StatusCode, why: String| Some((status, Json(json!({"detail": why}))).into_response());
    match token {
        None => return detail(StatusCode::UNAUTHORIZED, "Missing bearer token".into()),
        Some(t) if t.starts_with("expired") => {
            return detail(StatusCode::UNAUTHORIZED, "Your authentication token has expired.".into());
        }
        Some(_) => {}
    }
    if headers.get("chatgpt-account-id").is_none_or(|a| a != CODEX_ACCOUNT) {
        return detail(StatusCode::FORBIDDEN, "chatgpt-account-id does not match the token's account".into());
    }
    let why = if body["stream"] != json!(true) {
        "Stream must be set to true".to_owned()
    } else if body["store"] != json!(false) {
        "Store must be set to false".to_owned()
    } else if !body["instructions"].is_string() {
        "Instructions are required".to_owned()
    } else if let Some(p) = CODEX_REFUSES.iter().find(|p| body.get(**p).is_some()) {
        format!("Unsupported parameter: {p}")
    } else {
        return None;
    };
    detail(StatusCode::BAD_REQUEST, why)
}

/// The default answer of a usage endpoint at `path`, if it is one: Claude's
/// 12 % and 34 % used, Codex's 25 % and 50 % on a `pro` plan.
pub fn usage(path: &str) -> Option<Value> {
    let hour_s = 3600;
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if path.ends_with("/api/oauth/usage") {
        let at = |s: u64| chrono_free_rfc3339(now_s + s);
        return Some(json!({"five_hour": {"utilization": 12.0, "resets_at": at(2 * hour_s)},
                           "seven_day": {"utilization": 34.0, "resets_at": at(72 * hour_s)}}));
    }
    path.ends_with("/wham/usage").then(|| {
        json!({"plan_type": "pro", "rate_limit": {
            "primary_window": {"used_percent": 25, "limit_window_seconds": 18_000, "reset_after_seconds": 3 * hour_s},
            "secondary_window": {"used_percent": 50, "limit_window_seconds": 604_800, "reset_at": now_s + 96 * hour_s}}})
    })
}

/// `epoch_s` as RFC 3339 (UTC), without a date crate.
fn chrono_free_rfc3339(epoch_s: u64) -> String {
    let (days, rest) = (epoch_s / 86_400, epoch_s % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

fn refused(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({"error": error, "error_description": "the fake issuer refused the request"}))).into_response()
}

/// The first line of Claude Code's system prompt.
const IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// Why a subscription backend refuses a bearer token on Anthropic
/// Messages, if it does.
pub fn refusal(headers: &HeaderMap, body: &Value) -> Option<Response> {
    let token = headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ")?;
    let betas = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let unauthorized = if headers.contains_key("x-api-key") {
        Some("send the OAuth token or an API key, not both")
    } else if !betas.split(',').any(|b| b.trim() == OAUTH_BETA) {
        Some("OAuth authentication is currently not supported.")
    } else if token.starts_with("expired") {
        Some("OAuth token has expired. Please obtain a new token or refresh your existing token.")
    } else {
        None
    };
    if let Some(why) = unauthorized {
        let body = json!({"type": "error", "error": {"type": "authentication_error", "message": why}});
        return Some((StatusCode::UNAUTHORIZED, Json(body)).into_response());
    }
    let opens = body["system"][0]["text"].as_str().or_else(|| body["system"].as_str());
    if opens.is_some_and(|s| s.starts_with(IDENTITY)) {
        return None;
    }
    let message =
        "This credential is only authorized for use with Claude Code and cannot be used for other API requests.";
    let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
    Some((StatusCode::BAD_REQUEST, Json(body)).into_response())
}
