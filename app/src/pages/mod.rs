//! One module per dashboard page.

pub mod combos;
pub mod cooldowns;
pub mod health;
pub mod keys;
pub mod login;
pub mod logs;
pub mod providers;
pub mod settings;

use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <main class="p-6">
            <h1 class="text-2xl font-semibold">"Page not found"</h1>
            <a href="/monitoring/health" class="text-indigo-600">"Back to the dashboard"</a>
        </main>
    }
}
