#![expect(clippy::disallowed_methods, reason = "the tests play concurrent requests as tasks")]

use proptest::prelude::*;
use std::{sync::Arc, time::Duration};

use super::*;

fn limit(c: &Concurrency, key: GateKey, cap: u32, fail_open: bool) -> Limit {
    c.limit(key, cap, fail_open)
}

#[tokio::test(start_paused = true)]
async fn a_waiter_gets_the_slot_when_it_is_given_back() {
    let c = Concurrency::default();
    let held = Concurrency::try_acquire(&[limit(&c, GateKey::account("c1"), 1, false)]).unwrap();
    let waiter = tokio::spawn({
        let l = vec![limit(&c, GateKey::account("c1"), 1, false)];
        async move { wait(l, None).await.map(|_| Instant::now()) }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    let released_at = Instant::now();
    drop(held);
    assert_eq!(waiter.await.unwrap(), Ok(released_at), "woken at the release, not later");
}

#[tokio::test(start_paused = true)]
async fn a_hard_limit_times_out_and_a_full_queue_refuses_at_once() {
    let c = Concurrency::default();
    let key = GateKey::account("c1");
    let _held = Concurrency::try_acquire(&[limit(&c, key.clone(), 1, false)]).unwrap();
    let started = Instant::now();
    let waiters: Vec<_> =
        (0..SEMAPHORE_QUEUE).map(|_| tokio::spawn(wait(vec![limit(&c, key.clone(), 1, false)], None))).collect();
    tokio::task::yield_now().await;
    assert_eq!(c.limit(key.clone(), 1, false).gate.counts().queued, SEMAPHORE_QUEUE);
    let refused = wait(vec![limit(&c, key.clone(), 1, false)], None).await.err();
    assert_eq!((refused, started.elapsed()), (Some(Refused::QueueFull(key.clone())), Duration::ZERO));
    for w in waiters {
        assert_eq!(w.await.unwrap().err(), Some(Refused::Timeout(key.clone())));
    }
    assert_eq!(started.elapsed(), SEMAPHORE_WAIT);
    assert_eq!(c.limit(key.clone(), 1, false).gate.counts().queued, 0, "every place given back");
    assert_eq!(Refused::Timeout(key).message(), "Semaphore timeout after 30000ms for qsconn:c1");
}

#[tokio::test(start_paused = true)]
async fn a_fail_open_limit_lets_the_request_through_without_its_slot() {
    let c = Concurrency::default();
    let account = GateKey::account("c1");
    let _held = Concurrency::try_acquire(&[limit(&c, account.clone(), 1, true)]).unwrap();
    let model = limit(&c, GateKey::model("c1", "m"), 1, false);
    let started = Instant::now();
    let permit = wait(vec![limit(&c, account.clone(), 1, true), model.clone()], None).await.expect("fail-open");
    assert_eq!(started.elapsed(), SEMAPHORE_WAIT, "it waited its turn first");
    assert_eq!((c.limit(account, 1, true).gate.counts().running, model.gate.counts().running), (1, 1));
    drop(permit);
    assert_eq!(model.gate.counts().running, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// No deadlock whatever the limit sets: requests needing random sets
    /// of gates (random caps, each set given in random order) all get
    /// their slots in the end, and no gate ever runs above its cap.
    #[test]
    fn no_deadlock_whatever_the_limit_sets(
        caps in proptest::collection::vec(1u32..3, 1..5),
        wants in proptest::collection::vec((proptest::collection::vec(0usize..5, 1..4), 1u64..50), 1..20),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            let c = Arc::new(Concurrency::default());
            let key = |i: usize| if i == 0 { GateKey::account("c") } else { GateKey::model("c", &i.to_string()) };
            let cap = |i: usize| caps[i % caps.len()];
            let tasks: Vec<_> = wants.iter().cloned().map(|(mut gates, hold_ms)| {
                let c = c.clone();
                gates.sort_unstable();
                gates.dedup();
                let limits: Vec<Limit> = gates.iter().map(|&i| c.limit(key(i), cap(i), false)).collect();
                tokio::spawn(async move {
                    let permit = wait(limits.clone(), None).await;
                    assert!(permit.is_ok(), "every request gets its slots");
                    for l in &limits {
                        assert!(l.gate.counts().running <= l.cap, "{} above its cap", l.key);
                    }
                    tokio::time::sleep(Duration::from_millis(hold_ms)).await;
                    drop(permit);
                })
            }).collect();
            for t in tasks {
                t.await.unwrap();
            }
            assert!(c.snapshot().iter().all(|(_, n)| n.running == 0 && n.queued == 0));
        });
    }
}
