//! Why an upstream request got no (complete) HTTP response, in words an
//! operator can act on: the HTTP stack's errors with their causes, and a
//! failed TLS handshake named as such (an untrusted certificate, most often).

use std::time::Duration;

/// Why an upstream request got no (complete) HTTP response.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("could not connect to the upstream")]
    Connect,
    /// The TLS handshake failed: most often a certificate this gateway
    /// does not trust (a private upstream needs `OMNIROUTE_UPSTREAM_CA_FILE`).
    #[error("the upstream's TLS handshake failed: {0}")]
    Handshake(String),
    #[error("the upstream did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the upstream connection failed: {0}")]
    Network(String),
    #[error("the upstream's answer stopped arriving: no byte for {0:?}")]
    Stalled(Duration),
}

impl TransportError {
    /// The `error_kind` recorded in `proxy_logs`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Connect | Self::Handshake(_) => "connect_error",
            Self::Timeout(_) => "timeout",
            Self::Network(_) => "network_error",
            Self::Stalled(_) => "body_stalled",
        }
    }

    pub(super) fn from_client(e: &hyper_util::client::legacy::Error) -> Self {
        match (e.is_connect(), tls_cause(e)) {
            (true, Some(tls)) => Self::Handshake(tls.to_string()),
            (true, None) => Self::Connect,
            (false, _) => Self::Network(causes(e)),
        }
    }
}

/// An error with its causes, `outer: inner: …`. The HTTP stack's errors
/// name no URL, so nothing internal leaks into logs or answers.
pub(super) fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The TLS error among `e`'s causes. An I/O error wrapping another is
/// looked into (its `source` skips the wrapped one).
fn tls_cause<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if let Some(tls) = c.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let wrapped = c.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
        cause = match wrapped {
            Some(inner) => Some(inner as &dyn std::error::Error),
            None => c.source(),
        };
    }
    None
}
