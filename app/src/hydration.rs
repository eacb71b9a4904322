//! The hydration scripts of every page, in place of Leptos'
//! `HydrationScripts`, so that a first visit compiles its wasm sooner.
//!
//! Leptos' script is a module script, which runs once the page is parsed;
//! it then fetches and compiles the main module, instantiates it, and the
//! route group's chunks are fetched and compiled one after the other when
//! hydration reaches the lazy route. On a cold visit that left about 60 ms
//! of compiling on the path to an interactive page (docs/bundle.md).
//! Here a classic script at the end of `<head>`, after every wasm preload
//! of the page (`<MetaTags/>` puts the chunks' preloads there), starts
//! compiling them all at once while the body is still parsing, and the
//! chunks' loader (`cargo xtask build` adapts it) takes its modules from
//! there. Hydration itself still waits for the parsed document.

use leptos::prelude::*;

/// The chunks' loader module and their manifest (which chunks each route
/// group needs), as `cargo xtask build` writes them into `pkg/`.
const SPLIT_LOADER: &str = "__wasm_split.______________________.js";
#[cfg(feature = "ssr")]
const SPLIT_MANIFEST: &str = "__wasm_split_manifest.json";

/// The preloads of the JS glue and the main module, and the split manifest
/// in context, from which the server's renderer preloads the chunks of
/// the page's route group (goes early in `<head>`).
#[component]
pub fn WasmPreloads(options: LeptosOptions, root: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(manifest) = split_manifest(&options, &root) {
        provide_context(manifest);
    }
    let split = cfg!(feature = "ssr") && use_context::<leptos::WasmSplitManifest>().is_some();
    let pkg = format!("{root}/{}", options.site_pkg_dir);
    let name = &options.output_name;
    view! {
        <link rel="modulepreload" href=format!("{pkg}/{name}.js") crossorigin="anonymous" />
        // The glue imports the chunks' loader: it is needed as early (the
        // server's renderer preloads it again after the chunks).
        {split.then(|| view! { <link rel="modulepreload" href=format!("{pkg}/{SPLIT_LOADER}") crossorigin="anonymous" /> })}
        <link
            rel="preload"
            href=format!("{pkg}/{name}_bg.wasm")
            r#as="fetch"
            r#type="application/wasm"
            crossorigin="anonymous"
        />
    }
}

/// The script that compiles the page's wasm and hydrates it (goes last in
/// `<head>`, after `<MetaTags/>`).
#[component]
pub fn HydrationScript(options: LeptosOptions, root: String) -> impl IntoView {
    let nonce = leptos::nonce::use_nonce();
    let pkg = format!("{root}/{}", options.site_pkg_dir);
    let name = &options.output_name;
    let script = format!(
        "{}({:?}, {:?});",
        include_str!("hydration.js").trim_end(),
        format!("{pkg}/{name}.js"),
        format!("{pkg}/{name}_bg.wasm")
    );
    view! { <script nonce=nonce>{script}</script> }
}

/// The split manifest, read once from the site's `pkg/`; `None` when the
/// bundle was not split.
#[cfg(feature = "ssr")]
fn split_manifest(options: &LeptosOptions, root: &str) -> Option<leptos::WasmSplitManifest> {
    use std::sync::OnceLock;
    static MANIFEST: OnceLock<Option<leptos::WasmSplitManifest>> = OnceLock::new();
    MANIFEST
        .get_or_init(|| {
            let pkg = std::path::Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
            let text = std::fs::read_to_string(pkg.join(SPLIT_MANIFEST)).ok()?;
            let groups = serde_json::from_str(&text)
                .map_err(|e| leptos::logging::error!("{SPLIT_MANIFEST} is not a split manifest: {e}"))
                .ok()?;
            let value = (format!("{root}/{}", options.site_pkg_dir), groups, SPLIT_LOADER.to_owned());
            Some(leptos::WasmSplitManifest(ArcStoredValue::new(value)))
        })
        .clone()
}
