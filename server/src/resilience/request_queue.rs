//! The request queue (SPEC §R5): a local rate limiter per provider
//! connection — per model of it for providers whose quotas are per model —
//! that paces how requests *start*: at most `requestsPerMinute` starts per
//! minute (a reservoir refilled every minute), at least
//! `minTimeBetweenRequestsMs` between two starts, at most
//! `concurrentRequests` executing at once. §R4 bounds what is in flight to
//! the last byte; this layer keeps a burst from reaching the upstream
//! faster than its rate limit allows, so the upstream's 429 (and the
//! cooldown it causes) never comes.
//!
//! A request *executes* from its start until its answer is had: the whole
//! body of a JSON answer, the commit of a stream (what comes after is the
//! stream watchdogs' business, §R6). Waiting requests are served first in,
//! first out: only the head of the line may start, and only the head is
//! woken when something changes, so a long line costs no thundering herd.
//!
//! The state is pure: every method takes `now`, and the async edge
//! (`proxy::dispatch::slots`) does the waiting. Each queue has its own
//! small mutex, never held across an await.

use dashmap::DashMap;
use parking_lot::Mutex;
use std::{collections::VecDeque, sync::Arc, time::Duration};
use tokio::{sync::Notify, time::Instant};

use app::types::settings::RequestQueueSettings;

/// How often the reservoir refills to `requestsPerMinute`.
pub const REFILL_EVERY: Duration = Duration::from_secs(60);
/// Grace beyond the longest execution before a line that does not move
/// counts as wedged.
pub const WEDGE_GRACE: Duration = Duration::from_secs(60);

/// Whether a connection's requests go through its queue: its own
/// `protection` when set, else `autoEnableApiKeyProviders` for API-key
/// connections.
pub fn protected(s: &RequestQueueSettings, protection: Option<bool>, api_key_auth: bool) -> bool {
    protection.unwrap_or(s.auto_enable_api_key_providers && api_key_auth)
}

/// One queue's pace, from `requestQueue` and the connection's overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rates {
    pub per_minute: u64,
    pub min_time: Duration,
    pub concurrent: u32,
}

impl Rates {
    pub fn of(s: &RequestQueueSettings) -> Self {
        Self {
            per_minute: s.requests_per_minute.max(1),
            min_time: Duration::from_millis(s.min_time_between_requests_ms),
            concurrent: u32::try_from(s.concurrent_requests).unwrap_or(u32::MAX).max(1),
        }
    }
}

impl Rates {
    /// This instance's part when `instances` gateways share the
    /// connection (several on one Postgres): the rate and the executing
    /// cap are split (at least one each), the spacing stretched, so that
    /// together they keep the configured pace without asking each other
    /// per request.
    pub fn shared_by(self, instances: u32) -> Self {
        let n = instances.max(1);
        Self {
            per_minute: (self.per_minute / u64::from(n)).max(1),
            min_time: self.min_time * n,
            concurrent: (self.concurrent / n).max(1),
        }
    }
}

/// The answer of the admission check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Admit,
    Reject,
}

/// Whether a request may join a queue that already holds `queued`
/// waiting requests, under `maxQueueDepth` (`0` = unbounded).
pub fn admit(queued: u64, max_queue_depth: u64) -> Admission {
    if max_queue_depth > 0 && queued >= max_queue_depth { Admission::Reject } else { Admission::Admit }
}

/// When the head of the line may start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    Now,
    /// Not before this instant (reservoir empty, or min time spacing).
    At(Instant),
    /// When an executing request finishes.
    WhenFreed,
}

/// One queue's counters and clock, as the health report shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueCounts {
    pub queued: u32,
    pub running: u32,
    pub limit: u32,
    /// Until when nothing starts: an upstream's pause, or an empty reservoir.
    pub paused_until: Option<Instant>,
}

pub struct Limiter {
    rates: Rates,
    running: u32,
    reservoir: u64,
    refill_at: Instant,
    /// An upstream said when to come back: nothing starts before.
    paused_until: Option<Instant>,
    last_start: Option<Instant>,
    /// The last start or finish: a line that waits without one is wedged.
    last_progress: Instant,
    /// Waiting requests in arrival order, each with its own wake-up.
    waiting: VecDeque<(u64, Arc<Notify>)>,
    next_ticket: u64,
}

impl Limiter {
    pub fn new(rates: Rates, now: Instant) -> Self {
        Self {
            rates,
            running: 0,
            reservoir: rates.per_minute,
            refill_at: now + REFILL_EVERY,
            paused_until: None,
            last_start: None,
            last_progress: now,
            waiting: VecDeque::new(),
            next_ticket: 0,
        }
    }

    /// Follows a settings change; a lower rate takes effect at once.
    pub fn set_rates(&mut self, rates: Rates) {
        if rates != self.rates {
            self.reservoir = self.reservoir.min(rates.per_minute);
            self.rates = rates;
        }
    }

    fn refill(&mut self, now: Instant) {
        if self.paused_until.is_some_and(|p| now >= p) {
            // The upstream's wait is over: a fresh minute starts.
            self.paused_until = None;
            self.reservoir = self.rates.per_minute;
            self.refill_at = now + REFILL_EVERY;
        }
        if now >= self.refill_at {
            self.reservoir = self.rates.per_minute;
            self.refill_at = now + REFILL_EVERY;
        }
    }

    /// When the next request may start, whoever it is.
    pub fn when(&mut self, now: Instant) -> Start {
        self.refill(now);
        if self.running >= self.rates.concurrent {
            return Start::WhenFreed;
        }
        if let Some(until) = self.paused_until {
            return Start::At(until);
        }
        if self.reservoir == 0 {
            return Start::At(self.refill_at);
        }
        match self.last_start.map(|last| last + self.rates.min_time) {
            Some(next) if next > now => Start::At(next),
            _ => Start::Now,
        }
    }

    /// Starts a request now if nobody waits and the pace allows it.
    pub fn try_start(&mut self, now: Instant) -> bool {
        if !self.waiting.is_empty() || self.when(now) != Start::Now {
            return false;
        }
        self.start(now);
        true
    }

    fn start(&mut self, now: Instant) {
        self.running += 1;
        self.reservoir = self.reservoir.saturating_sub(1);
        self.last_start = Some(now);
        self.last_progress = now;
    }

    /// An executing request is done.
    pub fn finish(&mut self, now: Instant) {
        self.running = self.running.saturating_sub(1);
        self.last_progress = now;
        self.wake_head();
    }

    /// Starts nothing before `now + wait` (an upstream said when to come
    /// back); a longer pause already set is kept.
    pub fn pause(&mut self, now: Instant, wait: Duration) {
        let until = now + wait;
        self.paused_until = Some(self.paused_until.map_or(until, |p| p.max(until)));
        // Everyone re-checks whether the pause outlasts their wait.
        for (_, wake) in &self.waiting {
            wake.notify_one();
        }
    }

    /// Follows the upstream's `x-ratelimit-remaining-requests` /
    /// `x-ratelimit-reset-requests`: never start more than it says remain;
    /// none left → pause until its reset.
    pub fn adapt(&mut self, now: Instant, remaining: u64, reset: Option<Duration>) {
        self.refill(now);
        self.reservoir = self.reservoir.min(remaining);
        if let (0, Some(reset)) = (remaining, reset) {
            self.pause(now, reset);
        }
    }

    /// Joins the line: a ticket and the wake-up its holder waits on.
    pub fn join(&mut self) -> (u64, Arc<Notify>) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let wake = Arc::new(Notify::new());
        self.waiting.push_back((ticket, wake.clone()));
        (ticket, wake)
    }

    /// Starts the head of the line when it is `ticket` and the pace allows.
    /// Otherwise, when it may start at the earliest: behind the head only
    /// an empty reservoir (a pause) is a known time.
    pub fn start_head(&mut self, ticket: u64, now: Instant) -> Result<(), Start> {
        let head = self.waiting.front().is_some_and(|(t, _)| *t == ticket);
        match (head, self.when(now)) {
            (true, Start::Now) => {
                self.waiting.pop_front();
                self.start(now);
                // The next in line may start too (concurrency above one).
                self.wake_head();
                Ok(())
            }
            (true, later) => Err(later),
            (false, Start::At(at)) if self.paused_until.is_some() || self.reservoir == 0 => Err(Start::At(at)),
            (false, _) => Err(Start::WhenFreed),
        }
    }

    /// Leaves the line (timed out, refused, or the client went away).
    pub fn leave(&mut self, ticket: u64) {
        let was_head = self.waiting.front().is_some_and(|(t, _)| *t == ticket);
        self.waiting.retain(|(t, _)| *t != ticket);
        if was_head {
            self.wake_head();
        }
    }

    fn wake_head(&self) {
        if let Some((_, wake)) = self.waiting.front() {
            wake.notify_one();
        }
    }

    /// Whether requests wait while nothing has started or finished for
    /// longer than any execution may take (`execution` + [`WEDGE_GRACE`])
    /// and no pause explains it: the line no longer moves.
    pub fn wedged(&mut self, now: Instant, execution: Duration) -> bool {
        !self.waiting.is_empty()
            && now.saturating_duration_since(self.last_progress) >= execution + WEDGE_GRACE
            && !matches!(self.when(now), Start::At(_))
    }

    /// When the line counts as wedged if nothing moves before.
    pub fn wedge_at(&self, execution: Duration) -> Instant {
        self.last_progress + execution + WEDGE_GRACE
    }

    pub fn counts(&self, now: Instant) -> QueueCounts {
        let empty = (self.reservoir == 0 && self.refill_at > now).then_some(self.refill_at);
        QueueCounts {
            queued: u32::try_from(self.waiting.len()).unwrap_or(u32::MAX),
            running: self.running,
            limit: self.rates.concurrent,
            paused_until: self.paused_until.filter(|p| *p > now).or(empty),
        }
    }

    pub fn queued(&self) -> u64 {
        self.waiting.len() as u64
    }
}

/// One queue: its identity and its limiter.
pub struct Queue {
    /// `provider:connectionId`, or `provider:connectionId:model` for a
    /// model-scoped queue; errors and the health report name it so.
    pub id: String,
    pub connection_id: Arc<str>,
    pub model: Option<Arc<str>>,
    pub limiter: Mutex<Limiter>,
}

/// A started request's place among the executing, given back on drop.
#[must_use = "dropping a queue slot ends the request's execution"]
pub struct QueueSlot(Arc<Queue>);

impl QueueSlot {
    /// The slot of a request `queue` just started.
    pub fn started(queue: Arc<Queue>) -> Self {
        Self(queue)
    }

    pub fn queue(&self) -> &Arc<Queue> {
        &self.0
    }
}

impl Drop for QueueSlot {
    fn drop(&mut self) {
        self.0.limiter.lock().finish(Instant::now());
    }
}

/// Every queue in use, by identity.
#[derive(Default)]
pub struct RequestQueues {
    queues: DashMap<String, Arc<Queue>>,
}

impl RequestQueues {
    /// The queue of `connection_id` (of `model` when model-scoped), at `rates`.
    pub fn queue(&self, provider: &str, connection_id: &str, model: Option<&str>, rates: Rates) -> Arc<Queue> {
        let id = match model {
            Some(m) => format!("{provider}:{connection_id}:{m}"),
            None => format!("{provider}:{connection_id}"),
        };
        let queue = match self.queues.get(&id) {
            Some(q) => q.clone(),
            None => self
                .queues
                .entry(id.clone())
                .or_insert_with(|| {
                    Arc::new(Queue {
                        id,
                        connection_id: connection_id.into(),
                        model: model.map(Into::into),
                        limiter: Mutex::new(Limiter::new(rates, Instant::now())),
                    })
                })
                .clone(),
        };
        queue.limiter.lock().set_rates(rates);
        queue
    }

    /// Every queue with its counters, for the health report.
    pub fn snapshot(&self) -> Vec<(Arc<Queue>, QueueCounts)> {
        let now = Instant::now();
        self.queues.iter().map(|e| (e.value().clone(), e.value().limiter.lock().counts(now))).collect()
    }
}

#[cfg(test)]
mod tests;
