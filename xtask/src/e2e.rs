//! `cargo xtask e2e`: Playwright against the real server and the fake
//! upstream (both built by `cargo xtask build`), in Debian's chromium.

use anyhow::Context;
use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use crate::util::{self, step};

pub const ADMIN_PASSWORD: &str = "e2e-admin-password";
const CHROMIUM: &str = "/usr/bin/chromium";

/// A child process killed when dropped, so no run leaves servers behind.
pub struct Service {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Service {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `cmd` and waits (bounded) for a stdout line containing `ready`.
    pub fn start(mut cmd: Command, ready: &str) -> anyhow::Result<(Self, String)> {
        let mut child =
            cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().with_context(|| format!("starting {cmd:?}"))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let service = Self { child, lines };
        loop {
            let line = service
                .lines
                .recv_timeout(Duration::from_secs(60))
                .with_context(|| format!("{cmd:?} did not print {ready:?}"))?;
            if line.contains(ready) {
                return Ok((service, line));
            }
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts fake-upstream and the gateway from `target/<profile>`; returns
/// them with (gateway URL, fake URL). `{fake}` in an `env` value becomes
/// the fake's URL.
pub fn start_stack(
    profile: &str,
    data_dir: &Path,
    log: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<(Service, Service, String, String)> {
    start_stack_with(profile, data_dir, log, env, &[])
}

/// [`start_stack`], the fake upstream started with `fake_args` (e.g.
/// `--tls`).
pub fn start_stack_with(
    profile: &str,
    data_dir: &Path,
    log: &str,
    env: &[(&str, &str)],
    fake_args: &[&str],
) -> anyhow::Result<(Service, Service, String, String)> {
    let bin = util::target_dir().join(profile);
    let mut fake = Command::new(bin.join("fake-upstream"));
    fake.args(fake_args);
    let (fake, fake_url) = Service::start(fake, "://")?;
    let fake_url = fake_url.trim().to_owned();
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.replace("{fake}", &fake_url))).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (gateway, url) = start_gateway(&bin.join("omniroute"), data_dir, log, &env)?;
    Ok((gateway, fake, url, fake_url))
}

/// The gateway binary `omniroute` serving on a free port, its data in
/// `data_dir`; its URL.
pub fn start_gateway(
    omniroute: &Path,
    data_dir: &Path,
    log: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<(Service, String)> {
    let port = free_port()?;
    let mut cmd = Command::new(omniroute);
    cmd.args(["serve", "--port", &port.to_string(), "--site-root", &util::site_root().to_string_lossy()])
        .arg("--data-dir")
        .arg(data_dir)
        .env("INITIAL_PASSWORD", ADMIN_PASSWORD)
        .env("OMNIROUTE_LOG", log)
        .envs(env.iter().copied());
    let (gateway, _) = Service::start(cmd, "OmniRoute listening")?;
    Ok((gateway, format!("http://127.0.0.1:{port}")))
}

/// The browser test that times cold pages: it only means something on
/// the release build, so the debug suite leaves it out.
pub const COLD_PAGES: &str = "tests/cold.spec.ts";

/// Runs the Playwright suite (`args` go to `playwright test`, e.g. a file
/// or `-g <title>`) against a fresh gateway and fake upstream, built as
/// `release` or debug (the site in `target/site` is whichever was built
/// last).
pub fn run(release: bool, args: &[String]) -> anyhow::Result<()> {
    util::ensure_debian_package(CHROMIUM, "chromium")?;
    let dir = util::root().join("end2end");
    if !dir.join("node_modules/@playwright/test").is_dir() {
        step("npm ci (end2end)");
        util::run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir))?;
    }
    let data_dir = util::target_dir().join(format!("e2e-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    // A home holding a Gemini CLI credentials file: Providers offers to import it.
    let home = data_dir.join("home");
    std::fs::create_dir_all(home.join(".gemini"))?;
    let creds = r#"{"access_token":"ya29.e2e-on-disk-6061","refresh_token":"1//e2e-disk","expiry_date":4102444800000}"#;
    std::fs::write(home.join(".gemini/oauth_creds.json"), creds)?;
    let home = home.to_string_lossy().into_owned();
    // Two resilience variables, so the settings pages show where env wins
    // (RATE_LIMIT_AUTO_ENABLE) and where it only sets the default; and
    // Claude subscriptions signed in at the fake's issuer.
    let env = [
        ("HOME", home.as_str()),
        ("RATE_LIMIT_AUTO_ENABLE", "true"),
        ("RATE_LIMIT_MAX_QUEUE_DEPTH", "500"),
        ("OMNIROUTE_OAUTH_TOKEN_URL_CLAUDE", "{fake}/v1/oauth/token"),
        ("OMNIROUTE_OAUTH_TOKEN_URL_CODEX", "{fake}/oauth/token"),
        ("OMNIROUTE_OAUTH_TOKEN_URL_GEMINI_CLI", "{fake}/google/oauth/token"),
    ];
    let profile = if release { "release" } else { "debug" };
    let (gateway, fake, url, fake_url) = start_stack(profile, &data_dir, "info,server=warn", &env)?;
    step(&format!("playwright against the {profile} build at {url} (fake upstream {fake_url})"));
    let result = util::run(
        Command::new("npx")
            .args(["playwright", "test"])
            .args(args)
            .current_dir(&dir)
            .env("OMNIROUTE_URL", &url)
            .env("FAKE_UPSTREAM_URL", &fake_url)
            .env("ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("OMNIROUTE_BUILD", profile),
    );
    drop((gateway, fake));
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}
