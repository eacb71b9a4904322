//! The identity a Claude subscription's token requires: Anthropic serves
//! Claude Pro/Max tokens only to requests whose system prompt opens with
//! Claude Code's own first line. Claude Code sends it; for every other
//! client the gateway puts it first, as its own system block, before the
//! client's system prompt (which stays whole).

use bytes::Bytes;
use serde_json::{Value, json};

/// The first line of Claude Code's system prompt.
pub const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// `body` (an Anthropic Messages request) with the identity as its first
/// system block; as is when it already opens with it or is not JSON.
pub fn with_identity(body: Bytes) -> Bytes {
    let Ok(mut request) = serde_json::from_slice::<Value>(&body) else { return body };
    let identity = json!({"type": "text", "text": CLAUDE_CODE_IDENTITY});
    let system = match request.get_mut("system").map(Value::take) {
        None | Some(Value::Null) => vec![identity],
        Some(Value::String(text)) if text.starts_with(CLAUDE_CODE_IDENTITY) => return body,
        Some(Value::String(text)) => vec![identity, json!({"type": "text", "text": text})],
        Some(Value::Array(blocks)) => {
            let opens =
                blocks.first().and_then(|b| b["text"].as_str()).is_some_and(|t| t.starts_with(CLAUDE_CODE_IDENTITY));
            if opens {
                return body;
            }
            std::iter::once(identity).chain(blocks).collect()
        }
        Some(_) => return body,
    };
    request["system"] = Value::Array(system);
    serde_json::to_vec(&request).map_or(body, Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system_of(body: &str) -> Value {
        serde_json::from_slice::<Value>(&with_identity(Bytes::from(body.to_owned()))).unwrap()["system"].clone()
    }

    #[test]
    fn the_identity_opens_the_system_prompt_once_and_the_clients_prompt_stays_whole() {
        let id = json!({"type": "text", "text": CLAUDE_CODE_IDENTITY});
        assert_eq!(system_of(r#"{"messages":[]}"#), json!([id]));
        assert_eq!(system_of(r#"{"system":"Be terse."}"#), json!([id, {"type": "text", "text": "Be terse."}]));
        let blocks = r#"{"system":[{"type":"text","text":"Be terse.","cache_control":{"type":"ephemeral"}}]}"#;
        assert_eq!(
            system_of(blocks),
            json!([id, {"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}])
        );
        let claude_code = format!(
            r#"{{"system":[{{"type":"text","text":"{CLAUDE_CODE_IDENTITY}"}},{{"type":"text","text":"more"}}]}}"#
        );
        assert_eq!(
            with_identity(Bytes::from(claude_code.clone())),
            Bytes::from(claude_code),
            "Claude Code's own body is sent as is"
        );
    }
}
