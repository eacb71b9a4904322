//! The signed-in app shell: a grouped left navigation that folds into a
//! top bar with a Menu button under 768 px (a checkbox toggles it, so it
//! works before hydration too), a skip link, the page header and its
//! `<title>`.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::api::Logout;

/// The navigation of §U, in groups: (group, [(URL, label)]).
pub const NAV: [(&str, &[(&str, &str)]); 5] = [
    (
        "Monitoring",
        &[
            ("/monitoring/health", "Health"),
            ("/monitoring/cooldowns", "Cooldown Manager"),
            ("/logs", "Logs"),
            ("/usage", "Usage"),
        ],
    ),
    ("Routing", &[("/providers", "Providers"), ("/combos", "Combos")]),
    ("Access", &[("/keys", "API keys")]),
    ("Settings", &[("/settings/resilience", "Resilience"), ("/settings/model-lockout", "Model Lockout")]),
    ("Help", &[("/get-started", "Get started")]),
];

/// The `<title>` of a page.
pub fn page_title(title: &str) -> String {
    format!("{title} · OmniRoute")
}

/// The OmniRoute mark (the favicon's drawing, `public/favicon.svg`) and
/// name. The mark is inline: as an `<img>`, the browser builds a separate
/// SVG document for it on the main thread while a cold page starts (about
/// 10 ms in a trace, docs/bundle.md).
#[component]
pub fn Logo() -> impl IntoView {
    view! {
        <span class="flex items-center gap-2 text-lg font-semibold">
            <svg viewBox="0 0 32 32" width="24" height="24" aria-hidden="true">
                <rect width="32" height="32" rx="7" fill="#4f46e5" />
                <path
                    d="M7 16h6m0 0 5-6h7m-12 6 5 6h7"
                    fill="none"
                    stroke="#fff"
                    stroke-width="2.6"
                    stroke-linecap="round"
                    stroke-linejoin="round"
                />
                <circle cx="7" cy="16" r="2.2" fill="#fff" />
            </svg>
            "OmniRoute"
        </span>
    }
}

/// A signed-in page: navigation, header (`title` and a one-line `summary`),
/// and the page.
#[component]
pub fn Layout(title: &'static str, #[prop(optional)] summary: &'static str, children: Children) -> impl IntoView {
    let menu_open = RwSignal::new(false);
    view! {
        <Title text=page_title(title) />
        <a href="#main" class="skip-link">"Skip to content"</a>
        <div class="min-h-screen md:flex">
            <input
                type="checkbox"
                id="nav-toggle"
                class="nav-toggle"
                aria-controls="main-nav"
                aria-label="Show the navigation"
                prop:checked=menu_open
                on:change=move |ev| menu_open.set(event_target_checked(&ev))
            />
            <header class="md:hidden flex items-center justify-between bg-slate-900 text-slate-100 px-4 py-2">
                <Logo />
                <label for="nav-toggle" class="menu-button px-3 py-1 rounded-md border border-slate-600 cursor-pointer">
                    "Menu"
                </label>
            </header>
            <Nav menu_open />
            <main id="main" tabindex="-1" class="page flex-1 min-w-0 p-4 md:p-6">
                <h1 class="text-2xl font-semibold">{title}</h1>
                {(!summary.is_empty()).then(|| view! { <p class="text-slate-600 mt-1">{summary}</p> })}
                <div class="mt-4">
                    <super::ErrorBanner />
                    {children()}
                </div>
            </main>
        </div>
    }
}

/// The grouped links and sign-out; following a link folds the mobile menu.
#[component]
fn Nav(menu_open: RwSignal<bool>) -> impl IntoView {
    let logout = ServerAction::<Logout>::new();
    view! {
        <nav
            id="main-nav"
            class="main-nav md:w-56 shrink-0 bg-slate-900 text-slate-100 p-4 flex-col gap-1"
            aria-label="Main"
            on:click=move |_| menu_open.set(false)
        >
            <div class="hidden md:block mb-4">
                <Logo />
            </div>
            {NAV
                .iter()
                .map(|(group, links)| {
                    view! {
                        <p class="mt-3 mb-1 px-2 text-xs uppercase tracking-wide text-slate-400">{*group}</p>
                        {links
                            .iter()
                            .map(|(href, label)| {
                                view! {
                                    <A href=*href attr:class="nav-link px-2 py-1 rounded-md hover:bg-slate-700">
                                        {*label}
                                    </A>
                                }
                            })
                            .collect_view()}
                    }
                })
                .collect_view()}
            <ActionForm action=logout attr:class="mt-auto pt-4">
                <button type="submit" class="px-2 py-1 rounded-md hover:bg-slate-700 w-full text-left">
                    "Sign out"
                </button>
            </ActionForm>
        </nav>
    }
}
