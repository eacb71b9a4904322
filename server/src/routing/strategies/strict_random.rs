//! `strict-random`: the head comes from a shuffled deck of the combo's
//! targets — each leads exactly once per round, and a new round never
//! starts with the target that ended the last — and the others follow in
//! a fresh shuffle. Use it for random spreading that stays fair over short
//! runs: n requests always lead with n different targets.

use rand::{Rng, seq::SliceRandom};

use super::Candidate;

/// The deck of one combo: its targets' keys in this round's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Deck {
    order: Vec<String>,
    next: usize,
}

impl Deck {
    /// The next key, reshuffling when the round is over or the targets changed.
    fn draw(&mut self, keys: &[&str], rng: &mut impl Rng) -> Option<String> {
        let mut sorted: Vec<&str> = keys.to_vec();
        sorted.sort_unstable();
        let mut dealt: Vec<&str> = self.order.iter().map(String::as_str).collect();
        dealt.sort_unstable();
        if dealt != sorted || self.next >= self.order.len() {
            let previous_last = (dealt == sorted).then(|| self.order.last().cloned()).flatten();
            let mut order: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
            order.shuffle(rng);
            if order.len() > 1 && previous_last.as_ref() == order.first() {
                let swap = rng.gen_range(1..order.len());
                order.swap(0, swap);
            }
            self.order = order;
            self.next = 0;
        }
        let key = self.order.get(self.next).cloned();
        self.next += 1;
        key
    }
}

pub fn order(targets: &[Candidate], deck: &mut Deck, rng: &mut impl Rng) -> Vec<usize> {
    let keys: Vec<&str> = targets.iter().map(|t| t.key.as_str()).collect();
    let Some(head) = deck.draw(&keys, rng).and_then(|k| keys.iter().position(|c| *c == k)) else {
        return (0..targets.len()).collect();
    };
    let mut rest: Vec<usize> = (0..targets.len()).filter(|&i| i != head).collect();
    rest.shuffle(rng);
    std::iter::once(head).chain(rest).collect()
}
