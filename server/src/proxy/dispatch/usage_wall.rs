//! An attempt on a Claude subscription that opted into the usage-wall
//! handling (SPEC §R2.1): at the wall it claims the free limit reset
//! (`autoLimitReset`) and retries at full speed, else accepts the
//! low-priority lane (`lowPriorityMode`) and retries on the same account
//! with `anthropic-usage-limit: slow` — the wall's 429 never reaches the
//! cooldown path. In the lane every request carries that header, and a
//! busy slow slot is waited for within the request's own budget.
//! The state lives in [`crate::resilience::usage_wall`].

use std::{borrow::Cow, time::Duration};

use axum::http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use crate::{
    resilience::usage_wall::{self, LaneStep, RESET_BACKOFF_MS, RESET_UNAVAILABLE_MS},
    routing::registry::LiveConnection,
    state::AppState,
    upstream::{executor::UpstreamResponse, limit_reset},
};

/// A wait in the lane leaves this much of the request's budget.
const BUDGET_MARGIN: Duration = Duration::from_secs(5);
/// Sends of one attempt at most (a reset, a lane entry, the waits).
const MAX_SENDS: u32 = 32;

/// What follows an answer.
pub(super) enum Next {
    /// The answer takes its normal path.
    Answer(UpstreamResponse),
    /// Send the request again, on the same connection.
    Again,
}

/// One attempt's passage through the wall.
pub(super) struct Wall {
    /// The request goes in the low-priority lane.
    slow: bool,
    /// Time spent waiting for the slow slot so far.
    waited: Duration,
    /// A reset was claimed during this attempt already.
    claimed: bool,
    sends: u32,
}

impl Wall {
    /// The attempt's wall handling, when `conn` opted into any.
    pub(super) fn of(state: &AppState, conn: &LiveConnection) -> Option<Self> {
        let opted = conn.usage_wall;
        opted.any().then(|| Self {
            slow: opted.low_priority && state.engine.usage_wall.in_lane(&conn.id, state.clock.now_ms()),
            waited: Duration::ZERO,
            claimed: false,
            sends: 0,
        })
    }

    /// How long the attempt waited for the slow slot (the gateway's own wait).
    pub(super) fn waited(&self) -> Duration {
        self.waited
    }

    /// `extra` with the lane's header when the request goes in the lane.
    pub(super) fn headers<'h>(&self, extra: &'h HeaderMap) -> Cow<'h, HeaderMap> {
        if !self.slow {
            return Cow::Borrowed(extra);
        }
        let mut h = extra.clone();
        h.insert(usage_wall::SLOW_HEADER, HeaderValue::from_static("slow"));
        Cow::Owned(h)
    }

    /// After `resp` on `conn`: its normal path, or one more send (after a
    /// claimed reset, on entering the lane, or after a wait for the slow
    /// slot that ends before `deadline`, the request's upstream start).
    pub(super) async fn after(
        &mut self,
        state: &AppState,
        conn: &LiveConnection,
        resp: UpstreamResponse,
        deadline: Instant,
    ) -> Next {
        self.sends += 1;
        let (status, now) = (resp.status().as_u16(), state.clock.now_ms());
        let walls = &state.engine.usage_wall;
        if self.sends >= MAX_SENDS {
            return Next::Answer(resp);
        }
        if self.slow {
            let LaneStep::Wait { wait_ms, max_wait_ms } = walls.on_lane_answer(&conn.id, status, resp.headers(), now)
            else {
                return Next::Answer(resp);
            };
            let wait = Duration::from_millis(wait_ms);
            let budget = deadline.saturating_duration_since(Instant::now()).saturating_sub(BUDGET_MARGIN);
            if self.waited + wait > Duration::from_millis(max_wait_ms) || wait > budget {
                tracing::info!(connection_id = %conn.id, "usage wall: the slow slot stayed busy too long; the low-priority lane ends for 10 minutes");
                walls.give_up(&conn.id, now);
                return Next::Answer(resp);
            }
            drop(resp);
            tokio::time::sleep(wait).await;
            self.waited += wait;
            return Next::Again;
        }
        if !usage_wall::is_wall(status, resp.headers()) {
            return Next::Answer(resp);
        }
        if conn.usage_wall.limit_reset && !self.claimed && walls.may_claim_reset(&conn.id, now) {
            self.claimed = true;
            if self.claim_reset(state, conn, now).await {
                return Next::Again;
            }
        }
        if conn.usage_wall.low_priority && walls.enter_lane(&conn.id, resp.headers(), now) {
            tracing::info!(connection_id = %conn.id, "usage wall: the low-priority lane is accepted until the window renews");
            self.slow = true;
            return Next::Again;
        }
        Next::Answer(resp)
    }

    /// Claims the account's limit reset; whether the window was reset.
    async fn claim_reset(&self, state: &AppState, conn: &LiveConnection, now: i64) -> bool {
        let walls = &state.engine.usage_wall;
        match limit_reset::claim(state.upstream.as_ref(), &conn.endpoint, conn.account_id.as_deref()).await {
            limit_reset::Claim::Reset => {
                tracing::info!(connection_id = %conn.id, "usage wall: the limit reset was claimed");
                walls.no_reset_before(&conn.id, now + RESET_UNAVAILABLE_MS);
                true
            }
            limit_reset::Claim::NotLimited => {
                walls.no_reset_before(&conn.id, now + RESET_BACKOFF_MS);
                true
            }
            limit_reset::Claim::Unavailable { next_at } => {
                walls.no_reset_before(&conn.id, next_at.filter(|&t| t > now).unwrap_or(now + RESET_UNAVAILABLE_MS));
                false
            }
            limit_reset::Claim::Failed(why) => {
                tracing::warn!(connection_id = %conn.id, why = %conn.redact(&why), "usage wall: the limit reset could not be claimed; next try in 15 minutes");
                walls.no_reset_before(&conn.id, now + RESET_BACKOFF_MS);
                false
            }
        }
    }
}
