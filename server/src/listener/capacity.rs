//! How many client connections may be open at once, and the answer to
//! one more. Each proxied request holds a client socket and (usually) an
//! upstream one, so the default is half of the descriptors left after a
//! reserve for the database, the log files and the listener sockets.
//!
//! No one client may take the whole budget: one address holds at most
//! [`Budget::per_client`] connections (a flood from one machine reaches
//! nobody else), and the last [`Budget::reserved`] slots serve only the
//! operator's side — the dashboard, `/api`, health checks, `/v1/models` —
//! never an inference request, so with every slot held by streams an
//! operator can still look and act.

use dashmap::DashMap;
use std::{net::IpAddr, sync::Arc, time::Duration};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::{OwnedSemaphorePermit, Semaphore},
};

use crate::config::ClientLimits;

/// Descriptors kept out of the client budget.
const RESERVED_FDS: usize = 256;
/// The smallest default, whatever the descriptor limit says.
const MIN_CONNECTIONS: usize = 64;
/// The smallest default per-client share.
const MIN_PER_CLIENT: usize = 32;
/// How long the refusal may take to write and to drain what the client
/// already sent (closing with unread data would reset the connection
/// before the client reads the 503).
const REFUSAL_BUDGET: Duration = Duration::from_secs(1);

/// Why a connection is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Every slot is taken.
    Gateway,
    /// This client holds its share already.
    Client,
}

/// The body of the `503` for `full`.
fn refusal_body(full: Full) -> String {
    let message = match full {
        Full::Gateway => "The gateway has too many open connections; retry shortly",
        Full::Client => "This client has too many open connections to the gateway; close some or retry shortly",
    };
    serde_json::json!({"error": {"message": message, "type": "server_error", "code": "too_many_connections"}})
        .to_string()
}

/// The `503` a refused connection gets, complete.
fn refusal(full: Full) -> String {
    let body = refusal_body(full);
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// The budget's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Connections at most (`OMNIROUTE_MAX_CONNECTIONS`).
    pub max: usize,
    /// Of those, kept for the operator's side (`OMNIROUTE_RESERVED_CONNECTIONS`).
    pub reserved: usize,
    /// At most from one address (`OMNIROUTE_MAX_CONNECTIONS_PER_CLIENT`).
    pub per_client: usize,
}

impl Budget {
    /// The sizes `limits` set, with defaults from the descriptor limit:
    /// 1/32 of the budget reserved, 1/8 of it (at least 32) per client —
    /// but the whole budget `behind_proxy`, where every connection comes
    /// from the proxy and the proxy limits its own clients.
    pub fn of(limits: &ClientLimits, behind_proxy: bool) -> Self {
        let max = limits.max_connections.unwrap_or_else(|| default_max(fd_limit()));
        let reserved = limits.reserved_connections.unwrap_or(max / 32).min(max.saturating_sub(1));
        let share = if behind_proxy { max } else { (max / 8).max(MIN_PER_CLIENT) };
        let per_client = limits.max_connections_per_client.unwrap_or(share);
        Self { max, reserved, per_client }
    }
}

/// The open-connection budget shared by every worker.
pub struct Capacity {
    pub budget: Budget,
    general: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    by_client: Arc<DashMap<IpAddr, usize>>,
}

/// One admitted connection's hold on the budget, given back when dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    /// The slot is one of the reserve: it serves no inference request.
    pub reserved: bool,
    _client: ClientShare,
}

/// One connection of a client, counted until dropped.
struct ClientShare {
    by_client: Arc<DashMap<IpAddr, usize>>,
    ip: IpAddr,
}

impl Drop for ClientShare {
    fn drop(&mut self) {
        self.by_client.remove_if_mut(&self.ip, |_, n| {
            *n -= 1;
            *n == 0
        });
    }
}

impl Capacity {
    pub fn new(budget: Budget) -> Self {
        Self {
            budget,
            general: Arc::new(Semaphore::new(budget.max - budget.reserved)),
            reserve: Arc::new(Semaphore::new(budget.reserved)),
            by_client: Arc::default(),
        }
    }

    /// A slot for one more connection from `client`, if it has its share
    /// left and there is one: a general slot, else one of the reserve.
    pub fn admit(&self, client: IpAddr) -> Result<Slot, Full> {
        let ip = client.to_canonical();
        {
            let mut held = self.by_client.entry(ip).or_insert(0);
            if *held >= self.budget.per_client {
                return Err(Full::Client);
            }
            *held += 1;
        }
        let client = ClientShare { by_client: self.by_client.clone(), ip };
        if let Ok(permit) = self.general.clone().try_acquire_owned() {
            return Ok(Slot { _permit: permit, reserved: false, _client: client });
        }
        let permit = self.reserve.clone().try_acquire_owned().map_err(|_| Full::Gateway)?;
        Ok(Slot { _permit: permit, reserved: true, _client: client })
    }
}

fn default_max(fd_limit: Option<usize>) -> usize {
    fd_limit.map_or(4096, |n| (n.saturating_sub(RESERVED_FDS) / 2).max(MIN_CONNECTIONS))
}

/// Whether a request needs a general slot: the inference endpoints hold a
/// connection for as long as an answer takes; everything else is the
/// operator's and fits in the reserve.
pub fn is_inference(method: &http::Method, path: &str) -> bool {
    *method == http::Method::POST && (path.starts_with("/v1/") || path.starts_with("/v1beta/"))
}

/// The `503` of a request on a reserved slot that needs a general one.
pub fn refused_on_reserve() -> http::Response<axum::body::Body> {
    let mut resp = http::Response::new(axum::body::Body::from(refusal_body(Full::Gateway)));
    *resp.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    let h = resp.headers_mut();
    h.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    h.insert(http::header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    resp
}

/// Answers a connection beyond the budget with a `503` and closes it.
pub async fn refuse(mut tcp: TcpStream, full: Full) {
    let _ = tokio::time::timeout(REFUSAL_BUDGET, async {
        tcp.write_all(refusal(full).as_bytes()).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 4096];
        while tcp.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// This process's soft descriptor limit.
#[cfg(unix)]
fn fd_limit() -> Option<usize> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given, nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    ok.then(|| usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
fn fd_limit() -> Option<usize> {
    None
}

/// Raises the soft descriptor limit to the hard one (as most servers do
/// at start); returns the limit in force.
#[cfg(unix)]
pub fn raise_fd_limit() -> Option<usize> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and write only the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}

#[cfg(not(unix))]
pub fn raise_fd_limit() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3));

    #[test]
    fn the_default_leaves_a_reserve_and_halves_the_rest() {
        assert_eq!(default_max(Some(20_000)), 9_872);
        assert_eq!(default_max(Some(1_024)), 384);
        assert_eq!(default_max(Some(100)), MIN_CONNECTIONS);
        assert_eq!(default_max(None), 4096);
        let limits = ClientLimits { max_connections: Some(9_872), ..ClientLimits::default() };
        assert_eq!(Budget::of(&limits, false), Budget { max: 9_872, reserved: 308, per_client: 1_234 });
        assert_eq!(Budget::of(&limits, true).per_client, 9_872, "behind a proxy, the proxy is every client");
        let small = ClientLimits { max_connections: Some(2), ..ClientLimits::default() };
        assert_eq!(Budget::of(&small, false), Budget { max: 2, reserved: 0, per_client: MIN_PER_CLIENT });
    }

    #[test]
    fn the_refusal_is_a_complete_response() {
        for full in [Full::Gateway, Full::Client] {
            let text = refusal(full);
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
            assert!(serde_json::from_str::<serde_json::Value>(body).is_ok());
        }
    }

    #[tokio::test]
    async fn capacity_admits_up_to_its_max_then_the_reserve() {
        let c = Capacity::new(Budget { max: 3, reserved: 1, per_client: 10 });
        let (a, b) = (c.admit(A).unwrap(), c.admit(A).unwrap());
        assert!(!a.reserved && !b.reserved);
        let r = c.admit(B).unwrap();
        assert!(r.reserved, "the last slot is the reserve's");
        assert_eq!(c.admit(B).err(), Some(Full::Gateway));
        drop(a);
        assert!(!c.admit(B).unwrap().reserved, "a freed general slot");
    }

    #[tokio::test]
    async fn one_client_takes_at_most_its_share() {
        let c = Capacity::new(Budget { max: 10, reserved: 0, per_client: 2 });
        let held = [c.admit(A).unwrap(), c.admit(A).unwrap()];
        assert_eq!(c.admit(A).err(), Some(Full::Client));
        assert!(c.admit(B).is_ok(), "another client is served");
        drop(held);
        assert!(c.admit(A).is_ok());
        assert!(c.by_client.len() <= 1, "counts of clients gone are forgotten");
    }

    #[test]
    fn only_inference_requests_need_a_general_slot() {
        use http::Method;
        assert!(is_inference(&Method::POST, "/v1/chat/completions"));
        assert!(is_inference(&Method::POST, "/v1beta/models/g:generateContent"));
        assert!(!is_inference(&Method::GET, "/v1/models"));
        assert!(!is_inference(&Method::POST, "/api/auth/login"));
        assert!(!is_inference(&Method::GET, "/health"));
    }
}
