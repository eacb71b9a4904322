//! The last known egress IP of each connection of an egress-bucketed
//! provider (SPEC §R7). Providers such as `opencode-go` count quota per
//! source IP, so every account that leaves through one IP shares a bucket:
//! when one of them hits a quota or rate-limit 429, its siblings on the
//! same IP are about to hit it too. The IP is the local address of the
//! upstream socket, recorded from each response (and at start from
//! `proxy_logs`, 24 h back); an entry older than 24 h no longer counts.

use dashmap::DashMap;
use std::net::IpAddr;

/// How long an observed egress IP stays trusted.
pub const EGRESS_WINDOW_MS: i64 = 24 * 60 * 60 * 1000;
/// An unchanged entry is re-stamped at most this often, so a busy
/// connection costs one map read per response, not a write.
const RESTAMP_MS: i64 = 60_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    ip: IpAddr,
    at: i64,
}

#[derive(Default)]
pub struct EgressMap {
    seen: DashMap<String, Seen>,
}

impl EgressMap {
    /// `connection_id` just talked to its upstream from `ip`.
    pub fn record(&self, connection_id: &str, ip: IpAddr, now: i64) {
        if let Some(s) = self.seen.get(connection_id)
            && s.ip == ip
            && now - s.at < RESTAMP_MS
        {
            return;
        }
        self.seen.insert(connection_id.to_owned(), Seen { ip, at: now });
    }

    /// An observation read back from storage; a newer one already known wins.
    pub fn restore(&self, connection_id: &str, ip: IpAddr, at: i64) {
        let mut entry = self.seen.entry(connection_id.to_owned()).or_insert(Seen { ip, at });
        if entry.at < at {
            *entry = Seen { ip, at };
        }
    }

    /// The connection's egress IP, if seen within the window.
    pub fn ip_of(&self, connection_id: &str, now: i64) -> Option<IpAddr> {
        self.seen.get(connection_id).filter(|s| now - s.at <= EGRESS_WINDOW_MS).map(|s| s.ip)
    }

    /// Which of `pool` last left through `ip` within the window.
    pub fn sharing<'p>(&self, ip: IpAddr, pool: impl IntoIterator<Item = &'p str>, now: i64) -> Vec<&'p str> {
        pool.into_iter().filter(|id| self.ip_of(id, now) == Some(ip)).collect()
    }
}

#[cfg(test)]
mod tests;
