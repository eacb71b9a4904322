//! `cargo xtask build`: the wasm frontend, the CSS (encre-css over the
//! class names in `app/src`), `public/`, and the server binary. The wasm
//! is split first (each lazy route's code goes into its own chunk, loaded
//! when the route is), then its main module goes through wasm-bindgen (as
//! a library). A release build drops the wasm's name section (function
//! names for stack traces: half the bundle) and weighs what a first visit
//! loads against its gzip budget: over [`WASM_BUDGET_GZIP`] the build
//! fails, over [`WASM_AIM_GZIP`] it warns. What keeps it small is in
//! `docs/bundle.md`.

use anyhow::Context;
use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
};

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

/// Builds `target/site`: `pkg/app.js`, `pkg/app_bg.wasm` (the main
/// module), the lazy routes' chunks with their loader and manifest,
/// `pkg/app.css` and the files of `public/`.
pub fn site(release: bool) -> anyhow::Result<()> {
    ensure_wasm_target()?;
    step("build the wasm frontend");
    let profile = if release { "wasm-release" } else { "dev" };
    run(cargo().args(["build", "-p", "frontend", "--lib", "--target", WASM_TARGET, "--profile", profile]))?;
    let profile_dir = if release { "wasm-release" } else { "debug" };
    let wasm = util::target_dir().join(WASM_TARGET).join(profile_dir).join("frontend.wasm");
    let pkg = site_root().join("pkg");
    // A new build's chunks replace the last one's: stale ones would change
    // the bundle's version hash and linger in the served directory.
    if pkg.exists() {
        fs::remove_dir_all(&pkg)?;
    }
    fs::create_dir_all(&pkg)?;
    step("split the wasm by route");
    let main = split(&wasm, &pkg, release)?;
    step("wasm-bindgen");
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&main)
        .web(true)?
        .typescript(false)
        // The chunks import the main module's functions by these exports.
        .keep_lld_exports(true)
        .remove_name_section(release)
        .remove_producers_section(release)
        .out_name("app")
        .generate(&pkg)
        .with_context(|| format!("wasm-bindgen on {}", main.display()))?;
    if release {
        weigh(&pkg)?;
    }
    step("css");
    fs::write(pkg.join("app.css"), css()?)?;
    if release {
        step("precompress the bundle");
        precompress(&pkg)?;
    }
    copy_dir(&util::root().join("public"), &site_root())?;
    eprintln!("site ready in {}", site_root().display());
    Ok(())
}

/// The chunks' loader module, under the name leptos' `HydrationScripts`
/// preloads when files are not hashed (the URL's version does that here).
const SPLIT_LOADER: &str = "./__wasm_split.______________________.js";
/// Which chunks each lazy route needs; `HydrationScripts` reads it to
/// preload a page's chunks with the page.
const SPLIT_MANIFEST: &str = "__wasm_split_manifest.json";

/// Splits `wasm` at its `#[lazy]` functions (the lazy routes): writes the
/// chunks, their loader and the manifest to `pkg` and returns the main
/// module, which wasm-bindgen then processes.
fn split(wasm: &Path, pkg: &Path, release: bool) -> anyhow::Result<PathBuf> {
    let mut input = fs::read(wasm).with_context(|| format!("reading {}", wasm.display()))?;
    if release {
        // Function names (for stack traces) are half of each chunk.
        input = without_custom_sections(&input, &["name", "producers"])?;
    }
    let main = wasm.with_file_name("frontend_main.wasm");
    let mut options = wasm_split_cli_support::Options::new(&input);
    options.output_dir = pkg;
    options.main_out_path = &main;
    options.main_module = "./app.js";
    options.link_name = SPLIT_LOADER;
    let split = wasm_split_cli_support::transform(options)
        .map_err(|e| anyhow::anyhow!("splitting {}: {e:?}", wasm.display()))?;
    // The page preloads its group's files in the manifest's order, and the
    // browser fetches six at a time: the largest go first, so the one that
    // takes longest to arrive and compile is not left to the second round.
    let mut groups = split.prefetch_map;
    for files in groups.values_mut() {
        let size = |file: &String| fs::metadata(pkg.join(format!("{file}.wasm"))).map(|m| m.len()).unwrap_or(0);
        files.sort_by_cached_key(|file| std::cmp::Reverse(size(file)));
    }
    fs::write(pkg.join(SPLIT_MANIFEST), serde_json::to_string_pretty(&groups)?)?;
    let loader = pkg.join(SPLIT_LOADER);
    let adapted = loader_taking_compiled_chunks(&fs::read_to_string(&loader)?, split.split_modules.len())?;
    fs::write(&loader, adapted)?;
    Ok(main)
}

/// What the chunks' loader gains: a chunk the page's head script already
/// began compiling (`app/src/hydration.js`, by URL in `__compiledWasm`) is
/// taken from there; any other is fetched and compiled as before. A
/// failed early compile falls back to the network too.
const LOADER_PRELUDE: &str = r#"
function chunkSource(url) {
    const early = globalThis.__compiledWasm?.get(url.href);
    globalThis.__compiledWasm?.delete(url.href);
    return early ? early.catch(() => fetch(url)) : fetch(url);
}
async function instantiateChunk(source, imports) {
    const module = await source;
    if (module instanceof WebAssembly.Module) {
        return { module, instance: await WebAssembly.instantiate(module, imports) };
    }
    return WebAssembly.instantiateStreaming(module, imports);
}
"#;

/// The loader `wasm_split_cli_support` wrote, made to take its chunks from
/// the head script's early compiles ([`LOADER_PRELUDE`]). Each of the
/// `chunks` modules is fetched and instantiated at one place in it; if
/// the generated code no longer reads that way, the build stops rather
/// than ship a loader that compiles everything twice.
fn loader_taking_compiled_chunks(loader: &str, chunks: usize) -> anyhow::Result<String> {
    const FETCH: &str = "fetch(new URL(";
    const INSTANTIATE: &str = "WebAssembly.instantiateStreaming(src, imports)";
    let (fetches, instantiations) = (loader.matches(FETCH).count(), loader.matches(INSTANTIATE).count());
    anyhow::ensure!(
        fetches == chunks && instantiations == chunks,
        "the chunks' loader has {fetches} `{FETCH}` and {instantiations} `{INSTANTIATE}` for {chunks} chunks; \
         xtask/src/build.rs expects one of each per chunk"
    );
    let imports_end = loader.find('\n').context("the chunks' loader is one line")? + 1;
    let body = loader[imports_end..]
        .replace(FETCH, "chunkSource(new URL(")
        .replace(INSTANTIATE, "instantiateChunk(src, imports)");
    Ok(format!("{}{LOADER_PRELUDE}{body}", &loader[..imports_end]))
}

/// `wasm` without the custom sections named in `drop`. A module is its
/// 8-byte header and then sections, each an id byte, its size (LEB128)
/// and its body; a custom section (id 0) starts with its name.
fn without_custom_sections(wasm: &[u8], drop: &[&str]) -> anyhow::Result<Vec<u8>> {
    let header = wasm.get(..8).context("not a wasm module")?;
    let mut out = header.to_vec();
    let mut at = 8;
    while at < wasm.len() {
        let start = at;
        let id = wasm[at];
        let (size, body_at) = leb128(wasm, at + 1)?;
        let body = wasm.get(body_at..body_at + size).context("a wasm section runs past the end")?;
        at = body_at + size;
        if id == 0 {
            let (name_len, name_at) = leb128(body, 0)?;
            let name = body.get(name_at..name_at + name_len).context("a custom section's name runs past it")?;
            if drop.iter().any(|d| d.as_bytes() == name) {
                continue;
            }
        }
        out.extend_from_slice(&wasm[start..at]);
    }
    Ok(out)
}

/// The unsigned LEB128 number at `at` and the offset after it.
fn leb128(bytes: &[u8], mut at: usize) -> anyhow::Result<(usize, usize)> {
    let mut value = 0usize;
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(at).context("a wasm number runs past the end")?;
        at += 1;
        value |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, at));
        }
    }
    anyhow::bail!("a wasm number is longer than 5 bytes")
}

/// Weighs what a first visit loads, gzipped: the main module plus the
/// chunks of the heaviest route. Fails above [`WASM_BUDGET_GZIP`], warns
/// above [`WASM_AIM_GZIP`].
fn weigh(pkg: &Path) -> anyhow::Result<()> {
    let main = gzipped_size(&pkg.join("app_bg.wasm"))?;
    let manifest: HashMap<String, Vec<String>> = serde_json::from_slice(&fs::read(pkg.join(SPLIT_MANIFEST))?)?;
    let mut heaviest = (String::new(), 0);
    for (route, chunks) in &manifest {
        let mut size = 0;
        for chunk in chunks {
            size += gzipped_size(&pkg.join(format!("{chunk}.wasm")))?;
        }
        if size > heaviest.1 {
            heaviest = (route.clone(), size);
        }
    }
    let first_visit = main + heaviest.1;
    let (kb, budget, aim) = (first_visit / 1000, WASM_BUDGET_GZIP / 1000, WASM_AIM_GZIP / 1000);
    eprintln!(
        "wasm, gzipped: main module {} KB + heaviest route's chunks {} KB ({}) = {kb} KB (budget {budget} KB, aim {aim} KB)",
        main / 1000,
        heaviest.1 / 1000,
        heaviest.0
    );
    if first_visit > WASM_BUDGET_GZIP {
        anyhow::bail!("a first visit loads {kb} KB of wasm gzipped, over its {budget} KB budget (see docs/bundle.md)");
    }
    if first_visit > WASM_AIM_GZIP {
        eprintln!("warning: a first visit loads {kb} KB of wasm gzipped, over the {aim} KB aim");
    }
    Ok(())
}

/// Stores each file of `pkg` gzipped (`.gz`) and brotli-compressed
/// (`.br`) beside it, at the best settings: the server sends those as
/// they are, where compressing the wasm on each cold request cost a first
/// visit a tenth of a second of the server's CPU.
fn precompress(pkg: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    for entry in fs::read_dir(pkg)? {
        let path = entry?.path();
        let bytes = fs::read(&path)?;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&bytes)?;
        fs::write(with_suffix(&path, "gz"), gz.finish()?)?;
        let mut br = Vec::new();
        let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 22, ..Default::default() };
        brotli::BrotliCompress(&mut bytes.as_slice(), &mut br, &params)?;
        fs::write(with_suffix(&path, "br"), br)?;
    }
    Ok(())
}

/// `file` with `.suffix` added to its name (`app.js` → `app.js.gz`).
fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

fn gzipped_size(file: &Path) -> anyhow::Result<u64> {
    use std::io::Write;
    let bytes = fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&bytes)?;
    Ok(u64::try_from(gz.finish()?.len())?)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a failed step is a failed test")]

    /// A custom section: id 0, size, name length, name, payload.
    fn custom(name: &str, payload: &[u8]) -> Vec<u8> {
        let size = u8::try_from(1 + name.len() + payload.len()).unwrap();
        let mut section = vec![0, size, u8::try_from(name.len()).unwrap()];
        section.extend_from_slice(name.as_bytes());
        section.extend_from_slice(payload);
        section
    }

    #[test]
    fn only_the_named_custom_sections_are_dropped() {
        let header = b"\0asm\x01\0\0\0".to_vec();
        let types = vec![1, 4, 1, 0x60, 0, 0]; // one type: () -> ()
        let module = [header.clone(), custom("name", b"fn names"), types.clone(), custom("linking", b"\x02")].concat();
        let stripped = super::without_custom_sections(&module, &["name", "producers"]).unwrap();
        assert_eq!(stripped, [header, types, custom("linking", b"\x02")].concat());
    }

    #[test]
    fn each_file_is_stored_compressed_beside_it() {
        use std::io::Read;
        let dir = std::env::temp_dir().join(format!("xtask-precompress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "the bundle ".repeat(200);
        std::fs::write(dir.join("app.js"), &text).unwrap();
        super::precompress(&dir).unwrap();
        let mut gz = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(dir.join("app.js.gz")).unwrap())
            .read_to_string(&mut gz)
            .unwrap();
        let mut br = Vec::new();
        brotli::BrotliDecompress(&mut std::fs::File::open(dir.join("app.js.br")).unwrap(), &mut br).unwrap();
        assert_eq!((gz.as_str(), br.as_slice()), (text.as_str(), text.as_bytes()));
        assert!(std::fs::metadata(dir.join("app.js.br")).unwrap().len() < 100);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two chunks as `wasm_split_cli_support` 0.2 writes their loaders.
    const LOADER: &str = r#"import { initSync } from "./app.js";
const __chunk_1 = makeLoad(() => {
    const src = fetch(new URL("./chunk_1.wasm", import.meta.url));
    src.catch(() => {});
    return async (imports) => (WebAssembly.instantiateStreaming(src, imports));
}, []);
export const __wasm_split_load_a = wrapAsyncCb(makeLoad(() => {
    const src = fetch(new URL("./split_a.wasm", import.meta.url));
    src.catch(() => {});
    return async (imports) => (WebAssembly.instantiateStreaming(src, imports));
}, [__chunk_1]));
"#;

    #[test]
    fn the_chunks_loader_takes_the_early_compiles() {
        let adapted = super::loader_taking_compiled_chunks(LOADER, 2).unwrap();
        assert!(adapted.starts_with("import { initSync } from \"./app.js\";\n\nfunction chunkSource(url) {"));
        assert_eq!(adapted.matches("chunkSource(new URL(").count(), 2);
        assert_eq!(adapted.matches("instantiateChunk(src, imports)").count(), 2);
        assert!(!adapted.contains("fetch(new URL(") && !adapted.contains("instantiateStreaming(src"));
    }

    #[test]
    fn a_loader_of_another_shape_stops_the_build() {
        assert!(super::loader_taking_compiled_chunks(LOADER, 3).is_err());
        let other = LOADER.replace("instantiateStreaming(src, imports)", "instantiate(src, imports)");
        assert!(super::loader_taking_compiled_chunks(&other, 2).is_err());
    }

    #[test]
    fn a_truncated_module_is_an_error() {
        let module = [b"\0asm\x01\0\0\0".to_vec(), vec![1, 9, 1]].concat();
        assert!(super::without_custom_sections(&module, &["name"]).is_err());
        assert!(super::without_custom_sections(b"\0asm", &["name"]).is_err());
    }
}
