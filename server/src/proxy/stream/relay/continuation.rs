//! Mid-stream recovery (SPEC §R6, `STREAM_RECOVERY_MIDSTREAM_ENABLED`):
//! a committed stream whose attempt fails — broken, cut, garbled, stalled,
//! too slow, an error event — is not ended when a continuation can join it. The relay
//! hands the text the client already has to its [`Resume`], which sends
//! the request again (to a target that continues an assistant prefix, not
//! the connection that failed) and resolves to the continuation's stream
//! in the client's protocol. The translator then reads that stream
//! instead, drops its start and writes the rest into the same client
//! stream, so the client sees one answer and no text twice. The failed
//! attempt is finished (the engine hears of the failure); the
//! continuation's own attempt and watchdogs run inside its stream. While
//! it is dispatched the client gets keepalives; when none can be had the
//! stream ends with its error event, naming both failures.

use futures_util::future::BoxFuture;
use std::task::{Context, Poll};
use tokio::time::Instant;

use super::{Finish, Next, Relay, StreamEnd, Upstream};
use crate::proxy::stream::{progress::Watch, whole::WholeEvents};

/// The continuation's stream, or why there is none.
pub type Continuation = BoxFuture<'static, Result<Upstream, String>>;

/// Sends the request again after the given prefix (the text the client
/// has); at most once per stream.
pub type Resume = Box<dyn FnOnce(String) -> Continuation + Send>;

/// Who can continue a broken stream: its request, sent again
/// (`proxy::resume` implements it; the dispatch loop only asks).
pub trait Resumes: Send + Sync {
    /// The resume of a stream whose attempt on connection `failed` broke.
    fn after(&self, failed: &str) -> Resume;
}

impl<F: Finish> Relay<F> {
    /// The continuation for a stream that ended with `end`, when one may
    /// join it: a failure of the upstream (not the client leaving or the
    /// gateway shutting down), a translator whose transcript is plain text,
    /// and the one resume not yet used.
    pub(super) fn continuation(&mut self, end: &StreamEnd) -> Option<Continuation> {
        let failed = matches!(
            end,
            StreamEnd::Broken(_)
                | StreamEnd::UpstreamError(_)
                | StreamEnd::Truncated
                | StreamEnd::Malformed(_)
                | StreamEnd::Stalled(_)
                | StreamEnd::TooSlow
        );
        if !failed || self.resume.is_none() {
            return None;
        }
        let prefix = self.translator.as_ref()?.continuable()?.to_owned();
        let resume = self.resume.take()?;
        Some(resume(prefix))
    }

    /// While a continuation is dispatched: keepalives, the end of the
    /// shutdown grace, then its stream (`None`: relay it) or the error
    /// event that ends the client's stream.
    pub(super) fn poll_resuming(&mut self, cx: &mut Context<'_>) -> Option<Poll<Next>> {
        let (continuation, _) = self.resuming.as_mut()?;
        let message = match continuation.as_mut().poll(cx) {
            Poll::Ready(Ok(upstream)) => {
                self.resuming = None;
                self.join(upstream);
                return None;
            }
            Poll::Ready(Err(why)) => why,
            Poll::Pending => {
                if self.shutdown.as_mut().is_some_and(|s| s.as_mut().poll(cx).is_ready()) {
                    StreamEnd::Shutdown.message()
                } else if self.heartbeat.poll_expired(cx) {
                    self.heartbeat.touch(Instant::now());
                    return Some(Poll::Ready(Next::Keepalive));
                } else {
                    return Some(Poll::Pending);
                }
            }
        };
        let failed = self.resuming.take().map(|(_, failed)| failed).unwrap_or_default();
        let message = format!("{failed}; the stream could not be continued: {message}");
        Some(Poll::Ready(Next::End(Some(self.error_frame(&message)))))
    }

    /// Relays `upstream`, a continuation in the client's protocol, from now on.
    fn join(&mut self, upstream: Upstream) {
        self.upstream = upstream;
        self.upstream_ended = false;
        self.upstream_error = None;
        self.watch = Watch::new(self.client);
        self.whole = WholeEvents::default();
        self.continued = true;
        self.throughput = None;
        if let Some(t) = self.translator.as_mut() {
            t.continue_from(self.client);
        }
    }
}
