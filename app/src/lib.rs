//! The OmniRoute dashboard (Leptos, SSR + hydration) and the types the
//! dashboard and the server share. Pages call the server functions in
//! [`api`], which call the [`backend::Backend`] the server provides.

// Leptos views are nested types; hydration code of a table with forms in
// its rows outgrows the default query depth of 128.
#![recursion_limit = "256"]

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod components;
pub mod format;
mod hydration;
pub mod pages;
pub mod paths;
mod routes;
pub mod session;
pub mod types;

use leptos::prelude::*;
use leptos_meta::{MetaTags, provide_meta_context};
use leptos_router::{
    Lazy, SsrMode,
    components::{Route, Router, Routes},
    path,
};

/// The HTML document around the app (server side only); its bundle is
/// served under `assets` (a versioned path).
pub fn shell(options: LeptosOptions, assets: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    send_content_security_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <link rel="stylesheet" href=format!("{assets}/pkg/app.css") />
                <hydration::WasmPreloads options=options.clone() root=assets.clone() />
                <MetaTags />
                <hydration::HydrationScript options root=assets />
            </head>
            <body class="bg-slate-50 text-slate-900">
                <App />
            </body>
        </html>
    }
}

/// The Content-Security-Policy of every page: scripts only from this
/// origin or carrying this response's nonce (the hydration script), wasm
/// compiled from there, no inline styles, no framing, forms posting only
/// here.
#[cfg(feature = "ssr")]
fn send_content_security_policy() {
    let Some(nonce) = leptos::nonce::use_nonce() else { return };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
    );
    if let (Some(opts), Ok(value)) =
        (use_context::<leptos_axum::ResponseOptions>(), http::HeaderValue::from_str(&policy))
    {
        opts.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

/// Every dashboard page, by its stable URL (SPEC §U). Pages render in
/// `Async` mode: the HTML is complete without JavaScript (forms work as
/// plain posts before hydration).
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Router>
            <Routes fallback=|| view! { <pages::NotFound /> }>
                <Route path=path!("/login") view={Lazy::<routes::Login>::new()} ssr=SsrMode::Async />
                <Route path=path!("/providers") view={Lazy::<routes::Providers>::new()} ssr=SsrMode::Async />
                <Route path=path!("/keys") view={Lazy::<routes::Keys>::new()} ssr=SsrMode::Async />
                <Route path=path!("/logs") view={Lazy::<routes::Logs>::new()} ssr=SsrMode::Async />
                <Route path=path!("/usage") view={Lazy::<routes::Usage>::new()} ssr=SsrMode::Async />
                <Route path=path!("/monitoring/health") view={Lazy::<routes::Health>::new()} ssr=SsrMode::Async />
                <Route path=path!("/combos") view={Lazy::<routes::Combos>::new()} ssr=SsrMode::Async />
                <Route path=path!("/settings/resilience") view={Lazy::<routes::Resilience>::new()} ssr=SsrMode::Async />
                <Route path=path!("/settings/model-lockout") view={Lazy::<routes::ModelLockout>::new()} ssr=SsrMode::Async />
                <Route path=path!("/monitoring/cooldowns") view={Lazy::<routes::Cooldowns>::new()} ssr=SsrMode::Async />
                <Route path=path!("/get-started") view={Lazy::<routes::GetStarted>::new()} ssr=SsrMode::Async />
            </Routes>
        </Router>
    }
}
