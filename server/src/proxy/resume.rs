//! The request side of mid-stream recovery (SPEC §R6,
//! `STREAM_RECOVERY_MIDSTREAM_ENABLED`): what a committed stream needs to
//! send its request again after it failed — the request, who asked — owned,
//! since the stream outlives the handler that served it. The continuation
//! is the request with the text so far as the assistant's last turn,
//! served by the same model or combo through the whole dispatch loop, but
//! only by a prefix-continuing provider's connections other than the one
//! that failed (`dispatch::gates`), and never continued itself.

use axum::http::StatusCode;
use futures_util::{StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use std::sync::Arc;

use super::{
    request::ClientRequest,
    route::{self, Inbound},
    stream::relay::{Resume, Resumes, Upstream},
};
use crate::{auth::api_keys::KeyEntry, protocols::translate, state::AppState};

/// Longest error answer read to say why a continuation was refused.
const MAX_ERROR_BODY: usize = 16 * 1024;

#[derive(Clone)]
pub struct Resumer {
    state: Arc<AppState>,
    request: Arc<ClientRequest>,
    request_id: Arc<str>,
    endpoint: &'static str,
    key: Option<Arc<KeyEntry>>,
}

impl Resumer {
    pub fn new(
        state: &Arc<AppState>,
        request: &Arc<ClientRequest>,
        request_id: &str,
        endpoint: &'static str,
        key: Option<Arc<KeyEntry>>,
    ) -> Self {
        Self { state: state.clone(), request: request.clone(), request_id: request_id.into(), endpoint, key }
    }
}

impl Resumes for Resumer {
    fn after(&self, failed: &str) -> Resume {
        let (this, failed) = (self.clone(), failed.to_owned());
        Box::new(move |prefix| Box::pin(async move { this.continuation(&prefix, &failed).await }))
    }
}

impl Resumer {
    /// The continuation's stream in the client's protocol, or why there is none.
    async fn continuation(self, prefix: &str, failed: &str) -> Result<Upstream, String> {
        self.request.may_continue()?;
        let request = self.request.continued(prefix).map_err(|e| e.message)?;
        let inbound = Inbound {
            protocol: request.protocol,
            endpoint: self.endpoint,
            request_id: &self.request_id,
            key: self.key.as_deref(),
            lease: None,
            resume: None,
            continuing: Some(failed),
        };
        tracing::info!(request_id = &*self.request_id, "continuing a broken stream on another target");
        let response = route::serve(&self.state, &request, &inbound).await.map_err(|e| e.message)?;
        let (head, body) = response.into_parts();
        if head.status != StatusCode::OK {
            let limited = http_body_util::Limited::new(body, MAX_ERROR_BODY);
            let bytes = limited.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            return Err(translate::error_message(&text).unwrap_or_else(|| format!("answered {}", head.status)));
        }
        Ok(TryStreamExt::map_err(body.into_data_stream(), |e| e.to_string()).boxed())
    }
}
