//! Per-request identity: every `/v1` response carries `X-Request-Id` and
//! `X-OmniRoute-Selected-Connection-Id` (`none` when no connection served).

use axum::http::HeaderName;
use std::sync::{
    OnceLock,
    atomic::{AtomicU64, Ordering},
};

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const SELECTED_CONNECTION: HeaderName = HeaderName::from_static("x-omniroute-selected-connection-id");

/// The gateway's id for one client request.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// A new request id: 32 hex chars, a random per-process prefix and a
/// counter — unique without a random-number syscall per request.
pub fn next_request_id() -> String {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(rand::random::<u64>);
    let mut id = String::with_capacity(32);
    push_hex(&mut id, prefix);
    push_hex(&mut id, SEQ.fetch_add(1, Ordering::Relaxed));
    id
}

/// `n` as 16 lowercase hex digits (`format!` costs more than the rest of
/// the id: this runs once per request).
fn push_hex(out: &mut String, n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.extend((0..16).rev().map(|i| char::from(DIGITS[(n >> (i * 4)) as usize & 0xf])));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_32_hex_digits_a_shared_prefix_and_a_count() {
        let (a, b) = (next_request_id(), next_request_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{a}");
        assert_eq!(a[..16], b[..16]);
        let count = |id: &str| u64::from_str_radix(&id[16..], 16).unwrap();
        assert!(count(&b) > count(&a));
        let mut s = String::new();
        push_hex(&mut s, 0x0123_4567_89ab_cdef);
        assert_eq!(s, "0123456789abcdef");
    }
}
