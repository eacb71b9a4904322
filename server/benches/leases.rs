//! Micro-benchmark of the lease checks per request (run by `cargo xtask
//! bench`), with 1,000 active leases: the fence of a leased request (its
//! owner's lease, generation and key) and, for a request without a lease,
//! the "held by another session?" check of each of 10 candidate
//! connections. Prints one JSON line.

use server::{
    resilience::clock::ManualClock,
    routing::leases::{Lease, Leases, Owner},
};
use std::{hint::black_box, sync::Arc};
use tokio::time::Instant;

const LEASES: usize = 1_000;
const CANDIDATES: usize = 10;
const REQUESTS: usize = 500_000;

fn main() {
    let leases = Leases::new(Arc::new(ManualClock::new(1_767_225_600_000)));
    let owners: Vec<Owner> = (0..LEASES).filter_map(|i| Owner::parse(&format!("vlo_{i:043}"))).collect();
    for (i, owner) in owners.iter().enumerate() {
        leases.put(Lease {
            id: format!("lease-{i}"),
            owner: *owner,
            key_id: "key-1".into(),
            provider: "openai",
            connection_id: format!("conn-{i}").into(),
            generation: 1,
            expires_at: i64::MAX,
        });
    }
    let candidates: Vec<String> = (0..CANDIDATES).map(|c| format!("conn-{}", c * 150)).collect();

    let start = Instant::now();
    let mut passed = 0usize;
    for i in 0..REQUESTS {
        if leases.fence(black_box(&owners[i % LEASES]), 1, "key-1").is_ok() {
            passed += 1;
        }
    }
    let fence_ns = start.elapsed().as_nanos() as f64 / REQUESTS as f64;

    let start = Instant::now();
    let mut held = 0usize;
    for _ in 0..REQUESTS {
        held += candidates.iter().filter(|c| leases.held_by_other(black_box(c), None)).count();
    }
    let exclusion_ns = start.elapsed().as_nanos() as f64 / REQUESTS as f64;
    println!(
        "{{\"leases\":{LEASES},\"fenceNsPerRequest\":{fence_ns:.0},\"exclusionNsPerRequest\":{exclusion_ns:.0},\"candidates\":{CANDIDATES},\"passed\":{passed},\"held\":{held}}}"
    );
}
