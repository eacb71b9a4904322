//! `StrictJson<T>`: the JSON body extractor of the management API. Bad JSON,
//! wrong types and unknown fields become a 400 naming the field.

use app::types::FieldError;
use axum::{
    body::Bytes,
    extract::{FromRequest, Request},
    http::StatusCode,
};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::auth::cross_site::is_json;

pub struct StrictJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for StrictJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(unsupported_media_type());
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| ApiError::Body(e.status(), e.body_text()))?;
        parse(&bytes).map(StrictJson)
    }
}

fn unsupported_media_type() -> ApiError {
    ApiError::Body(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json".into())
}

/// Like [`StrictJson`], but an empty body means `T::default()` (for
/// bodies whose every field is optional, such as `{provider?}`).
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = is_json(req.headers());
        let bytes = Bytes::from_request(req, state).await.map_err(|e| ApiError::Body(e.status(), e.body_text()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        if !is_json {
            return Err(unsupported_media_type());
        }
        parse(&bytes).map(OptionalJson)
    }
}

/// Parses `bytes` as `T`, naming the failing field on error.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        // The path already ends with an unknown field's name; a missing
        // field is named after the object that lacks it. List items are
        // `a.0.b`, as in every other field error.
        let message = e.inner().to_string();
        let at = match e.path().to_string() {
            p if p == "." || p == "?" => None,
            p => Some(p.replace('[', ".").replace(']', "")),
        };
        let missing = message.strip_prefix("missing field `").and_then(|m| m.split_once('`')).map(|(f, _)| f);
        let field = match (at, missing) {
            (Some(at), Some(m)) => format!("{at}.{m}"),
            (None, Some(m)) => m.to_owned(),
            (Some(at), None) => at,
            (None, None) => "body".to_owned(),
        };
        ApiError::Invalid(vec![FieldError::new(field, message)])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::types::CreateConnection;

    fn details(body: &str) -> Vec<FieldError> {
        match parse::<CreateConnection>(body.as_bytes()) {
            Err(ApiError::Invalid(d)) => d,
            other => panic!("expected a 400, got {other:?}", other = other.map(|_| ())),
        }
    }

    #[test]
    fn names_unknown_and_mistyped_fields() {
        assert_eq!(details(r#"{"provider":"openai","name":"x","apiKy":"k"}"#)[0].field, "apiKy");
        assert_eq!(details(r#"{"provider":"openai","name":"x","priority":"high"}"#)[0].field, "priority");
        assert_eq!(
            details(r#"{"provider":"openai","name":"x","rateLimitOverrides":{"rpn":1}}"#)[0].field,
            "rateLimitOverrides.rpn"
        );
        assert_eq!(details("{oops")[0].field, "body");
        assert_eq!(details(r#"{"name":"x"}"#)[0].field, "provider", "a missing field is named");
    }
}
