use proptest::prelude::*;

use super::*;

fn counts(running: u32) -> Counts {
    Counts { running, ..Counts::default() }
}

#[test]
fn admit_names_the_first_full_gate_in_locking_order() {
    assert_eq!(admit(&[], &[]), Ok(()));
    assert_eq!(admit(&[counts(0), counts(2)], &[1, 3]), Ok(()));
    assert_eq!(admit(&[counts(1), counts(3)], &[1, 3]), Err(0));
    assert_eq!(admit(&[counts(0), counts(3)], &[1, 3]), Err(1));
}

#[test]
fn gates_sort_account_before_model_and_name_themselves() {
    let (a, m) = (GateKey::account("c1"), GateKey::model("c1", "glm-5"));
    assert!(a < m && GateKey::model("a", "z") > GateKey::account("z"));
    assert!(GateKey::global() < GateKey::account(""), "the global gate is locked first");
    assert_eq!(GateKey::global().to_string(), "qsglobal");
    assert_eq!((a.to_string(), m.to_string()), ("qsconn:c1".to_owned(), "qsconn:c1:model:glm-5".to_owned()));
}

#[test]
fn a_refused_acquire_takes_nothing_and_a_permit_gives_everything_back() {
    let c = Concurrency::default();
    let limits = vec![c.limit(GateKey::account("c1"), 2, false), c.limit(GateKey::model("c1", "m"), 1, false)];
    let first = Concurrency::try_acquire(&limits).expect("room at both");
    assert_eq!(Concurrency::try_acquire(&limits).err(), Some(1), "the model gate is full");
    assert_eq!(limits[0].gate.counts().running, 1, "the account slot was not kept");
    // Another model of the same account is not held up by the full one.
    let other = vec![limits[0].clone(), c.limit(GateKey::model("c1", "n"), 1, false)];
    let second = Concurrency::try_acquire(&other).expect("the account still has room");
    assert_eq!(Concurrency::try_acquire(&other).err(), Some(0), "now the account is full");
    drop((first, second));
    assert!(c.snapshot().iter().all(|(_, n)| n.running == 0));
}

#[test]
fn a_queue_holds_at_most_its_maximum_and_frees_its_places() {
    let c = Concurrency::default();
    let gate = c.limit(GateKey::account("c1"), 1, false).gate;
    let tickets: Vec<_> = (0..3).map_while(|_| gate.enqueue(2)).collect();
    assert_eq!((tickets.len(), gate.counts().queued), (2, 2));
    drop(tickets);
    assert_eq!(gate.counts().queued, 0);
}

proptest! {
    /// All-or-none: whatever is held, an acquire either adds one at every
    /// gate (all had room) or changes nothing and names a full gate.
    #[test]
    fn acquire_is_all_or_none(held in proptest::collection::vec(0u32..4, 1..5), caps in proptest::collection::vec(1u32..4, 1..5)) {
        let c = Concurrency::default();
        let n = held.len().min(caps.len());
        let limits: Vec<Limit> = (0..n).map(|i| c.limit(GateKey::model("c", &i.to_string()), caps[i], false)).collect();
        let mut permits = Vec::new();
        for (i, h) in held.iter().take(n).enumerate() {
            for _ in 0..*h {
                permits.push(Concurrency::try_acquire(&limits[i..=i]).ok());
            }
        }
        let before: Vec<u32> = limits.iter().map(|l| l.gate.counts().running).collect();
        match Concurrency::try_acquire(&limits) {
            Ok(_p) => {
                prop_assert!(before.iter().zip(&caps).all(|(b, cap)| b < cap));
                let during: Vec<u32> = limits.iter().map(|l| l.gate.counts().running).collect();
                prop_assert_eq!(during, before.iter().map(|b| b + 1).collect::<Vec<_>>());
            }
            Err(full) => {
                prop_assert!(before[full] >= caps[full]);
                prop_assert!(before[..full].iter().zip(&caps).all(|(b, cap)| b < cap));
                let after: Vec<u32> = limits.iter().map(|l| l.gate.counts().running).collect();
                prop_assert_eq!(after, before);
            }
        }
    }
}
