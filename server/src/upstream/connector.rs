//! Opens upstream connections: TCP, TLS (rustls with the webpki roots,
//! ALPN h2 + http/1.1), and the proxies the environment names.
//!
//! Proxies follow curl's variables (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `ALL_PROXY`, `NO_PROXY`, lower-case too): an `https://` upstream is
//! reached through a `CONNECT` tunnel, so the proxy never sees the
//! credential; a plain `http://` upstream gets an absolute-form request
//! sent to the proxy (see [`Connector::proxy_authorization`]).

use http::{HeaderValue, Uri, uri::Scheme};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder, MaybeHttpsStream};
use hyper_util::client::{
    legacy::connect::{Connected, Connection, HttpConnector, proxy::Tunnel},
    proxy::matcher::Matcher,
};
use std::{
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};
use tower::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Connects to an upstream URI, directly or through a proxy.
#[derive(Clone)]
pub struct Connector {
    direct: HttpsConnector<HttpConnector>,
    /// Shared: the client clones its connector for every request.
    tls: Arc<rustls::ClientConfig>,
    proxies: Arc<Matcher>,
}

impl Connector {
    pub fn new(connect_timeout: Duration, proxies: Matcher) -> Result<Self, rustls::Error> {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(connect_timeout));
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let direct = https(tls.clone(), tcp);
        Ok(Self { direct, tls: Arc::new(tls), proxies: Arc::new(proxies) })
    }

    /// The `Proxy-Authorization` a request to `uri` carries: only plain
    /// HTTP through a proxy with credentials needs it on every request
    /// (a tunnel sends it once, in its `CONNECT`).
    pub fn proxy_authorization(&self, uri: &Uri) -> Option<HeaderValue> {
        if uri.scheme() != Some(&Scheme::HTTP) {
            return None;
        }
        self.proxies.intercept(uri).and_then(|p| p.basic_auth().cloned())
    }
}

fn https<C>(tls: rustls::ClientConfig, inner: C) -> HttpsConnector<C> {
    HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_all_versions().wrap_connector(inner)
}

impl Service<Uri> for Connector {
    type Response = UpstreamIo;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<UpstreamIo, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let mut direct = self.direct.clone();
        let Some(proxy) = self.proxies.intercept(&dst) else {
            return Box::pin(async move { Ok(UpstreamIo::direct(direct.call(dst).await?, false)) });
        };
        if dst.scheme() == Some(&Scheme::HTTPS) {
            let mut tunnel = Tunnel::new(proxy.uri().clone(), direct);
            if let Some(auth) = proxy.basic_auth() {
                tunnel = tunnel.with_auth(auth.clone());
            }
            let mut tunneled = https((*self.tls).clone(), tunnel);
            return Box::pin(async move { Ok(UpstreamIo::new(tunneled.call(dst).await?, false)) });
        }
        // Plain HTTP: talk to the proxy, which forwards the absolute-form
        // request (`proxied` keeps the client from shortening the URI).
        Box::pin(async move { Ok(UpstreamIo::direct(direct.call(proxy.uri().clone()).await?, true)) })
    }
}

/// Any of the connection kinds above, behind one type the pool can hold.
pub struct UpstreamIo {
    io: Box<dyn Io>,
    proxied: bool,
}

trait Io: Read + Write + Connection + Send + Unpin {}
impl<T: Read + Write + Connection + Send + Unpin> Io for T {}

impl UpstreamIo {
    fn new(io: impl Io + 'static, proxied: bool) -> Self {
        Self { io: Box::new(io), proxied }
    }

    /// A plain socket is boxed on its own, not inside the TLS variant's
    /// room (about 1 KB per upstream connection).
    fn direct<T: Io + 'static>(io: MaybeHttpsStream<T>, proxied: bool) -> Self {
        match io {
            MaybeHttpsStream::Http(plain) => Self::new(plain, proxied),
            tls => Self::new(tls, proxied),
        }
    }
}

impl Connection for UpstreamIo {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.proxied)
    }
}

impl Read for UpstreamIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.io).poll_read(cx, buf)
    }
}

crate::forward_writes::forward_writes!(Write, [] UpstreamIo, io);
