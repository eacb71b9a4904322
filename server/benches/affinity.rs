//! Micro-benchmark of session affinity per request (run by `cargo xtask
//! bench`): the session's hash from its key, the pin looked up and the
//! connection that served touched — with the pin table full (50,000 pins
//! over 100 providers), so no empty-map fast path hides the work. Prints
//! one JSON line.

use server::{
    resilience::clock::ManualClock,
    routing::affinity::{Affinity, MAX_PINS, PinChanges, PinKey, SessionId},
};
use std::{hint::black_box, sync::Arc};
use tokio::time::Instant;

const PROVIDERS: usize = 100;
const REQUESTS: usize = 500_000;
const TTL_MS: u64 = 3_600_000;

fn main() {
    let providers: Vec<&'static str> =
        (0..PROVIDERS).map(|p| &*Box::leak(format!("provider-{p}").into_boxed_str())).collect();
    let affinity = Affinity::new(Arc::new(ManualClock::new(1_767_225_600_000)), PinChanges::detached());
    let sessions: Vec<String> = (0..MAX_PINS).map(|s| format!("header:session-{s:08}")).collect();
    for (i, s) in sessions.iter().enumerate() {
        let key = PinKey { session: SessionId::of(s), provider: providers[i % PROVIDERS] };
        affinity.served(key, &format!("conn-{}", i % 7), TTL_MS);
    }
    let start = Instant::now();
    let mut hits = 0usize;
    for i in 0..REQUESTS {
        let s = i % MAX_PINS;
        let key = PinKey { session: SessionId::of(black_box(&sessions[s])), provider: providers[s % PROVIDERS] };
        if let Some(conn) = affinity.pinned(&key, TTL_MS) {
            hits += 1;
            affinity.served(key, black_box(&conn), TTL_MS);
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / REQUESTS as f64;
    println!("{{\"pins\":{},\"nsPerRequest\":{ns:.0},\"hits\":{hits}}}", affinity.len());
}
