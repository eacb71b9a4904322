//! `cargo xtask login-flood`: a sign-in flood must not slow the proxy
//! (issue [J] item 4; part of `cargo xtask test`). This side builds and
//! starts the release gateway and fake upstream; the measuring and the
//! verdict are the release-built `login-flood` of `end2end/loadgen`
//! (its doc says how it judges).

use crate::{e2e::start_stack, util};

const MGMT_KEY: &str = "flood-key";

pub fn run() -> anyhow::Result<()> {
    util::build_release_stack()?;
    let data_dir = util::target_dir().join(format!("flood-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let env = [("OMNIROUTE_MANAGEMENT_KEY", MGMT_KEY), ("RATE_LIMIT_AUTO_ENABLE", "false")];
    let result = (|| {
        let (_gateway, _fake, gw, fake_url) = start_stack("release", &data_dir, "warn,omniroute=info", &env)?;
        let flood = util::target_dir().join("release").join("login-flood");
        util::run(std::process::Command::new(flood).args([&gw, &fake_url, MGMT_KEY]))
    })();
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}
