//! `cargo xtask e2e-clients` (opt-in: about 1 GB of npm packages): real
//! coding agents and the official SDKs through the gateway — Claude Code,
//! Codex CLI, and the `openai` and `anthropic` Python SDKs, each against a
//! fake upstream of another protocol, each with a tool round trip; and
//! Claude Code and Codex through a first connection that stalls, and the
//! turns of one Claude Code or Codex conversation on one connection. Pinned
//! versions come from `end2end/clients/{package.json,requirements.txt}`
//! (npm and PyPI only); the scenarios are in `end2end/clients/run.py`.

use std::process::Command;

use crate::{
    build, e2e,
    util::{self, step},
};

const MANAGEMENT_KEY: &str = "e2e-clients-management-key-0123456789";

pub fn run() -> anyhow::Result<()> {
    build::site_and_server(false)?;
    util::run(util::cargo().args(["build", "-p", "fake-upstream"]))?;
    let dir = util::root().join("end2end/clients");
    step("npm install (pinned Claude Code and Codex CLI)");
    let npm = if dir.join("package-lock.json").exists() { "ci" } else { "install" };
    util::run(Command::new("npm").args([npm, "--no-audit", "--no-fund"]).current_dir(&dir))?;
    let work = util::target_dir().join("e2e-clients");
    let venv = work.join("venv");
    if !venv.join("bin/python").exists() {
        step("python venv");
        util::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    step("pip install (pinned openai and anthropic SDKs)");
    util::run(Command::new(venv.join("bin/pip")).args(["install", "-q", "-r"]).arg(dir.join("requirements.txt")))?;

    let data_dir = work.join(format!("data-{}", std::process::id()));
    let scratch = work.join("scratch");
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&scratch)?;
    // Short stream budgets: the stall scenarios fail over in seconds.
    let env = [
        ("OMNIROUTE_MANAGEMENT_KEY", MANAGEMENT_KEY),
        ("STREAM_READINESS_TIMEOUT_MS", "3000"),
        ("STREAM_IDLE_TIMEOUT_MS", "3000"),
        ("FETCH_TIMEOUT_MS", "5000"),
    ];
    let (gateway, fake, url, fake_url) = e2e::start_stack("debug", &data_dir, "info,server=warn", &env)?;
    step(&format!("clients against {url} (fake upstream {fake_url})"));
    let result = util::run(
        Command::new(venv.join("bin/python"))
            .arg(dir.join("run.py"))
            .env("OMNIROUTE_URL", &url)
            .env("FAKE_URL", &fake_url)
            .env("OMNIROUTE_MANAGEMENT_KEY", MANAGEMENT_KEY)
            .env("CLIENTS_BIN", dir.join("node_modules/.bin"))
            .env("WORK_DIR", &scratch),
    );
    drop((gateway, fake));
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}
