//! Giving the memory of a burst back. glibc's malloc keeps what a burst
//! of thousands of streams freed inside its per-thread arenas, so the
//! process stays at its peak RSS long after the burst. Every
//! [`CHECK_EVERY`] the gateway asks how much the arenas hold free and,
//! when that is more than [`TRIM_ABOVE`], has malloc return the free pages
//! to the system (`malloc_trim`). The check is cheap; the trim walks the
//! heap's free chunks, at most once per check.

use std::time::Duration;

/// How often the free memory is looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// Free bytes inside malloc's arenas worth giving back. At 4 MB a burst
/// could leave just under that much free and never trimmed: the heap
/// suite measured the settled RSS 3 MB apart between runs of one build.
pub const TRIM_ABOVE: usize = 1 << 20;

/// Runs for the life of the process.
pub async fn return_freed_memory() {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        trim_if_worth_it();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_if_worth_it() {
    // SAFETY: mallinfo2 and malloc_trim only read and adjust malloc's own
    // bookkeeping; both are safe to call from any thread at any time.
    let free = unsafe { libc::mallinfo2() }.fordblks;
    if free > TRIM_ABOVE {
        unsafe { libc::malloc_trim(0) };
        tracing::debug!(free_mb = free >> 20, "returned freed memory to the system");
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_if_worth_it() {}
