//! Build orchestration without network downloads (replaces cargo-leptos
//! and Trunk): `cargo xtask build [--release] | serve [--release] [-- ARGS]
//! | test | e2e [--release] [-- PLAYWRIGHT ARGS] | e2e-clients | bench [--against OMNIROUTE_BINARY [--ab-only]] | chaos [--seconds N] [--seed S] | heap | layers | login-flood | conn-flood | soak [--minutes N]`.
//! See ARCHITECTURE.md §3.

mod bench;
mod build;
mod chaos;
mod e2e;
mod e2e_clients;
mod floods;
mod heap;
mod layers;
mod postgres;
mod soak;
mod util;

use anyhow::bail;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let release = args.iter().any(|a| a == "--release");
    let passthrough: Vec<String> = args.iter().skip_while(|a| *a != "--").skip(1).cloned().collect();
    match args.first().map(String::as_str) {
        Some("build") => build::site_and_server(release),
        Some("serve") => {
            build::site_and_server(release)?;
            let mut cmd = util::cargo();
            cmd.args(["run", "-q", "-p", "server", "--bin", "omniroute"]);
            if release {
                cmd.arg("--release");
            }
            cmd.args(["--", "serve", "--site-root", &util::site_root().to_string_lossy()]).args(&passthrough);
            util::run(&mut cmd)
        }
        Some("test") => test(),
        Some("e2e") => e2e::run(release, &passthrough),
        Some("e2e-clients") => e2e_clients::run(),
        Some("bench") => {
            let against = args.iter().skip_while(|a| *a != "--against").nth(1).map(std::path::PathBuf::from);
            match against {
                Some(baseline) if args.iter().any(|a| a == "--ab-only") => bench::ab_only(&baseline),
                against => bench::run(against.as_deref()),
            }
        }
        Some("chaos") => chaos::run(&chaos::Options::parse(&args)?),
        Some("heap") => heap::run(),
        Some("layers") => layers::run(),
        Some("login-flood") => floods::login(),
        Some("conn-flood") => floods::connections(),
        Some("soak") => soak::run(&args),
        _ => bail!(
            "usage: cargo xtask <build [--release] | serve [--release] [-- ARGS] | test | e2e [--release] [-- ARGS] | e2e-clients | bench [--against OMNIROUTE_BINARY [--ab-only]] | chaos [--seconds N] [--seed S] | heap | layers | login-flood | conn-flood | soak [--minutes N]>"
        ),
    }
}

/// Everything CI checks: formatting, lints (the browser's build too), the
/// layers of `docs/architecture.md` against the imports, unit +
/// integration tests, the site build, the browser tests, the release bundle's weight, a chaos
/// run, a heap run and the flood drills (sign-ins, connections).
fn test() -> anyhow::Result<()> {
    util::ensure_rustup_components(&["rustfmt", "clippy"])?;
    util::step("cargo fmt --check");
    util::run(util::cargo().args(["fmt", "--all", "--", "--check"]))?;
    util::step("cargo clippy");
    // With the Postgres suites' feature, so their tests are linted too.
    let clippy =
        ["clippy", "--workspace", "--all-targets", "--features", "server/postgres-tests", "--", "-D", "warnings"];
    util::run(util::cargo().args(clippy))?;
    util::step("layers (docs/architecture.md)");
    layers::run()?;
    // One test build for everything: the Postgres suites (`postgres`,
    // `instances`) run in the same `cargo test` on a throwaway cluster, so
    // the workspace is compiled once with one feature set (a separate
    // `-p server` run resolved features differently and rebuilt the server).
    util::step("cargo test (with the Postgres suites on a throwaway cluster)");
    let cluster = postgres::Cluster::start()?;
    util::run(
        util::cargo()
            .args(["test", "--workspace", "--features", "server/postgres-tests"])
            .env("OMNIROUTE_TEST_POSTGRES_URL", &cluster.url),
    )?;
    drop(cluster);
    util::step("build the site");
    build::site_and_server(false)?;
    // The browser's build compiles other code (server functions' stubs,
    // `cfg(not(feature = "ssr"))` paths), so it is linted too.
    util::step("cargo clippy (browser build)");
    util::run(util::cargo().args([
        "clippy",
        "-p",
        "frontend",
        "--target",
        "wasm32-unknown-unknown",
        "--",
        "-D",
        "warnings",
    ]))?;
    util::step("browser tests");
    e2e::run(false, &[])?;
    util::step("chaos run (3 minutes)");
    chaos::run(&chaos::Options { seconds: 180, seed: rand::random() })?;
    util::step("heap run");
    heap::run()?;
    // The heap run built the release gateway; the release site joins it.
    util::step("the release bundle against its budget");
    build::site(true)?;
    util::step("cold pages (release build, browser)");
    e2e::run(true, &[e2e::COLD_PAGES.to_owned()])?;
    util::step("login flood drill");
    floods::login()?;
    util::step("connection flood drill");
    floods::connections()
}
