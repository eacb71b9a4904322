//! One module per dashboard page.

mod combo_targets;
pub mod combos;
pub mod cooldowns;
pub mod get_started;
pub mod health;
pub mod keys;
pub mod login;
pub mod logs;
pub mod providers;
mod quota_bars;
pub mod settings;
pub mod subscriptions;
pub mod traffic;
pub mod usage;

use leptos::prelude::*;

/// An unknown dashboard URL: a 404 in the app's layout.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(opts) = use_context::<leptos_axum::ResponseOptions>() {
        opts.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <crate::components::Layout title="Page not found" summary="No dashboard page has this address.">
            <a href="/monitoring/health" class="text-indigo-600">"Go to Health"</a>
        </crate::components::Layout>
    }
}
