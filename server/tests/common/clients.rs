//! The four client protocols and the four upstream providers the
//! protocol tests pair up: how to send a request in each, and how to read
//! the text of an answer in each.

use super::{Gateway, sse_events as events};
use serde_json::Value;

/// An SSE stream's events: `(event name, data)`.
pub type Events = [(Option<String>, Value)];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    Chat,
    Messages,
    Responses,
    Gemini,
}

/// An upstream: its provider, model address, and the fake's path for it.
pub struct Upstream {
    pub provider: &'static str,
    pub model: &'static str,
    pub path: &'static str,
}

pub const UPSTREAMS: [Upstream; 4] = [
    Upstream { provider: "openai", model: "openai/gpt-4o-mini", path: "/v1/chat/completions" },
    Upstream { provider: "anthropic", model: "anthropic/claude-sonnet-4", path: "/v1/messages" },
    Upstream { provider: "openai-responses", model: "openai-responses/gpt-5", path: "/v1/responses" },
    Upstream { provider: "gemini", model: "gemini/gemini-2.5-flash", path: "/v1beta/models/gemini-2.5-flash" },
];

/// Sends `body` on the client protocol's endpoint.
pub async fn post(gw: &Gateway, client: Client, model: &str, stream: bool, body: &Value) -> reqwest::Response {
    let path = match (client, stream) {
        (Client::Chat, _) => "/v1/chat/completions".to_owned(),
        (Client::Messages, _) => "/v1/messages".to_owned(),
        (Client::Responses, _) => "/v1/responses".to_owned(),
        (Client::Gemini, false) => format!("/v1beta/models/{model}:generateContent"),
        (Client::Gemini, true) => format!("/v1beta/models/{model}:streamGenerateContent?alt=sse"),
    };
    gw.http.post(format!("{}{path}", gw.url)).json(body).send().await.unwrap()
}

/// The assistant text of an answer, JSON or stream.
pub async fn text(client: Client, stream: bool, resp: reqwest::Response) -> String {
    if !stream {
        let b: Value = resp.json().await.unwrap();
        return match client {
            Client::Chat => b["choices"][0]["message"]["content"].as_str().unwrap().to_owned(),
            Client::Messages => b["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect(),
            Client::Responses => b["output"][0]["content"][0]["text"].as_str().unwrap().to_owned(),
            Client::Gemini => gemini_text(&b),
        };
    }
    let evs = events(resp).await;
    match client {
        Client::Chat => evs.iter().filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str()).collect(),
        Client::Messages => evs.iter().filter_map(|(_, d)| d["delta"]["text"].as_str()).collect(),
        Client::Responses => evs
            .iter()
            .filter(|(e, _)| e.as_deref() == Some("response.output_text.delta"))
            .filter_map(|(_, d)| d["delta"].as_str())
            .collect(),
        Client::Gemini => evs.iter().map(|(_, d)| gemini_text(d)).collect(),
    }
}

pub fn gemini_text(b: &Value) -> String {
    b["candidates"][0]["content"]["parts"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect()
}

/// The base URL a provider's connection uses on the fake.
pub fn base_url(fake: &fake_upstream::FakeUpstream, provider: &str) -> String {
    match provider {
        "anthropic" => fake.url(),
        "gemini" => format!("{}/v1beta", fake.url()),
        _ => format!("{}/v1", fake.url()),
    }
}

/// A one-line question in the client's protocol.
pub fn ask(client: Client, model: &str, stream: bool) -> Value {
    let q = "Say hello";
    match client {
        Client::Chat => {
            serde_json::json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": q}]})
        }
        Client::Messages => serde_json::json!({"model": model, "stream": stream, "max_tokens": 64,
            "messages": [{"role": "user", "content": q}]}),
        Client::Responses => serde_json::json!({"model": model, "stream": stream, "input": q}),
        Client::Gemini => serde_json::json!({"contents": [{"role": "user", "parts": [{"text": q}]}]}),
    }
}

/// How many frames of the fake's stream for `up` come before its first
/// model output: metadata (a role chunk, `message_start`,
/// `response.created`, …), which does not commit a stream.
pub fn leading_metadata(up: &Upstream) -> u32 {
    match up.provider {
        "openai" => 1,
        "anthropic" => 2,
        "openai-responses" => 3,
        _ => 0,
    }
}

/// Every client protocol.
pub const CLIENTS: [Client; 4] = [Client::Chat, Client::Messages, Client::Responses, Client::Gemini];

/// Every client protocol with the upstream that speaks it.
pub fn same_protocol_pairs() -> [(Client, &'static Upstream); 4] {
    [
        (Client::Chat, &UPSTREAMS[0]),
        (Client::Messages, &UPSTREAMS[1]),
        (Client::Responses, &UPSTREAMS[2]),
        (Client::Gemini, &UPSTREAMS[3]),
    ]
}

/// Whether the last event is the client protocol's error event.
pub fn ends_with_error_event(client: Client, events: &Events) -> bool {
    let Some((event, data)) = events.last() else { return false };
    match client {
        Client::Chat | Client::Gemini => data.get("error").is_some(),
        Client::Messages => event.as_deref() == Some("error") && data["type"] == "error",
        Client::Responses => data["type"] == "response.failed",
    }
}

/// Whether a client's stream (`raw`, read as `events`) carries its
/// protocol's normal end.
pub fn ends_normally(client: Client, events: &Events, raw: &str) -> bool {
    match client {
        Client::Chat => {
            raw.contains("data: [DONE]") || events.iter().any(|(_, d)| d["choices"][0]["finish_reason"].is_string())
        }
        Client::Messages => events.iter().any(|(e, _)| e.as_deref() == Some("message_stop")),
        Client::Responses => events.iter().any(|(_, d)| d["type"] == "response.completed"),
        Client::Gemini => events.iter().any(|(_, d)| d["candidates"][0]["finishReason"].is_string()),
    }
}
