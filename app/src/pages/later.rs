//! Pages whose features arrive with later work. Each says so plainly
//! instead of pretending to work.

use leptos::prelude::*;

use crate::components::Layout;

#[component]
fn Planned(title: &'static str, what: &'static str) -> impl IntoView {
    view! {
        <Layout title>
            <p class="p-4 rounded-md bg-amber-50 text-amber-900" data-testid="planned">
                {format!("Not available yet: {what} This page is reserved so links stay stable.")}
            </p>
        </Layout>
    }
}

#[component]
pub fn CombosPage() -> impl IntoView {
    view! { <Planned title="Combos" what="combos (virtual models with routing strategies) and aliases arrive with the routing work." /> }
}
