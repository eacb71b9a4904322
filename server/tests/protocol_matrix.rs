//! Every client protocol × every upstream protocol, JSON and stream, with
//! a tool round trip (SPEC §P, issue [B]): the client asks with a tool,
//! the upstream (fake-upstream, in its own protocol) calls it, the client
//! sees the call in its protocol, answers with the result, and the
//! upstream receives that result in its protocol; then the final text
//! comes back. 4 client protocols × 4 upstream protocols × 2 modes.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod common;

use common::{
    Gateway,
    clients::{Client, UPSTREAMS, Upstream, base_url, post, text},
    sse_events as events,
};
use fake_upstream::{CALL_ID, DEFAULT_CONTENT, FakeUpstream, Rule, ToolCall};
use serde_json::{Value, json};

fn args() -> Value {
    json!({"city": "Paris", "units": "metric"})
}

fn first_request(client: Client, model: &str, stream: bool) -> Value {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}}});
    let ask = "Weather in Paris?";
    match client {
        Client::Chat => json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": ask}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": schema}}]}),
        Client::Messages => json!({"model": model, "stream": stream, "max_tokens": 256,
            "messages": [{"role": "user", "content": ask}],
            "tools": [{"name": "get_weather", "description": "Weather now", "input_schema": schema}]}),
        Client::Responses => json!({"model": model, "stream": stream, "input": [{"role": "user", "content": ask}],
            "tools": [{"type": "function", "name": "get_weather", "description": "Weather now", "parameters": schema}]}),
        // The model and streaming are in the URL (see `send`).
        Client::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": ask}]}],
            "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather now", "parameters": schema}]}]}),
    }
}

/// The first request plus the assistant's call and the tool's result.
fn second_request(client: Client, model: &str, stream: bool, id: &str) -> Value {
    let mut body = first_request(client, model, stream);
    let (key, turns) = match client {
        Client::Chat => (
            "messages",
            vec![
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "get_weather", "arguments": args().to_string()}}]}),
                json!({"role": "tool", "tool_call_id": id, "content": "18C"}),
            ],
        ),
        Client::Messages => (
            "messages",
            vec![
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "get_weather", "input": args()}]}),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "18C"}]}),
            ],
        ),
        Client::Responses => (
            "input",
            vec![
                json!({"type": "function_call", "call_id": id, "name": "get_weather", "arguments": args().to_string()}),
                json!({"type": "function_call_output", "call_id": id, "output": "18C"}),
            ],
        ),
        Client::Gemini => (
            "contents",
            vec![
                json!({"role": "model", "parts": [{"functionCall": {"id": id, "name": "get_weather", "args": args()}}]}),
                json!({"role": "user", "parts": [{"functionResponse": {"id": id, "name": "get_weather", "response": {"output": "18C"}}}]}),
            ],
        ),
    };
    body[key].as_array_mut().unwrap().extend(turns);
    body
}

async fn send(gw: &Gateway, client: Client, model: &str, stream: bool, body: &Value) -> reqwest::Response {
    let resp = post(gw, client, model, stream, body).await;
    assert_eq!(resp.status(), 200, "{client:?} {body}");
    resp
}

/// The tool call the client received: (id, name, arguments).
async fn tool_call(client: Client, stream: bool, resp: reqwest::Response) -> (String, String, Value) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if !stream {
        let b: Value = resp.json().await.unwrap();
        return match client {
            Client::Chat => {
                assert_eq!(b["choices"][0]["finish_reason"], "tool_calls");
                let c = &b["choices"][0]["message"]["tool_calls"][0];
                (
                    s(&c["id"]),
                    s(&c["function"]["name"]),
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap(),
                )
            }
            Client::Messages => {
                assert_eq!(b["stop_reason"], "tool_use");
                let c = b["content"].as_array().unwrap().iter().find(|c| c["type"] == "tool_use").unwrap().clone();
                (s(&c["id"]), s(&c["name"]), c["input"].clone())
            }
            Client::Responses => {
                let c = b["output"].as_array().unwrap().iter().find(|c| c["type"] == "function_call").unwrap().clone();
                (s(&c["call_id"]), s(&c["name"]), serde_json::from_str(c["arguments"].as_str().unwrap()).unwrap())
            }
            Client::Gemini => gemini_call(&b),
        };
    }
    let evs = events(resp).await;
    match client {
        Client::Chat => {
            let calls: Vec<&Value> =
                evs.iter().filter_map(|(_, d)| d["choices"][0]["delta"]["tool_calls"].get(0)).collect();
            let arguments: String = calls.iter().filter_map(|c| c["function"]["arguments"].as_str()).collect();
            assert!(evs.iter().any(|(_, d)| d["choices"][0]["finish_reason"] == "tool_calls"));
            (s(&calls[0]["id"]), s(&calls[0]["function"]["name"]), serde_json::from_str(&arguments).unwrap())
        }
        Client::Messages => {
            let start =
                evs.iter().find(|(_, d)| d["content_block"]["type"] == "tool_use").unwrap_or_else(|| panic!("{evs:?}"));
            let arguments: String = evs.iter().filter_map(|(_, d)| d["delta"]["partial_json"].as_str()).collect();
            assert!(evs.iter().any(|(_, d)| d["delta"]["stop_reason"] == "tool_use"));
            (
                s(&start.1["content_block"]["id"]),
                s(&start.1["content_block"]["name"]),
                serde_json::from_str(&arguments).unwrap(),
            )
        }
        Client::Responses => {
            let done = evs
                .iter()
                .find(|(e, d)| {
                    e.as_deref() == Some("response.output_item.done") && d["item"]["type"] == "function_call"
                })
                .unwrap_or_else(|| panic!("no function_call item done: {evs:?}"));
            let deltas: String = evs
                .iter()
                .filter(|(e, _)| e.as_deref() == Some("response.function_call_arguments.delta"))
                .filter_map(|(_, d)| d["delta"].as_str())
                .collect();
            let item = &done.1["item"];
            assert_eq!(item["arguments"].as_str().unwrap(), deltas, "the done item repeats the deltas");
            assert_eq!(evs.last().unwrap().0.as_deref(), Some("response.completed"));
            (s(&item["call_id"]), s(&item["name"]), serde_json::from_str(&deltas).unwrap())
        }
        Client::Gemini => {
            let chunk =
                evs.iter().find(|(_, d)| d["candidates"][0]["content"]["parts"][0].get("functionCall").is_some());
            gemini_call(&chunk.unwrap_or_else(|| panic!("no functionCall chunk: {evs:?}")).1)
        }
    }
}

/// The (id, name, args) of the first functionCall part of a Gemini answer.
fn gemini_call(b: &Value) -> (String, String, Value) {
    let part = b["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p.get("functionCall"))
        .unwrap()
        .clone();
    (part["id"].as_str().unwrap().to_owned(), part["name"].as_str().unwrap().to_owned(), part["args"].clone())
}

/// The final text the client received.
/// The tool result as the upstream received it, in its protocol.
fn result_upstream_saw(fake: &FakeUpstream, up: &Upstream) -> Value {
    let r = fake.requests().into_iter().rev().find(|r| r.path.starts_with(up.path)).unwrap();
    let body: Value = serde_json::from_str(&r.body).unwrap();
    let find = |list: &Value, pred: &dyn Fn(&Value) -> bool| list.as_array().unwrap().iter().find(|v| pred(v)).cloned();
    match up.provider {
        "openai" => find(&body["messages"], &|m| m["role"] == "tool").unwrap(),
        "anthropic" => body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .find(|c| c["type"] == "tool_result")
            .unwrap(),
        "openai-responses" => find(&body["input"], &|i| i["type"] == "function_call_output").unwrap(),
        _ => body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .find(|p| p.get("functionResponse").is_some())
            .unwrap(),
    }
}

/// What the upstream must have received (a same-protocol request passes
/// through verbatim, so there it is the client's own shape).
fn expected_result(client: Client, provider: &str, id: &str) -> Value {
    match provider {
        "openai" => json!({"role": "tool", "tool_call_id": id, "content": "18C"}),
        "anthropic" if matches!(client, Client::Messages) => {
            json!({"type": "tool_result", "tool_use_id": id, "content": "18C"})
        }
        "anthropic" => {
            json!({"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "18C"}], "is_error": false})
        }
        "openai-responses" => json!({"type": "function_call_output", "call_id": id, "output": "18C"}),
        "gemini" if matches!(client, Client::Gemini) => {
            json!({"functionResponse": {"id": id, "name": "get_weather", "response": {"output": "18C"}}})
        }
        _ => json!({"functionResponse": {"id": id, "name": "get_weather", "response": {"output": "18C"}}}),
    }
}

#[tokio::test]
async fn every_client_protocol_round_trips_a_tool_call_through_every_upstream_protocol() {
    let fake = FakeUpstream::start().await.unwrap();
    let gw = Gateway::start().await;
    for up in &UPSTREAMS {
        let base = base_url(&fake, up.provider);
        gw.add_connection(up.provider, up.provider, &format!("key-{}", up.provider), &base, 0).await;
    }
    let mut pairs = 0;
    for client in [Client::Chat, Client::Messages, Client::Responses, Client::Gemini] {
        for up in &UPSTREAMS {
            for stream in [false, true] {
                let case = format!("{client:?} → {} ({})", up.provider, if stream { "stream" } else { "json" });
                fake.push_rule(Rule {
                    path: Some(up.path.into()),
                    times: Some(1),
                    tool_call: Some(ToolCall { name: "get_weather".into(), arguments: args() }),
                    ..Default::default()
                });
                let resp = send(&gw, client, up.model, stream, &first_request(client, up.model, stream)).await;
                let (id, name, arguments) = tool_call(client, stream, resp).await;
                assert_eq!((id.as_str(), name.as_str(), &arguments), (CALL_ID, "get_weather", &args()), "{case}");

                let resp = send(&gw, client, up.model, stream, &second_request(client, up.model, stream, &id)).await;
                assert_eq!(text(client, stream, resp).await, DEFAULT_CONTENT, "{case}");
                assert_eq!(result_upstream_saw(&fake, up), expected_result(client, up.provider, &id), "{case}");
                pairs += 1;
            }
        }
    }
    assert_eq!(pairs, 32);
    gw.stop().await;
}
