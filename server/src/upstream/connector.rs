//! Opens upstream connections: TCP, TLS (rustls with the webpki roots,
//! and the authorities of `OMNIROUTE_UPSTREAM_CA_FILE`; ALPN h2 +
//! http/1.1, so an upstream that offers HTTP/2 carries many requests on
//! one connection), and the proxies the environment names.
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
use rustls::pki_types::{
    CertificateDer,
    pem::{self, PemObject},
};
use std::{
    future::Future,
    io,
    path::Path,
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
    /// `extra_roots` are trusted beside the webpki roots.
    pub fn new(
        connect_timeout: Duration,
        proxies: Matcher,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Self, rustls::Error> {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(connect_timeout));
        let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        for root in extra_roots {
            roots.add(root)?;
        }
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

/// The certificates of a PEM file (`OMNIROUTE_UPSTREAM_CA_FILE`): an
/// upstream behind a private authority (a self-hosted model server).
pub fn read_roots(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let roots = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the certificates of {}: {}", path.display(), pem_problem(e)))?;
    if roots.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(roots)
}

/// What is wrong with a PEM file, in words (the crate's own names the
/// markers in bytes).
fn pem_problem(e: pem::Error) -> String {
    match e {
        pem::Error::Io(e) => e.to_string(),
        pem::Error::MissingSectionEnd { end_marker } => {
            format!("a section has no \"-----END {}-----\" line", String::from_utf8_lossy(&end_marker))
        }
        pem::Error::IllegalSectionStart { line } => {
            format!("\"{}\" does not start a PEM section", String::from_utf8_lossy(&line))
        }
        other => other.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_gives_its_certificates_or_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let test_ca = Path::new(env!("CARGO_MANIFEST_DIR")).join("../end2end/fake-upstream/tls/ca.pem");
        assert_eq!(read_roots(&test_ca).unwrap().len(), 1);
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        assert!(read_roots(&empty).unwrap_err().ends_with("holds no PEM certificate"));
        let cut = dir.path().join("cut.pem");
        std::fs::write(&cut, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
        let problem = read_roots(&cut).unwrap_err();
        assert!(problem.ends_with("a section has no \"-----END CERTIFICATE-----\" line"), "{problem}");
        let missing = dir.path().join("missing.pem");
        assert!(read_roots(&missing).unwrap_err().starts_with("cannot read the certificates of"));
        let roots = read_roots(&test_ca).unwrap();
        assert!(Connector::new(Duration::from_secs(1), Matcher::builder().build(), roots).is_ok());
    }
}
