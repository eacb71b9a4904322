use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::resilience::request_queue::{Limiter, Rates};

fn entry(concurrent: u32, max_wait_ms: u64, max_depth: u64) -> Entry {
    let rates = Rates { per_minute: 1_000, min_time: Duration::ZERO, concurrent };
    let queue = Queue {
        id: "openai:c1".into(),
        connection_id: "c1".into(),
        model: None,
        limiter: Mutex::new(Limiter::new(rates, Instant::now())),
    };
    Entry {
        queue: Arc::new(queue),
        max_wait: Duration::from_millis(max_wait_ms),
        execution: Duration::from_secs(1),
        max_depth,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_with_both_numbers_and_the_others_complete() {
    let e = entry(1, 60_000, 1);
    let first = e.try_start().unwrap().expect("nobody waits");
    let second = e.wait();
    let refused = async {
        tokio::task::yield_now().await;
        let refused = e.admits().unwrap_err();
        assert_eq!(e.try_start().err(), Some(refused.clone()));
        drop(first);
        refused
    };
    let (second, refused) = tokio::join!(second, refused);
    assert!(second.is_ok(), "the queued request starts once the first finishes");
    assert_eq!(refused, QueueRefused::Full { id: "openai:c1".into(), queued: 1, max: 1 });
    let message = refused.message();
    assert!(message.contains("openai:c1") && message.contains("1 queued") && message.contains("maxQueueDepth (1)"));
}

#[tokio::test(start_paused = true)]
async fn an_unbounded_queue_serves_every_waiter_in_arrival_order() {
    let e = entry(1, 60_000, 0);
    let order = Mutex::new(Vec::new());
    let job = |n: usize| {
        let (e, order) = (&e, &order);
        async move {
            let slot = e.wait().await.expect("served");
            order.lock().push(n);
            tokio::time::sleep(ms(10)).await;
            drop(slot);
        }
    };
    let held = e.try_start().unwrap().expect("free");
    let release = async {
        tokio::time::sleep(ms(5)).await;
        drop(held);
    };
    tokio::join!(job(1), job(2), job(3), job(4), release);
    assert_eq!(*order.lock(), [1, 2, 3, 4]);
}

#[tokio::test(start_paused = true)]
async fn the_queue_wait_ends_in_a_timeout_but_stops_counting_once_started() {
    let e = entry(1, 1_000, 0);
    let held = e.try_start().unwrap().expect("free");
    let t0 = Instant::now();
    let refused = e.wait().await.err().expect("nothing freed");
    assert_eq!(Instant::now() - t0, ms(1_000));
    assert!(matches!(refused, QueueRefused::Timeout { .. }));
    assert!(refused.message().contains("maxWaitMs (1000ms)"), "{}", refused.message());
    // Freed just inside the budget: the request starts and is not cut.
    let release = async {
        tokio::time::sleep(ms(900)).await;
        drop(held);
    };
    let (started, ()) = tokio::join!(e.wait(), release);
    let slot = started.expect("started at 900 ms");
    tokio::time::sleep(ms(5_000)).await;
    assert_eq!(e.queue.limiter.lock().counts(Instant::now()).running, 1, "executing, not timed out by the queue");
    drop(slot);
}

#[tokio::test(start_paused = true)]
async fn a_pause_within_the_budget_paces_and_a_longer_one_refuses_at_once() {
    let e = entry(5, 1_000, 0);
    let t0 = Instant::now();
    e.queue.limiter.lock().pause(t0, ms(400));
    let slot = e.wait().await.expect("the pause ends within the budget");
    assert_eq!(Instant::now() - t0, ms(400));
    drop(slot);
    e.queue.limiter.lock().pause(Instant::now(), ms(5_000));
    let t1 = Instant::now();
    let refused = e.wait().await.err().expect("the pause outlasts the budget");
    assert_eq!(Instant::now(), t1, "refused at once, not after waiting");
    assert_eq!(refused.retry_after_secs(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_line_behind_a_request_that_never_finishes_is_failed_as_wedged() {
    let e = entry(1, 3_600_000, 0);
    let _stuck = e.try_start().unwrap().expect("free");
    let t0 = Instant::now();
    let refused = e.wait().await.err().expect("wedged");
    assert!(matches!(refused, QueueRefused::Wedged { .. }), "{refused:?}");
    assert_eq!(Instant::now() - t0, e.execution + WEDGE_GRACE);
    assert_eq!(e.queue.limiter.lock().queued(), 0, "the refused request left the line");
}
