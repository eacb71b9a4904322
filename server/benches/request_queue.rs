//! Micro-benchmark of a protected connection's request-queue path (run by
//! `cargo xtask bench`): the connection's effective queue settings, its
//! queue looked up, a start taken and given back — what protection adds to
//! a request whose limits are never reached. Prints one JSON line.

use app::types::{RateLimitOverrides, settings::RequestQueueSettings};
use server::resilience::request_queue::{QueueSlot, Rates, RequestQueues};
use std::hint::black_box;
use tokio::time::Instant;

const CONNECTIONS: usize = 100;
const REQUESTS: usize = 500_000;

fn main() {
    let settings = RequestQueueSettings::default();
    let overrides =
        RateLimitOverrides { rpm: Some(100_000_000), min_time_between_requests_ms: Some(0), ..Default::default() };
    let queues = RequestQueues::default();
    let ids: Vec<String> = (0..CONNECTIONS).map(|c| format!("conn-{c}")).collect();
    let start = Instant::now();
    let mut started = 0usize;
    for i in 0..REQUESTS {
        let s = settings.for_connection(black_box(&overrides));
        let queue = queues.queue("openai", &ids[i % CONNECTIONS], None, Rates::of(&s));
        if queue.limiter.lock().try_start(Instant::now()) {
            started += 1;
            drop(black_box(QueueSlot::started(queue)));
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / REQUESTS as f64;
    println!("{{\"connections\":{CONNECTIONS},\"nsPerRequest\":{ns:.0},\"started\":{started}}}");
}
