//! Enough upstream connections for every request in flight.
//!
//! An upstream that offers HTTP/2 carries many requests on one connection,
//! but only as many at once as its `SETTINGS_MAX_CONCURRENT_STREAMS`
//! allows (100 at some providers; RFC 9113 asks servers for at least 100).
//! hyper's pooled client keeps one HTTP/2 connection per host and holds a
//! request beyond that limit until another stream ends — for an agent's
//! stream, minutes: the request would wait out its readiness timeout and
//! its account would be blamed. So a thread's requests to an upstream
//! that answered over HTTP/2 go out in lanes, each a client with its own
//! pool and at most [`PER_LANE`] requests in flight: the first lane with
//! room takes a request, and a new lane opens when every one is full.
//! Requests to any other upstream stay on the first lane: over HTTP/1.1
//! each has a connection of its own anyway, and spread over many pools the
//! idle ones would be kept many times over.
//!
//! The lanes after the first speak HTTP/2 only. A pool that does not know
//! yet which protocol a host speaks lets every request that finds no
//! connection start a handshake of its own (and keeps one); an HTTP/2-only
//! pool lets one handshake run and the others wait for it, so a burst that
//! opens a lane opens one connection, not a hundred.

use std::{
    cell::RefCell,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

/// Requests in flight on one lane at most: the fewest concurrent streams
/// an HTTP/2 server should allow.
pub const PER_LANE: usize = 100;

/// One thread's lanes over clients of type `C`.
pub struct Lanes<C> {
    lanes: RefCell<Vec<Arc<Lane<C>>>>,
}

/// A client and the requests in flight on it.
pub struct Lane<C> {
    pub client: C,
    in_flight: AtomicUsize,
}

/// A request's place on a lane, given back when dropped (with the
/// response body, for a stream).
pub struct Taken<C>(Arc<Lane<C>>);

impl<C> Taken<C> {
    pub fn client(&self) -> &C {
        &self.0.client
    }
}

impl<C> Drop for Taken<C> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<C> Default for Lanes<C> {
    fn default() -> Self {
        Self { lanes: RefCell::new(Vec::new()) }
    }
}

impl<C> Lanes<C> {
    /// A place on the first lane; with `spill`, on the first lane with
    /// room, on a new one when every lane is full. `open(first)` makes a
    /// lane's client (`first`: for the first lane).
    pub fn take(&self, spill: bool, open: impl FnOnce(bool) -> C) -> Taken<C> {
        let mut lanes = self.lanes.borrow_mut();
        let room = |l: &&Arc<Lane<C>>| !spill || l.in_flight.load(Ordering::Relaxed) < PER_LANE;
        let lane = match lanes.iter().find(room) {
            Some(lane) => lane.clone(),
            None => {
                let lane = Arc::new(Lane { client: open(lanes.is_empty()), in_flight: AtomicUsize::new(0) });
                lanes.push(lane.clone());
                lane
            }
        };
        lane.in_flight.fetch_add(1, Ordering::Relaxed);
        Taken(lane)
    }

    #[cfg(test)]
    fn count(&self) -> usize {
        self.lanes.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_opens_when_every_lane_is_full_and_a_freed_place_is_taken_first() {
        let lanes = Lanes::default();
        let mut opened = 0;
        let mut open = |first: bool| {
            opened += 1;
            assert_eq!(first, opened == 1);
            opened
        };
        let first: Vec<_> = (0..PER_LANE).map(|_| lanes.take(true, &mut open)).collect();
        assert!(first.iter().all(|t| *t.client() == 1));
        let overflow = lanes.take(true, &mut open);
        assert_eq!((*overflow.client(), lanes.count()), (2, 2));
        drop(first.into_iter().next());
        assert_eq!(*lanes.take(true, &mut open).client(), 1, "the first lane has room again");
        assert_eq!(lanes.count(), 2);
    }

    #[test]
    fn a_request_that_may_not_spill_stays_on_the_first_lane() {
        let lanes = Lanes::default();
        let full: Vec<_> = (0..PER_LANE).map(|_| lanes.take(false, |_| 1)).collect();
        assert_eq!((*lanes.take(false, |_| 2).client(), lanes.count()), (1, 1));
        drop(full);
    }
}
