//! The gateway's own refusals on `/v1`: a request it answers without an
//! upstream's word — a bad body, a missing key, anonymous use from afar,
//! a lease context that does not hold, a plan of calls that failed. The
//! table below is the one place such a refusal gets its status, error
//! type and code; the call site says only which refusal it is and why in
//! words. (What the dispatch loop concludes from upstream answers is
//! `dispatch/error.rs`'s; the client's envelope is `errors.rs`'s.)

use axum::http::StatusCode;

use super::errors::ProxyError;
use crate::routing::resolve::ResolveError;

/// A refusal of the gateway's own, named as the client sees its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The body could not be read (too large, cut off): the reader's status.
    BodyUnreadable(StatusCode),
    /// The body is not the JSON object the endpoint takes.
    InvalidJson,
    /// A field of the body is wrong (the error names it in `param`).
    InvalidField,
    /// A Gemini path that is not `…:generateContent` or `…:streamGenerateContent`.
    UnknownMethod,
    /// The model names nothing this gateway routes.
    ModelNotFound,
    MissingKey,
    InvalidKey,
    /// The key lacks the scope the endpoint needs.
    InsufficientScope,
    /// Anonymous use (§P) from a peer that is not this machine.
    AnonymousNotLocal,
    /// Anonymous use without a JSON content type.
    AnonymousNotJson,
    /// Anonymous use addressing the gateway by a foreign name.
    AnonymousForeignHost,
    /// A lease header is missing (§R2.3).
    LeaseContextRequired,
    /// A lease header or lifecycle field is malformed, or the request
    /// cannot be bound to one connection.
    LeaseContextInvalid,
    /// The lease the context names is no longer this request's.
    LeaseFenceStale,
    LeaseContentTypeRequired,
    /// No allowed connection of the provider can hold a lease.
    LeaseNoCredentials,
    /// The provider's breaker is open; a lease would not be served.
    LeaseBreakerOpen,
    /// Every allowed connection is cooling down or unavailable.
    LeaseAllCooling,
    /// Every eligible connection is held by another session's lease.
    LeaseCapacity,
    /// A lease change could not be stored.
    LeaseStoreUnavailable,
    /// A pipeline step failed with the status it carries.
    PipelineStepFailed(StatusCode),
    /// No member of a fusion panel answered.
    FusionPanelFailed,
}

impl Refused {
    /// The client's answer: HTTP status, error type, code.
    pub fn answer(self) -> (StatusCode, &'static str, &'static str) {
        use StatusCode as S;
        const INVALID: &str = "invalid_request_error";
        match self {
            Self::BodyUnreadable(status) => (status, INVALID, "invalid_body"),
            Self::InvalidJson => (S::BAD_REQUEST, INVALID, "invalid_json"),
            Self::InvalidField => (S::BAD_REQUEST, INVALID, "invalid_request"),
            Self::UnknownMethod => (S::NOT_FOUND, INVALID, "unknown_method"),
            Self::ModelNotFound => (S::NOT_FOUND, INVALID, "model_not_found"),
            Self::MissingKey | Self::AnonymousNotLocal => (S::UNAUTHORIZED, INVALID, "missing_api_key"),
            Self::InvalidKey => (S::UNAUTHORIZED, INVALID, "invalid_api_key"),
            Self::InsufficientScope => (S::FORBIDDEN, INVALID, "insufficient_scope"),
            Self::AnonymousNotJson => (S::UNSUPPORTED_MEDIA_TYPE, INVALID, "unsupported_media_type"),
            Self::AnonymousForeignHost => (S::FORBIDDEN, INVALID, "anonymous_host_refused"),
            Self::LeaseContextRequired => (S::BAD_REQUEST, INVALID, "LEASE_CONTEXT_REQUIRED"),
            Self::LeaseContextInvalid => (S::BAD_REQUEST, INVALID, "LEASE_CONTEXT_INVALID"),
            Self::LeaseFenceStale => (S::CONFLICT, INVALID, "LEASE_FENCE_STALE"),
            Self::LeaseContentTypeRequired => (S::UNSUPPORTED_MEDIA_TYPE, INVALID, "LEASE_CONTENT_TYPE_REQUIRED"),
            Self::LeaseNoCredentials => (S::NOT_FOUND, "server_error", "no_active_credentials"),
            Self::LeaseBreakerOpen => (S::SERVICE_UNAVAILABLE, "server_error", "provider_circuit_open"),
            Self::LeaseAllCooling => (S::SERVICE_UNAVAILABLE, "server_error", "all_targets_cooling_down"),
            Self::LeaseCapacity => (S::TOO_MANY_REQUESTS, "rate_limit_error", "LEASE_CAPACITY_UNAVAILABLE"),
            Self::LeaseStoreUnavailable => (S::SERVICE_UNAVAILABLE, "server_error", "lease_store_unavailable"),
            Self::PipelineStepFailed(status) => (status, kind_of(status), "PIPELINE_STEP_FAILED"),
            Self::FusionPanelFailed => (S::SERVICE_UNAVAILABLE, "server_error", "FUSION_PANEL_FAILED"),
        }
    }

    /// The refusal as the client's error, explained by `message`.
    pub fn because(self, message: impl Into<String>) -> ProxyError {
        let (status, kind, code) = self.answer();
        ProxyError::new(status, kind, code, message)
    }

    /// A key that names no key of this gateway.
    pub fn invalid_key() -> ProxyError {
        Self::InvalidKey.because("Invalid API key")
    }

    /// The refusal of one field of the request, named in `param`.
    pub fn of_field(self, field: impl Into<Box<str>>, message: impl Into<String>) -> ProxyError {
        ProxyError { param: Some(field.into()), ..self.because(message) }
    }
}

/// 400 naming the offending field of the body.
pub fn bad_field(field: impl Into<Box<str>>, message: impl Into<String>) -> ProxyError {
    Refused::InvalidField.of_field(field, message)
}

/// A model that resolves to no one target: unknown (404) or ambiguous
/// (400, naming the providers that serve it).
pub fn unresolved(e: &ResolveError) -> ProxyError {
    let refused = match e {
        ResolveError::Ambiguous(..) => Refused::InvalidField,
        ResolveError::Unknown(_) => Refused::ModelNotFound,
    };
    refused.of_field("model", e.to_string())
}

/// The OpenAI error type that usually goes with `status`.
fn kind_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_a_client_or_server_error_with_a_code() {
        let all = [
            Refused::BodyUnreadable(StatusCode::PAYLOAD_TOO_LARGE),
            Refused::InvalidJson,
            Refused::InvalidField,
            Refused::UnknownMethod,
            Refused::ModelNotFound,
            Refused::MissingKey,
            Refused::InvalidKey,
            Refused::InsufficientScope,
            Refused::AnonymousNotLocal,
            Refused::AnonymousNotJson,
            Refused::AnonymousForeignHost,
            Refused::LeaseContextRequired,
            Refused::LeaseContextInvalid,
            Refused::LeaseFenceStale,
            Refused::LeaseContentTypeRequired,
            Refused::LeaseNoCredentials,
            Refused::LeaseBreakerOpen,
            Refused::LeaseAllCooling,
            Refused::LeaseCapacity,
            Refused::LeaseStoreUnavailable,
            Refused::PipelineStepFailed(StatusCode::TOO_MANY_REQUESTS),
            Refused::FusionPanelFailed,
        ];
        for r in all {
            let (status, kind, code) = r.answer();
            assert!(status.is_client_error() || status.is_server_error(), "{r:?}: {status}");
            assert!(!kind.is_empty() && !code.is_empty(), "{r:?}");
        }
    }

    #[test]
    fn a_failed_step_keeps_its_status_and_the_type_that_goes_with_it() {
        let e = Refused::PipelineStepFailed(StatusCode::TOO_MANY_REQUESTS).because("slow down");
        assert_eq!((e.status.as_u16(), e.kind, e.code), (429, "rate_limit_error", "PIPELINE_STEP_FAILED"));
        let e = Refused::PipelineStepFailed(StatusCode::NOT_FOUND).because("gone");
        assert_eq!((e.status.as_u16(), e.kind), (404, "invalid_request_error"));
        let e = Refused::PipelineStepFailed(StatusCode::BAD_GATEWAY).because("bad");
        assert_eq!((e.status.as_u16(), e.kind), (502, "server_error"));
    }

    #[test]
    fn a_field_refusal_names_its_field() {
        let e = Refused::LeaseContextInvalid.of_field("ttlMs", "must be an integer");
        assert_eq!((e.status.as_u16(), e.code, e.param.as_deref()), (400, "LEASE_CONTEXT_INVALID", Some("ttlMs")));
    }
}
