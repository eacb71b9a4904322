//! Management API errors: `{"error":{"message", "details"?}}` with the
//! status that says what went wrong. Never a redirect.

use app::types::FieldError;
use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::services::ServiceError;

#[derive(Debug)]
pub enum ApiError {
    Unauthorized,
    /// 400 with field-level details.
    Invalid(Vec<FieldError>),
    /// 415/413 and other body problems: status and message.
    Body(StatusCode, String),
    NotFound(&'static str),
    /// 429 with `Retry-After`: too many failed sign-ins.
    Throttled(u64),
    Internal,
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(details) => Self::Invalid(details),
            ServiceError::NotFound(what) => Self::NotFound(what),
            ServiceError::Unavailable(message) => Self::Body(StatusCode::BAD_GATEWAY, message),
            ServiceError::Db(err) => {
                tracing::error!(error = %err, "database error in a management request");
                Self::Internal
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, json!({"error": {"message": "Authentication required"}})),
            Self::Invalid(details) => {
                (StatusCode::BAD_REQUEST, json!({"error": {"message": "Invalid request", "details": details}}))
            }
            Self::Body(status, message) => (status, json!({"error": {"message": message}})),
            Self::Throttled(secs) => {
                let message = format!("Too many failed sign-ins; try again in {secs} s");
                let headers = [(axum::http::header::RETRY_AFTER, secs.to_string())];
                return (StatusCode::TOO_MANY_REQUESTS, headers, Json(json!({"error": {"message": message}})))
                    .into_response();
            }
            Self::NotFound(what) => (StatusCode::NOT_FOUND, json!({"error": {"message": format!("{what} not found")}})),
            Self::Internal => {
                (StatusCode::INTERNAL_SERVER_ERROR, json!({"error": {"message": "Internal error; see the server log"}}))
            }
        };
        (status, Json(body)).into_response()
    }
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound("route")
}
