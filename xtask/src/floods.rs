//! The flood drills of `cargo xtask test`: this side builds and starts the
//! release gateway and fake upstream; the measuring and the verdict are
//! release-built binaries of `end2end/loadgen` (their docs say how they
//! judge).
//!
//! * `cargo xtask login-flood`: a sign-in flood must not slow the proxy
//!   (issue [J] item 4);
//! * `cargo xtask conn-flood`: one client's flood of connections, and of
//!   slow request bodies, must leave a second client served (issue [P]).

use crate::{e2e::start_stack, util};

const MGMT_KEY: &str = "flood-key";

pub fn login() -> anyhow::Result<()> {
    drill("login-flood", &[])
}

pub fn connections() -> anyhow::Result<()> {
    // Slow bodies are cut after 5 s instead of a minute: the drill waits for it.
    drill("conn-flood", &[("OMNIROUTE_BODY_DEADLINE_MS", "5000")])
}

/// Runs the load generator `bin` against a fresh release gateway started
/// with `env`.
fn drill(bin: &str, env: &[(&str, &str)]) -> anyhow::Result<()> {
    util::build_release_stack()?;
    let data_dir = util::target_dir().join(format!("{bin}-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let mut env = env.to_vec();
    env.extend([("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY), ("RATE_LIMIT_AUTO_ENABLE", "false")]);
    let result = (|| {
        let (_gateway, _fake, gw, fake_url) = start_stack("release", &data_dir, "warn,omniroute=info", &env)?;
        let measure = util::target_dir().join("release").join(bin);
        util::run(std::process::Command::new(measure).args([&gw, &fake_url, MGMT_KEY]))
    })();
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}
