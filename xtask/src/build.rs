//! `cargo xtask build`: the wasm frontend (wasm-bindgen as a library), the
//! CSS (encre-css over the class names in `app/src`), `public/`, and the
//! server binary. A release build drops the wasm's name section (function
//! names for stack traces: half the bundle) and weighs the bundle against
//! its gzip budget: over [`WASM_BUDGET_GZIP`] the build fails, over
//! [`WASM_AIM_GZIP`] it warns. What keeps it small is in `docs/bundle.md`.

use anyhow::Context;
use std::{fs, path::Path};

use crate::util::{self, cargo, run, site_root, step};

const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The most the release wasm may weigh, gzipped: above it the build fails.
const WASM_BUDGET_GZIP: u64 = 650 * 1000;
/// What the release wasm should weigh, gzipped: above it the build warns.
const WASM_AIM_GZIP: u64 = 600 * 1000;

pub fn site_and_server(release: bool) -> anyhow::Result<()> {
    site(release)?;
    step("build the server");
    let mut cmd = cargo();
    cmd.args(["build", "-p", "server", "-p", "fake-upstream"]);
    if release {
        cmd.arg("--release");
    }
    run(&mut cmd)
}

/// Builds `target/site`: `pkg/app.js`, `pkg/app_bg.wasm`, `pkg/app.css`
/// and the files of `public/`.
pub fn site(release: bool) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    step("build the wasm frontend");
    let profile = if release { "wasm-release" } else { "dev" };
    run(cargo().args(["build", "-p", "frontend", "--lib", "--target", WASM_TARGET, "--profile", profile]))?;
    let profile_dir = if release { "wasm-release" } else { "debug" };
    let wasm = util::target_dir().join(WASM_TARGET).join(profile_dir).join("frontend.wasm");
    let pkg = site_root().join("pkg");
    fs::create_dir_all(&pkg)?;
    step("wasm-bindgen");
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&wasm)
        .web(true)?
        .typescript(false)
        .remove_name_section(release)
        .remove_producers_section(release)
        .out_name("app")
        .generate(&pkg)
        .with_context(|| format!("wasm-bindgen on {}", wasm.display()))?;
    if release {
        weigh(&pkg.join("app_bg.wasm"))?;
    }
    step("css");
    fs::write(pkg.join("app.css"), css()?)?;
    copy_dir(&util::root().join("public"), &site_root())?;
    eprintln!("site ready in {}", site_root().display());
    Ok(())
}

/// Prints the wasm's weight, raw and gzipped; fails above
/// [`WASM_BUDGET_GZIP`] and warns above [`WASM_AIM_GZIP`].
fn weigh(wasm: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let bytes = fs::read(wasm)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&bytes)?;
    let gzipped = u64::try_from(gz.finish()?.len())?;
    let (kb, budget, aim) = (gzipped / 1000, WASM_BUDGET_GZIP / 1000, WASM_AIM_GZIP / 1000);
    eprintln!("wasm: {} KB, {kb} KB gzipped (budget {budget} KB, aim {aim} KB)", bytes.len() / 1000);
    if gzipped > WASM_BUDGET_GZIP {
        anyhow::bail!("the wasm bundle is {kb} KB gzipped, over its {budget} KB budget (see docs/bundle.md)");
    }
    if gzipped > WASM_AIM_GZIP {
        eprintln!("warning: the wasm bundle is {kb} KB gzipped, over the {aim} KB aim");
    }
    Ok(())
}

fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = util::output(std::process::Command::new("rustup").args(["target", "list", "--installed"]))?;
    if !installed.lines().any(|l| l.trim() == WASM_TARGET) {
        step("rustup target add wasm32-unknown-unknown");
        run(std::process::Command::new("rustup").args(["target", "add", WASM_TARGET]))?;
    }
    Ok(())
}

/// Utility classes used in `app/src/**/*.rs`, then `style/input.css`.
fn css() -> anyhow::Result<String> {
    let mut sources = Vec::new();
    collect_rs(&util::root().join("app/src"), &mut sources)?;
    let config = encre_css::Config::default();
    let mut css = encre_css::generate(sources.iter().map(String::as_str), &config);
    css.push('\n');
    css.push_str(&fs::read_to_string(util::root().join("style/input.css")).unwrap_or_default());
    Ok(css)
}

fn collect_rs(dir: &Path, out: &mut Vec<String>) -> anyhow::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_rs(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(fs::read_to_string(&path)?);
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let path = entry?.path();
        let dest = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            fs::copy(&path, &dest)?;
        }
    }
    Ok(())
}
