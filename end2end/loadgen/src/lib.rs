//! What the release-built drills share: open-loop load at a fixed rate
//! (`paced`). The binaries are `loadgen` (the phases of `cargo xtask
//! bench`) and `login-flood` (`cargo xtask login-flood`).

pub mod paced;
