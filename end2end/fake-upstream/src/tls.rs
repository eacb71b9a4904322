//! The fake over HTTPS, as real providers are reached: ALPN offers HTTP/2
//! and HTTP/1.1 (or HTTP/1.1 alone), so a test sees which one the
//! gateway's pooled client chooses and how many connections it opens.
//!
//! The certificate (for `127.0.0.1` and `localhost`) is signed by a test
//! authority kept beside it in `tls/`: [`ca_file`] is what a gateway under
//! test is told to trust. Both were made once with `openssl` (P-256, valid
//! for a hundred years) and are test fixtures, not secrets.

use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
    service::TowerToHyperService,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
};
use tokio::{net::TcpListener, sync::oneshot};
use tokio_rustls::TlsAcceptor;

const CERT_PEM: &[u8] = include_bytes!("../tls/cert.pem");
const KEY_PEM: &[u8] = include_bytes!("../tls/key.pem");

/// The test authority's certificate (PEM) that signs the fake's own.
pub fn ca_file() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tls/ca.pem"))
}

/// Which protocols the fake offers in its TLS handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alpn {
    /// `h2` first, then `http/1.1`, as the big providers do.
    Http2,
    /// `http/1.1` only.
    Http1,
}

fn acceptor(alpn: Alpn) -> anyhow::Result<TlsAcceptor> {
    let certs = CertificateDer::pem_slice_iter(CERT_PEM).collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(KEY_PEM)?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = match alpn {
        Alpn::Http2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Alpn::Http1 => vec![b"http/1.1".to_vec()],
    };
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` over TLS on `listener` until `shutdown`, counting the
/// connections it accepts in `accepted`; an HTTP/2 connection carries
/// `max_streams` requests at once at most.
pub(crate) fn spawn(
    listener: TcpListener,
    (alpn, max_streams): (Alpn, u32),
    app: Router,
    accepted: Arc<AtomicU32>,
    mut shutdown: oneshot::Receiver<()>,
) -> anyhow::Result<()> {
    let acceptor = acceptor(alpn)?;
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http2().max_concurrent_streams(max_streams);
    let http = Arc::new(http);
    tokio::spawn(async move {
        loop {
            let socket = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((socket, _)) => socket,
                    Err(_) => continue,
                },
                _ = &mut shutdown => return,
            };
            accepted.fetch_add(1, Ordering::Relaxed);
            let (acceptor, http, app) = (acceptor.clone(), http.clone(), app.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(socket).await else { return };
                let service = TowerToHyperService::new(app);
                let _ = http.serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    Ok(())
}
