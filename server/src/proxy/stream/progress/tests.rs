//! What each protocol's events mean for the watchdogs, and where an answer ends.

use super::*;

fn ev(event: Option<&str>, data: &str) -> SseEvent {
    SseEvent { event: event.map(str::to_owned), data: data.to_owned() }
}

#[test]
fn chat_chunks() {
    let p = |d| of(Protocol::OpenaiChat, &ev(None, d), &mut Counts::default()).0;
    assert_eq!(p(r#"{"choices":[{"delta":{"role":"assistant"}}]}"#), Progress::Meta);
    assert_eq!(p(r#"{"choices":[{"delta":{"content":"héllo"}}]}"#), Progress::Output(6));
    assert_eq!(p(r#"{"choices":[{"delta":{"content":""}}]}"#), Progress::Meta);
    assert_eq!(p(r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#), Progress::ToolCall);
    assert_eq!(p(r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#), Progress::Reasoning);
    assert_eq!(p(r#"{"choices":[],"usage":{"prompt_tokens":3}}"#), Progress::Meta);
    assert_eq!(p(r#"{"error":{"message":"overloaded"}}"#), Progress::Error("overloaded".into()));
    assert_eq!(p("[DONE]"), Progress::Meta);
    assert_eq!(p(""), Progress::Keepalive);
}

#[test]
fn anthropic_events() {
    let p = |e, d| of(Protocol::Anthropic, &ev(Some(e), d), &mut Counts::default()).0;
    assert_eq!(p("ping", r#"{"type":"ping"}"#), Progress::Keepalive);
    assert_eq!(p("message_start", r#"{"type":"message_start","message":{}}"#), Progress::Meta);
    let text = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#;
    assert_eq!(p("content_block_delta", text), Progress::Output(2));
    let thinking = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#;
    assert_eq!(p("content_block_delta", thinking), Progress::Reasoning, "even empty thinking is progress");
    let tool = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t"}}"#;
    assert_eq!(p("content_block_start", tool), Progress::ToolCall);
    let err = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(p("error", err), Progress::Error("Overloaded".into()));
}

#[test]
fn responses_and_gemini_events() {
    let r = |d| of(Protocol::Responses, &ev(None, d), &mut Counts::default()).0;
    assert_eq!(r(r#"{"type":"response.created","response":{}}"#), Progress::Meta);
    assert_eq!(r(r#"{"type":"response.output_text.delta","delta":"abc"}"#), Progress::Output(3));
    assert_eq!(r(r#"{"type":"response.reasoning_summary_text.delta","delta":""}"#), Progress::Reasoning);
    assert_eq!(r(r#"{"type":"response.output_item.added","item":{"type":"reasoning"}}"#), Progress::Reasoning);
    let failed = r#"{"type":"response.failed","response":{"error":{"message":"boom"}}}"#;
    assert_eq!(r(failed), Progress::Error("boom".into()));
    let g = |d| of(Protocol::Gemini, &ev(None, d), &mut Counts::default()).0;
    assert_eq!(g(r#"{"candidates":[{"content":{"parts":[{"text":"yo"}]}}]}"#), Progress::Output(2));
    assert_eq!(g(r#"{"candidates":[{"content":{"parts":[{"text":"x","thought":true}]}}]}"#), Progress::Reasoning);
    assert_eq!(g(r#"{"usageMetadata":{"promptTokenCount":1}}"#), Progress::Meta);
}

#[test]
fn a_watch_reads_events_across_chunks() {
    let mut w = Watch::new(Protocol::Anthropic);
    let ping = b"event: ping\ndata: {\"type\":\"ping\"}\n\n";
    assert_eq!(w.feed(ping), Seen { events_end: Some(ping.len()), ..Seen::default() });
    let delta = b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"abcd\"}}\n\n";
    let (a, b) = delta.split_at(30);
    assert_eq!(w.feed(a), Seen::default(), "half an event is nothing yet");
    let text = Seen {
        ready: true,
        output: true,
        useful_bytes: 4,
        protected: Some(false),
        events_end: Some(b.len()),
        ..Seen::default()
    };
    assert_eq!(w.feed(b), text);
    assert!(!w.feed(b"data: {\"type\":\"message_stop\"}").ready);
    assert!(!w.is_complete());
    let stop = Seen { ready: true, end_at: Some(0), ..Seen::default() };
    assert_eq!(w.finish(), stop, "the unterminated last event counts");
    assert!(w.is_complete());
}

#[test]
fn each_protocol_says_where_its_answer_ends() {
    let end = |p, e: Option<&str>, d: &str| of(p, &ev(e, d), &mut Counts::default()).1;
    use Ending::*;
    use Protocol::*;
    assert_eq!(end(OpenaiChat, None, r#"{"choices":[{"delta":{"content":"a"},"finish_reason":null}]}"#), Open);
    assert_eq!(end(OpenaiChat, None, r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#), Stopped);
    assert_eq!(end(OpenaiChat, None, "[DONE]"), Terminator);
    assert_eq!(
        end(Anthropic, Some("message_delta"), r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#),
        Stopped
    );
    assert_eq!(end(Anthropic, Some("message_stop"), r#"{"type":"message_stop"}"#), Terminator);
    assert_eq!(end(Anthropic, Some("content_block_stop"), r#"{"type":"content_block_stop","index":0}"#), Open);
    assert_eq!(end(Responses, None, r#"{"type":"response.completed","response":{}}"#), Terminator);
    assert_eq!(end(Responses, None, r#"{"type":"response.incomplete","response":{}}"#), Terminator);
    assert_eq!(end(Responses, None, r#"{"type":"response.output_text.done","text":"a"}"#), Open);
    let last = r#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}]}"#;
    assert_eq!(
        of(Gemini, &ev(None, last), &mut Counts::default()),
        (Progress::Output(1), Stopped),
        "text and the stop together"
    );
}

#[test]
fn an_event_that_is_not_json_is_malformed_and_unknown_json_is_metadata() {
    for p in [Protocol::OpenaiChat, Protocol::Anthropic, Protocol::Responses, Protocol::Gemini] {
        assert!(
            matches!(of(p, &ev(None, "{\"choices\": [tru"), &mut Counts::default()).0, Progress::Malformed(_)),
            "{p:?}"
        );
        assert_eq!(of(p, &ev(None, "[1, 2]"), &mut Counts::default()).0, Progress::Meta, "{p:?}");
    }
}

#[test]
fn role_chunks_and_metadata_do_not_make_a_stream_ready() {
    let mut w = Watch::new(Protocol::OpenaiChat);
    let role = b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    assert!(!w.feed(role).ready, "a role chunk is not an answer");
    let mut w = Watch::new(Protocol::Anthropic);
    let start = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n";
    assert!(!w.feed(start).ready);
    let mut w = Watch::new(Protocol::Responses);
    assert!(!w.feed(b"data: {\"type\":\"response.created\",\"response\":{}}\n\n").ready);
}

#[test]
fn the_terminator_says_where_the_answer_stops_and_what_follows_is_ignored() {
    let mut w = Watch::new(Protocol::OpenaiChat);
    let chunk = b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n";
    let seen = w.feed(chunk);
    let through = chunk.len() - "data: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n".len();
    assert_eq!(seen.end_at, Some(through));
    assert!(!seen.output, "the text after the terminator is not the answer's");
    assert!(w.is_complete());
    assert!(!w.feed(b"data: garbage\n\n").ready, "nor is anything later");
}

#[test]
fn an_oversize_event_is_malformed() {
    let mut w = Watch::new(Protocol::OpenaiChat);
    let big = vec![b'x'; crate::protocols::sse::MAX_EVENT_BYTES + 1];
    assert!(w.feed(&big).malformed.is_some());
}

#[test]
fn a_watch_keeps_the_token_counts_each_protocol_states_in_its_events() {
    let read = |p, stream: &str| {
        let mut w = Watch::new(p);
        w.feed(stream.as_bytes());
        w.usage().map(|u| (u.input_tokens, u.output_tokens, u.cached_tokens))
    };
    let chat = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n";
    assert_eq!(read(Protocol::OpenaiChat, chat), Some((9, 2, None)));
    let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\n\
                     event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":30}}\n\n";
    assert_eq!(read(Protocol::Anthropic, anthropic), Some((105, 30, Some(100))));
    let responses = "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":3,\"input_tokens_details\":{\"cached_tokens\":4}}}}\n\n";
    assert_eq!(read(Protocol::Responses, responses), Some((7, 3, Some(4))));
    let gemini = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":1}}\n\n\
                  data: {\"candidates\":[{\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":6}}\n\n";
    assert_eq!(read(Protocol::Gemini, gemini), Some((4, 6, None)));
    assert_eq!(read(Protocol::OpenaiChat, "data: {\"choices\":[]}\n\n"), None);
}
