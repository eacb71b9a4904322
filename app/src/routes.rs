//! The dashboard's pages as lazy routes, split out of the main wasm
//! module in four groups: signing in, setting up (Get started,
//! Providers, Keys, Combos), monitoring (Logs, Usage, Health) and
//! settings (Resilience, Model Lockout, Cooldown Manager). A group's code
//! (its views, the server functions its pages call, the deserializers of
//! their answers) is one chunk, and code that groups share is one chunk
//! per set of groups sharing it: a cold page loads at most nine wasm
//! files, where one chunk set per page made up to 118 small ones.
//! The server renders every page in full, and the page's HTML preloads
//! its group's chunks (docs/bundle.md).

use leptos::prelude::*;
use leptos_router::LazyRoute;

/// A lazy route named `$route` that shows the page component `$page`,
/// its code in the wasm chunk of `$group`. `$split` names the split-off
/// function (the split's wasm exports are unmangled, so each needs a
/// name of its own). The page loads its own data, so the route has none.
macro_rules! lazy_page {
    ($route:ident: $page:path, in $group:ident as $split:ident) => {
        pub struct $route;

        #[cfg(target_arch = "wasm32")]
        mod $split {
            use leptos::prelude::*;

            #[::leptos::wasm_split::wasm_split($group, wasm_split_path = ::leptos::wasm_split, preload(preload))]
            pub fn $split(_route: super::$route) -> AnyView {
                $page().into_any()
            }
        }

        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            async fn view(route: Self) -> AnyView {
                #[cfg(target_arch = "wasm32")]
                {
                    $split::$split(route).await
                }
                #[cfg(not(target_arch = "wasm32"))]
                {
                    let Self = route;
                    // The page's HTML preloads its group's chunks.
                    leptos::prefetch_lazy_fn_on_server(stringify!($group));
                    $page().into_any()
                }
            }

            async fn preload() {
                #[cfg(target_arch = "wasm32")]
                $split::preload().await;
            }
        }
    };
}

lazy_page!(Login: crate::pages::login::LoginPage, in sign_in as login_page);
lazy_page!(GetStarted: crate::pages::get_started::GetStartedPage, in setup as get_started_page);
lazy_page!(Providers: crate::pages::providers::ProvidersPage, in setup as providers_page);
lazy_page!(Keys: crate::pages::keys::KeysPage, in setup as keys_page);
lazy_page!(Combos: crate::pages::combos::CombosPage, in setup as combos_page);
lazy_page!(Logs: crate::pages::logs::LogsPage, in monitoring as logs_page);
lazy_page!(Usage: crate::pages::usage::UsagePage, in monitoring as usage_page);
lazy_page!(Health: crate::pages::health::HealthPage, in monitoring as health_page);
lazy_page!(Cooldowns: crate::pages::cooldowns::CooldownsPage, in settings as cooldowns_page);
lazy_page!(Resilience: crate::pages::settings::ResiliencePage, in settings as resilience_page);
lazy_page!(ModelLockout: crate::pages::settings::ModelLockoutPage, in settings as model_lockout_page);
