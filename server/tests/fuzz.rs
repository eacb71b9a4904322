//! Property-based fuzzing of everything that reads outside input: the SSE
//! reader, each protocol's request reader (and its translation to every
//! other protocol), each stream translator, the settings PATCH, retry-hint
//! parsing and the error classifier. The property is the same everywhere:
//! any input gives an answer (a value or a clean error), never a panic,
//! and a reader never keeps more than its bound.
//!
//! The inputs are JSON documents built from the protocols' own field
//! names (so the readers get past their first checks) mixed with random
//! text and bytes. `PROPTEST_CASES` sets the run length (256 by default,
//! the short run of `cargo xtask test`); a failure prints the seed that
//! replays it (`docs/testing.md`).
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

use app::types::{
    Protocol,
    settings::{ConnectionCooldownProfile, ResilienceSettings, apply_patch},
};
use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{Map, Value};
use server::{
    protocols::{
        sse::{MAX_EVENT_BYTES, SseReader},
        translate::{StreamTranslator, read_request},
    },
    proxy::request::ClientRequest,
    resilience::{
        classify::{Failure, classify},
        retry_hints,
    },
};

const PROTOCOLS: [Protocol; 4] = [Protocol::OpenaiChat, Protocol::Anthropic, Protocol::Responses, Protocol::Gemini];

/// Field names of the four protocols, so generated documents look enough
/// like requests and stream events to reach the deep code.
const KEYS: &[&str] = &[
    "model",
    "messages",
    "role",
    "content",
    "type",
    "text",
    "stream",
    "max_tokens",
    "system",
    "tools",
    "tool_calls",
    "tool_choice",
    "function",
    "name",
    "arguments",
    "input",
    "id",
    "tool_use_id",
    "call_id",
    "image_url",
    "url",
    "source",
    "data",
    "media_type",
    "contents",
    "parts",
    "functionCall",
    "functionResponse",
    "inlineData",
    "delta",
    "choices",
    "index",
    "finish_reason",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "message",
    "content_block",
    "thinking",
    "reasoning",
    "output",
    "item",
    "response",
    "error",
    "candidates",
    "generationConfig",
    "instructions",
    "metadata",
    "stop_reason",
];
const EVENTS: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "response.created",
    "response.output_text.delta",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.completed",
    "response.failed",
];
const WORDS: &[&str] = &[
    "user",
    "assistant",
    "system",
    "tool",
    "developer",
    "text",
    "image",
    "tool_use",
    "tool_result",
    "function",
    "function_call",
    "function_call_output",
    "message",
    "thinking",
    "output_text",
    "input_text",
    "base64",
    "stop",
    "length",
    "tool_calls",
    "end_turn",
    "[DONE]",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(WORDS).prop_map(Value::from),
        "\\PC{0,24}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..7).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![4 => prop::sample::select(KEYS).prop_map(str::to_owned), 1 => "[a-zA-Z_]{1,12}"]
}

/// A request-shaped object: a model and a few protocol fields.
fn request_doc() -> impl Strategy<Value = Value> {
    (prop::collection::vec((key(), json_value()), 0..8), any::<bool>()).prop_map(|(fields, stream)| {
        let mut doc: Map<String, Value> = fields.into_iter().collect();
        doc.insert("model".into(), Value::from("fake-model"));
        doc.entry("stream").or_insert(Value::Bool(stream));
        Value::Object(doc)
    })
}

/// One upstream stream chunk: an SSE frame around a JSON document, or
/// raw bytes.
fn stream_chunk() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (prop::option::of(prop::sample::select(EVENTS)), json_value()).prop_map(|(event, data)| {
            let event = event.map(|e| format!("event: {e}\n")).unwrap_or_default();
            format!("{event}data: {data}\n\n").into_bytes()
        }),
        1 => Just(b"data: [DONE]\n\n".to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn protocol() -> impl Strategy<Value = Protocol> {
    prop::sample::select(&PROTOCOLS[..])
}

/// An upstream and a different client protocol.
fn translation() -> impl Strategy<Value = (Protocol, Protocol)> {
    (0usize..4, 1usize..4).prop_map(|(up, step)| (PROTOCOLS[up], PROTOCOLS[(up + step) % 4]))
}

proptest! {
    #[test]
    fn the_sse_reader_takes_any_bytes_in_any_chunks(bytes in prop::collection::vec(any::<u8>(), 0..2048), cuts in prop::collection::vec(0usize..2048, 0..8)) {
        let mut reader = SseReader::default();
        let mut cuts = cuts;
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut at = 0;
        for cut in cuts {
            let cut = cut.min(bytes.len());
            if let Ok(events) = reader.feed(&bytes[at..cut]) {
                for e in events {
                    prop_assert!(e.data.len() <= MAX_EVENT_BYTES);
                }
            }
            at = cut.max(at);
        }
        let _ = reader.finish();
    }

    #[test]
    fn every_request_reader_answers_any_document(p in protocol(), doc in request_doc(), target in protocol()) {
        let _ = read_request(p, &doc);
        let body = Bytes::from(doc.to_string());
        let parsed = if p == Protocol::Gemini {
            ClientRequest::parse_gemini(body, "fake-model", false, &HeaderMap::new())
        } else {
            ClientRequest::parse(p, body, &HeaderMap::new())
        };
        if let Ok(req) = parsed {
            let _ = req.body_for(target, "fake-model");
        }
    }

    #[test]
    fn request_readers_answer_any_bytes(p in protocol(), bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = ClientRequest::parse(p, Bytes::from(bytes), &HeaderMap::new());
    }

    #[test]
    fn every_stream_translator_takes_any_events((up, client) in translation(), chunks in prop::collection::vec(stream_chunk(), 0..12), end in 0u8..3) {
        let mut t = StreamTranslator::new(up, client, 0);
        for c in &chunks {
            if t.chunk(c).is_err() {
                break;
            }
        }
        match end {
            0 => { let _ = t.finish(); }
            1 => { let _ = t.fail("upstream went away"); }
            _ => {}
        }
        let _ = t.usage();
    }

    #[test]
    fn a_settings_patch_is_refused_or_valid(patch in json_value()) {
        let current = ResilienceSettings::default();
        if let Ok(next) = apply_patch(&current, &patch, &[]) {
            prop_assert!(next.validate().is_ok());
        }
    }

    #[test]
    fn a_settings_patch_of_known_fields_is_refused_or_valid(fields in prop::collection::vec((prop::sample::select(SETTINGS_PATHS), json_value()), 1..4)) {
        let mut patch = Value::Object(Map::new());
        for (path, value) in fields {
            app::types::settings::set_path(&mut patch, path, value);
        }
        if let Ok(next) = apply_patch(&ResilienceSettings::default(), &patch, &[]) {
            prop_assert!(next.validate().is_ok());
        }
    }

    #[test]
    fn retry_hints_parse_any_text(text in "\\PC{0,64}", body in "\\PC{0,256}", now in 0i64..4_000_000_000_000) {
        let _ = retry_hints::parse_retry_after(&text, now);
        let _ = retry_hints::from_body(&body, now);
        let mut headers = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(&text) {
            for name in ["retry-after", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens", "retry-after-ms"] {
                headers.insert(name, v.clone());
            }
        }
        let _ = retry_hints::from_headers(&headers, now);
    }

    #[test]
    fn the_classifier_gives_a_verdict_for_any_failure(status in prop::option::of(any::<u16>()), body in "\\PC{0,200}", retry in "\\PC{0,20}", level in 0u32..64, base in 0u64..600_000, steps in 0u64..30) {
        let mut headers = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(&retry) {
            headers.insert("retry-after", v);
        }
        let profile = ConnectionCooldownProfile {
            base_cooldown_ms: base,
            use_upstream_retry_hints: true,
            max_backoff_steps: steps,
        };
        let f = Failure { status, headers: &headers, body: &body, backoff_level: level, profile: &profile, max_cooldown_ms: 3_600_000, rule: None, now_ms: 1_767_225_600_000 };
        let v = classify(&f);
        prop_assert!(v.cooldown_ms <= 8 * 24 * 3_600_000, "{v:?}");
    }
}

/// Settings fields a PATCH may name (a sample across the groups).
const SETTINGS_PATHS: &[&str] = &[
    "requestQueue.maxWaitMs",
    "requestQueue.requestsPerMinute",
    "requestQueue.maxQueueDepth",
    "connectionCooldown.apikey.baseCooldownMs",
    "connectionCooldown.oauth.maxBackoffSteps",
    "providerBreaker.apikey.failureThreshold",
    "providerBreaker.local.degradationThreshold",
    "providerCooldown.enabled",
    "modelLockout.errorCodes",
    "modelLockout.maxCooldownMs",
    "comboCooldownWait.budgetMs",
    "streamRecovery.throughputWatchdog.windowMs",
    "sessionAffinityTtlMs",
    "providerErrorRules",
    "egressIpLockProviders",
    "requireApiKey",
];
