//! The dashboard's pages as lazy routes. Each page's code (its views,
//! the server functions it calls, the deserializers of their answers) is
//! split out of the main wasm module into a chunk of its own, which the
//! browser loads with the page: a first visit downloads the main module
//! and one page, not all of them (docs/bundle.md). The server renders
//! every page in full, and the page's HTML preloads its chunk.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

/// A lazy route named `$route` that shows the page component `$page`.
/// The page loads its own data, so the route has none of its own.
macro_rules! lazy_page {
    ($route:ident, $page:path) => {
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> AnyView {
                $page().into_any()
            }
        }
    };
}

lazy_page!(Login, crate::pages::login::LoginPage);
lazy_page!(Providers, crate::pages::providers::ProvidersPage);
lazy_page!(Keys, crate::pages::keys::KeysPage);
lazy_page!(Logs, crate::pages::logs::LogsPage);
lazy_page!(Usage, crate::pages::usage::UsagePage);
lazy_page!(Health, crate::pages::health::HealthPage);
lazy_page!(Combos, crate::pages::combos::CombosPage);
lazy_page!(Resilience, crate::pages::settings::ResiliencePage);
lazy_page!(ModelLockout, crate::pages::settings::ModelLockoutPage);
lazy_page!(Cooldowns, crate::pages::cooldowns::CooldownsPage);
lazy_page!(GetStarted, crate::pages::get_started::GetStartedPage);
