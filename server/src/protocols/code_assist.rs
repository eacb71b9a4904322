//! Google's Code Assist envelope, which Gemini CLI sign-ins are served
//! through: a Gemini `generateContent` request goes inside
//! `{model, project, request}` (the model in the body, not the URL; the
//! project is the account's Code Assist project), and each answer — the
//! whole one, or every stream event — comes back inside `{response, …}`.
//! The gateway wraps a request just before it is sent and unwraps the
//! answer as it arrives, so everything else (the translator, usage, the
//! relay) sees the public Gemini API.

use bytes::{Bytes, BytesMut};
use futures_util::{StreamExt, stream::BoxStream};
use serde_json::{Map, Value, json};

use super::sse::{self, SseReader};

/// `body` (a Gemini request) inside the envelope for `model` of `project`;
/// as is when it is not a JSON object.
pub fn envelope(body: &[u8], model: &str, project: Option<&str>) -> Bytes {
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(body) else {
        return Bytes::copy_from_slice(body);
    };
    request.remove("model");
    let mut out = Map::new();
    out.insert("model".into(), json!(model));
    if let Some(p) = project {
        out.insert("project".into(), json!(p));
    }
    out.insert("request".into(), Value::Object(request));
    Bytes::from(Value::Object(out).to_string())
}

/// A whole answer out of its envelope.
pub fn unwrap_answer(body: &[u8]) -> Result<Bytes, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the Code Assist answer is not JSON: {e}"))?;
    match v.get("response") {
        Some(inner) => Ok(Bytes::from(inner.to_string())),
        None => Err("the Code Assist answer holds no response".into()),
    }
}

/// A stream's events out of their envelopes, each as soon as it is whole.
pub fn unwrap_stream(upstream: BoxStream<'static, Result<Bytes, String>>) -> BoxStream<'static, Result<Bytes, String>> {
    let mut reader = SseReader::default();
    upstream
        .map(move |chunk| {
            let chunk = chunk?;
            let mut out = BytesMut::new();
            let events = reader.feed(&chunk).map_err(|e| e.to_string())?;
            for ev in events {
                let inner = serde_json::from_str::<Value>(&ev.data)
                    .ok()
                    .and_then(|mut v| v.get_mut("response").map(Value::take))
                    .map_or(ev.data, |inner| inner.to_string());
                out.extend_from_slice(&sse::frame(ev.event.as_deref(), &inner));
            }
            Ok(out.freeze())
        })
        .filter(|chunk| std::future::ready(!matches!(chunk, Ok(b) if b.is_empty())))
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    #[test]
    fn a_request_goes_inside_the_envelope_with_its_model_and_project() {
        let body = br#"{"model":"x","contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#;
        let wrapped: Value = serde_json::from_slice(&envelope(body, "gemini-2.5-pro", Some("proj-1"))).unwrap();
        assert_eq!(
            wrapped,
            json!({"model": "gemini-2.5-pro", "project": "proj-1",
                   "request": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}})
        );
        assert_eq!(unwrap_answer(br#"{"response":{"candidates":[]},"traceId":"t"}"#).unwrap(), r#"{"candidates":[]}"#);
        assert!(unwrap_answer(br#"{"error":{}}"#).is_err());
    }

    #[tokio::test]
    async fn stream_events_come_out_of_their_envelopes_across_chunk_boundaries() {
        let chunks = [
            "data: {\"response\":{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"he",
            "llo\"}]}}]},\"traceId\":\"a\"}\n\ndata: {\"response\":{\"usageMetadata\":{}}}\n\n",
        ];
        let upstream = stream::iter(chunks.map(|c| Ok(Bytes::from(c)))).boxed();
        let out: Vec<Bytes> = unwrap_stream(upstream).map(Result::unwrap).collect().await;
        let text: String = out.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        assert_eq!(
            text,
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hello\"}]}}]}\n\ndata: {\"usageMetadata\":{}}\n\n"
        );
    }
}
