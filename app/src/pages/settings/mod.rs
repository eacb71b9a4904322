//! Settings → Resilience and Settings → Model Lockout: one card per group
//! of the shared [`ResilienceSettings`](crate::types::settings::ResilienceSettings).

mod card;
pub mod cards;
mod inputs;
mod model_cooldowns;

use leptos::prelude::*;

use crate::{
    api::{SaveResilience, get_resilience},
    components::{Layout, LoadFailed, Loading, action_error},
};
use card::SettingsCard;
use cards::{Card, MODEL_LOCKOUT_CARD, RESILIENCE_CARDS};
use model_cooldowns::ModelCooldownsCard;

/// A settings page: its title and cards.
#[component]
fn SettingsPage(title: &'static str, cards: &'static [Card], #[prop(optional)] resettable: bool) -> impl IntoView {
    view! {
        <Layout title>
            <SettingsCards cards resettable />
        </Layout>
    }
}

/// Loads the settings and renders `cards`; a successful save reloads them.
#[component]
pub fn SettingsCards(cards: &'static [Card], #[prop(optional)] resettable: bool) -> impl IntoView {
    let save = ServerAction::<SaveResilience>::new();
    let saves = RwSignal::new(0_u32);
    Effect::new(move |_| {
        if save.value().with(|v| matches!(v, Some(Ok(s)) if s.errors.is_empty())) {
            saves.update(|n| *n += 1);
        }
    });
    let data = Resource::new(move || saves.get(), |_| get_resilience());
    // A page of one card shows it open; a page of several, folded under
    // their contents.
    let open = cards.len() == 1;
    view! {
        {action_error(save)}
        {(!open).then(|| view! { <Contents cards /> })}
        <Transition fallback=Loading>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(view) => {
                            cards
                                .iter()
                                .map(|card| view! { <SettingsCard card view=view.clone() save resettable open /> })
                                .collect_view()
                                .into_any()
                        }
                        Err(e) => view! { <LoadFailed error=e.to_string() /> }.into_any(),
                    }
                })}
        </Transition>
    }
}

/// The page's table of contents: a link to each card.
#[component]
fn Contents(cards: &'static [Card]) -> impl IntoView {
    view! {
        <nav aria-label="Sections" class="mb-4 text-sm">
            <ul class="flex flex-wrap gap-x-4 gap-y-1">
                {cards
                    .iter()
                    .map(|c| view! { <li><a href=format!("#{}", c.id) class="text-indigo-700">{c.title}</a></li> })
                    .collect_view()}
            </ul>
        </nav>
    }
}

#[component]
pub fn ResiliencePage() -> impl IntoView {
    view! { <SettingsPage title="Settings → Resilience" cards=&RESILIENCE_CARDS /> }
}

#[component]
pub fn ModelLockoutPage() -> impl IntoView {
    view! {
        <Layout title="Settings → Model Lockout">
            <SettingsCards cards=std::slice::from_ref(&MODEL_LOCKOUT_CARD) resettable=true />
            <ModelCooldownsCard />
        </Layout>
    }
}
