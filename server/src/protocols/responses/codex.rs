//! The Responses dialect of ChatGPT's Codex backend, which serves ChatGPT
//! subscriptions. It takes a narrower request than the public API: it
//! always streams (`stream: true`), stores nothing (`store: false`),
//! wants `instructions` and a list of `input` items, and refuses some of
//! the public API's parameters outright (token limits, sampling knobs,
//! `user`…) with a 400. A request, passed through from Codex CLI or
//! written by the translator, is narrowed here just before it is sent;
//! a client that did not ask for a stream gets the events [`gather`]ed
//! into the answer the public API would have given.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::protocols::sse::SseReader;

/// What the backend refuses with `400 Unsupported parameter`.
const REFUSED: [&str; 9] = [
    "max_output_tokens",
    "max_tokens",
    "temperature",
    "top_p",
    "truncation",
    "background",
    "user",
    "safety_identifier",
    "prompt_cache_retention",
];

/// Instructions for a request that has none (the backend requires them).
const NO_INSTRUCTIONS: &str = "Follow the instructions in the conversation.";

/// `body` (a Responses request) as the Codex backend takes it; as is when
/// it is not a JSON object.
pub fn for_codex(body: Bytes) -> Bytes {
    let Ok(Value::Object(mut o)) = serde_json::from_slice::<Value>(&body) else { return body };
    o.insert("stream".into(), json!(true));
    o.insert("store".into(), json!(false));
    for name in REFUSED {
        o.remove(name);
    }
    if o.get("instructions").and_then(Value::as_str).is_none_or(|i| i.trim().is_empty()) {
        o.insert("instructions".into(), json!(NO_INSTRUCTIONS));
    }
    match o.get_mut("input") {
        Some(Value::String(text)) => {
            let text = std::mem::take(text);
            o.insert("input".into(), json!([user_message(&text)]));
        }
        // System messages go as developer ones, which the backend takes.
        Some(Value::Array(items)) => {
            for item in items.iter_mut().filter(|i| i["role"] == "system") {
                item["role"] = json!("developer");
            }
        }
        _ => {}
    }
    serde_json::to_vec(&o).map_or(body, Bytes::from)
}

fn user_message(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// The answer a whole Codex event stream (`sse`) carries: the response of
/// its `response.completed` event, its output filled from the items the
/// stream closed when the event leaves it empty. An error event, a failed
/// or incomplete response, or a stream without its end is an error.
pub fn gather(sse: &[u8]) -> Result<Bytes, String> {
    let events = SseReader::default().feed(sse).map_err(|e| e.to_string())?;
    let mut items = Vec::new();
    for ev in events {
        let Ok(data) = serde_json::from_str::<Value>(&ev.data) else { continue };
        match data["type"].as_str().unwrap_or_default() {
            "response.output_item.done" => items.push(data["item"].clone()),
            "response.completed" => {
                let mut response = data["response"].clone();
                if response["output"].as_array().is_none_or(Vec::is_empty) {
                    response["output"] = Value::Array(items);
                }
                return Ok(Bytes::from(response.to_string()));
            }
            kind @ ("response.failed" | "response.incomplete" | "error") => {
                let error = &data["response"]["error"];
                let message = error["message"].as_str().or(data["message"].as_str()).unwrap_or("no message");
                return Err(format!("the upstream stream ended with {kind}: {message}"));
            }
            _ => {}
        }
    }
    Err("the upstream stream ended before response.completed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shaped(body: Value) -> Value {
        serde_json::from_slice(&for_codex(Bytes::from(body.to_string()))).unwrap_or_default()
    }

    #[test]
    fn a_request_is_narrowed_to_what_the_backend_takes() {
        let body = json!({"model": "gpt-5-codex", "input": "hi", "stream": false, "store": true,
                          "max_output_tokens": 64, "temperature": 0.2, "user": "u", "tools": []});
        let out = shaped(body);
        assert_eq!((&out["stream"], &out["store"]), (&json!(true), &json!(false)));
        assert_eq!(out["input"], json!([user_message("hi")]));
        assert_eq!(out["instructions"], NO_INSTRUCTIONS);
        for gone in ["max_output_tokens", "temperature", "user"] {
            assert!(out.get(gone).is_none(), "{gone} is refused by the backend: {out}");
        }
        assert_eq!(out["tools"], json!([]), "the rest stays");
        let body =
            json!({"instructions": "Be brief.", "input": [{"type": "message", "role": "system", "content": "x"}]});
        let out = shaped(body);
        assert_eq!(
            (out["instructions"].as_str(), out["input"][0]["role"].as_str()),
            (Some("Be brief."), Some("developer"))
        );
        assert_eq!(for_codex(Bytes::from_static(b"[1]")), Bytes::from_static(b"[1]"));
    }

    fn event(data: Value) -> String {
        format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap_or_default())
    }

    #[test]
    fn a_stream_is_gathered_into_its_completed_response() {
        let item = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]});
        let stream = [
            event(json!({"type": "response.created", "response": {"id": "r1"}})),
            event(json!({"type": "response.output_item.done", "item": item})),
            event(json!({"type": "response.completed", "response": {"id": "r1", "output": [], "usage": {"input_tokens": 3}}})),
        ]
        .concat();
        let answer: Value = serde_json::from_slice(&gather(stream.as_bytes()).unwrap_or_default()).unwrap_or_default();
        assert_eq!(answer["output"], json!([item]), "the closed items fill an empty output");
        assert_eq!(answer["usage"]["input_tokens"], 3);
        let failed = event(json!({"type": "response.failed", "response": {"error": {"message": "overloaded"}}}));
        assert!(gather(failed.as_bytes()).is_err_and(|e| e.contains("overloaded")));
        let cut = event(json!({"type": "response.created", "response": {"id": "r1"}}));
        assert!(gather(cut.as_bytes()).is_err_and(|e| e.contains("before response.completed")));
    }
}
