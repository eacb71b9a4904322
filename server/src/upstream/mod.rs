//! Everything about talking to providers: the catalog (code, not data),
//! request building with headers made from scratch, and the HTTP executor
//! behind the [`Upstream`] seam (an in-process fake in timing tests).

pub mod catalog;
pub mod code_assist;
mod connector;
pub mod executor;
#[cfg(test)]
pub mod fake;
mod lanes;
pub mod limit_reset;
pub mod model_facts;
pub mod oauth;
mod transport_error;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::HeaderMap;

pub use connector::read_roots;
use executor::{Endpoint, Executor, TransportError, UpstreamResponse};

/// The calls the gateway makes to a provider. The hyper [`Executor`] in
/// production; tests of timing and retries use an in-process fake, so
/// paused tokio time never races real sockets.
pub trait Upstream: Send + Sync {
    /// POSTs `body` to `path` of `endpoint`, with `extra` headers (client
    /// headers meant for this protocol) added to the connection's own.
    fn post<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        path: &'a str,
        body: Bytes,
        stream: bool,
        extra: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<UpstreamResponse, TransportError>>;

    /// GETs `path` of `endpoint` with the connection's own headers (its
    /// model list, a subscription's usage).
    fn get<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        path: &'a str,
    ) -> BoxFuture<'a, Result<UpstreamResponse, TransportError>>;
}

impl Upstream for Executor {
    fn post<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        path: &'a str,
        body: Bytes,
        stream: bool,
        extra: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<UpstreamResponse, TransportError>> {
        Box::pin(Executor::post(self, endpoint, path, body, stream, extra))
    }

    fn get<'a>(
        &'a self,
        endpoint: &'a Endpoint,
        path: &'a str,
    ) -> BoxFuture<'a, Result<UpstreamResponse, TransportError>> {
        Box::pin(Executor::get(self, endpoint, path))
    }
}
