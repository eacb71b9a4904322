//! `/login`: the single admin password.

use leptos::prelude::*;

use crate::{
    api::Login,
    components::{ErrorBanner, action_error},
};

#[component]
pub fn LoginPage() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    let query = leptos_router::hooks::use_query_map();
    let next = move || query.read().get("next").unwrap_or_default();
    view! {
        <leptos_meta::Title text=crate::components::page_title("Sign in") />
        <main class="min-h-screen flex items-center justify-center p-4">
            <div class="w-80 max-w-full bg-white p-6 rounded-md shadow-sm">
                <div class="mb-4">
                    <crate::components::Logo />
                </div>
                <h1 class="text-xl font-semibold mb-4">"Sign in"</h1>
                <ErrorBanner />
                {action_error(login)}
                <ActionForm action=login>
                    <input type="hidden" name="next" value=next />
                    <label class="block mb-2 text-sm" for="password">
                        "Admin password"
                    </label>
                    <input
                        id="password"
                        name="password"
                        type="password"
                        required
                        autocomplete="current-password"
                        class="w-full border border-slate-300 rounded-md px-2 py-1 mb-4"
                    />
                    <button type="submit" class="w-full bg-indigo-600 text-white rounded-md py-1">
                        "Sign in"
                    </button>
                </ActionForm>
            </div>
        </main>
    }
}
