//! How many client connections may be open at once, and the answer to
//! one more. Each proxied request holds a client socket and (usually) an
//! upstream one, so the default is half of the descriptors left after a
//! reserve for the database, the log files and the listener sockets.

use std::{sync::Arc, time::Duration};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::{OwnedSemaphorePermit, Semaphore},
};

/// Descriptors kept out of the client budget.
const RESERVED_FDS: usize = 256;
/// The smallest default, whatever the descriptor limit says.
const MIN_CONNECTIONS: usize = 64;
/// How long the refusal may take to write and to drain what the client
/// already sent (closing with unread data would reset the connection
/// before the client reads the 503).
const REFUSAL_BUDGET: Duration = Duration::from_secs(1);

const REFUSAL: &str = concat!(
    "HTTP/1.1 503 Service Unavailable\r\n",
    "content-type: application/json\r\n",
    "retry-after: 1\r\n",
    "connection: close\r\n",
    "content-length: 132\r\n\r\n",
    r#"{"error":{"message":"The gateway has too many open connections; retry shortly","type":"server_error","code":"too_many_connections"}}"#,
);

/// The open-connection budget shared by every worker.
pub struct Capacity {
    permits: Arc<Semaphore>,
    pub max: usize,
}

impl Capacity {
    /// `max` connections, or the default for this process's descriptor
    /// limit.
    pub fn new(max: Option<usize>) -> Self {
        let max = max.unwrap_or_else(|| default_max(fd_limit()));
        Self { permits: Arc::new(Semaphore::new(max)), max }
    }

    /// A slot for one more connection, if there is one.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }
}

fn default_max(fd_limit: Option<usize>) -> usize {
    fd_limit.map_or(4096, |n| (n.saturating_sub(RESERVED_FDS) / 2).max(MIN_CONNECTIONS))
}

/// Answers a connection beyond the budget with a `503` and closes it.
pub async fn refuse(mut tcp: TcpStream) {
    let _ = tokio::time::timeout(REFUSAL_BUDGET, async {
        tcp.write_all(REFUSAL.as_bytes()).await?;
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

    #[test]
    fn the_default_leaves_a_reserve_and_halves_the_rest() {
        assert_eq!(default_max(Some(20_000)), 9_872);
        assert_eq!(default_max(Some(1_024)), 384);
        assert_eq!(default_max(Some(100)), MIN_CONNECTIONS);
        assert_eq!(default_max(None), 4096);
    }

    #[test]
    fn the_refusal_is_a_complete_response() {
        let (head, body) = REFUSAL.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        assert!(serde_json::from_str::<serde_json::Value>(body).is_ok());
    }

    #[tokio::test]
    async fn capacity_admits_up_to_its_max() {
        let c = Capacity::new(Some(2));
        let (a, b) = (c.admit(), c.admit());
        assert!(a.is_some() && b.is_some());
        assert!(c.admit().is_none());
        drop(a);
        assert!(c.admit().is_some());
    }
}
