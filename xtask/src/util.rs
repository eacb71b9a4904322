//! Small process helpers shared by the xtask commands.

use anyhow::{Context, bail};
use std::{
    path::PathBuf,
    process::{Command, Stdio},
};

/// The workspace root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(PathBuf::from).unwrap_or_default()
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

/// Where the dashboard assets go: `target/site` (`pkg/` inside).
pub fn site_root() -> PathBuf {
    target_dir().join("site")
}

/// `cargo` in the workspace root, without variables that would change
/// what Leptos builds (`LEPTOS_OUTPUT_NAME` renames the wasm file).
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root()).env_remove("LEPTOS_OUTPUT_NAME");
    cmd
}

/// Builds the release gateway, fake upstream and load generators, for
/// the drills and the bench. Always the same three packages: cargo unifies
/// features over what one command builds, so a different set would build
/// the gateway (and its dependencies) a second time.
pub fn build_release_stack() -> anyhow::Result<()> {
    step("build the gateway, the fake upstream and the load generators (release)");
    run(cargo().args(["build", "--release", "-p", "server", "-p", "fake-upstream", "-p", "loadgen"]))
}

/// Runs a command to completion, failing on a non-zero exit.
pub fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Runs a command and returns its stdout.
pub fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.stderr(Stdio::inherit()).output().with_context(|| format!("starting {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed with {}", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A progress line between steps.
pub fn step(what: &str) {
    eprintln!("\n==> {what}");
}

/// The value after `name` on a command line (`--seconds 180`), parsed.
pub fn flag<T: std::str::FromStr>(args: &[String], name: &str) -> anyhow::Result<Option<T>> {
    let Some(i) = args.iter().position(|a| a == name) else { return Ok(None) };
    let value = args.get(i + 1).with_context(|| format!("{name} needs a value"))?;
    value.parse().map(Some).map_err(|_| anyhow::anyhow!("{name}: {value:?} is not a valid value"))
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    output(Command::new("id").arg("-u")).is_ok_and(|u| u.trim() == "0")
}

/// Installs Debian's `package` when `path` (a file it provides) is
/// missing: with apt-get when root, else fails with the one command to run.
pub fn ensure_debian_package(path: &str, package: &str) -> anyhow::Result<()> {
    if std::path::Path::new(path).exists() {
        return Ok(());
    }
    if !is_root() {
        bail!("{path} is missing: run `sudo apt-get install -y {package}`, then try again");
    }
    step(&format!("apt-get install -y {package}"));
    run(Command::new("apt-get").arg("update"))?;
    run(Command::new("apt-get").args(["install", "-y", package]).env("DEBIAN_FRONTEND", "noninteractive"))
}

/// Adds the rustup components `names` that are not installed yet.
pub fn ensure_rustup_components(names: &[&str]) -> anyhow::Result<()> {
    let installed = output(Command::new("rustup").args(["component", "list", "--installed"]))?;
    for name in names.iter().filter(|n| !installed.lines().any(|l| l.starts_with(*n))) {
        step(&format!("rustup component add {name}"));
        run(Command::new("rustup").args(["component", "add", name]))?;
    }
    Ok(())
}
