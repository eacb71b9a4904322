//! An Edit disclosure whose form opens in a panel along the right edge
//! (the whole width on a phone), over the page and scrolling on its own,
//! so a form never squeezes into a table cell. It opens and shuts as a
//! plain `<details>` without JavaScript (a post reloads the page, shut);
//! once hydrated, opening it moves the focus to its first field, Escape or
//! a save shuts it, and the focus goes back to Edit.

use leptos::{ev, html, prelude::*};

/// `label` names the disclosure ("Edit fake-a"); `title` heads the panel.
#[component]
pub fn EditPanel(
    label: String,
    title: String,
    /// The disclosure, for callers that shut it themselves (Cancel).
    #[prop(optional)]
    details: Option<NodeRef<html::Details>>,
    /// Turns true when the form's save succeeded: the panel shuts.
    saved: Signal<bool>,
    children: Children,
) -> impl IntoView {
    let details = details.unwrap_or_default();
    // In the browser only: without JS the post reloads the page anyway.
    #[cfg(target_arch = "wasm32")]
    Effect::new(move |_| {
        if let (true, Some(d)) = (saved.get(), details.get()) {
            d.set_open(false);
        }
    });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = saved;
    let summary = NodeRef::<html::Summary>::new();
    let panel = NodeRef::<html::Div>::new();
    let on_toggle = move |_: ev::Event| toggled(details, summary, panel);
    let on_keydown = move |e: ev::KeyboardEvent| {
        if e.key() == "Escape"
            && let Some(d) = details.get()
        {
            d.set_open(false);
        }
    };
    let heading = title.clone();
    view! {
        <details node_ref=details data-testid="edit" on:toggle=on_toggle>
            <summary node_ref=summary class="cursor-pointer text-sm" aria-label=label>"Edit"</summary>
            <div
                node_ref=panel
                role="dialog"
                aria-label=title
                class="side-panel fixed inset-y-0 right-0 z-40 w-full sm:w-[32rem] overflow-y-auto bg-white p-4 shadow-xl border-l border-slate-200"
                on:keydown=on_keydown
            >
                <h2 class="font-semibold mb-3">{heading}</h2>
                {children()}
            </div>
        </details>
    }
}

/// Opened: the focus goes to the panel's first field; shut: back to Edit.
fn toggled(details: NodeRef<html::Details>, summary: NodeRef<html::Summary>, panel: NodeRef<html::Div>) {
    use leptos::wasm_bindgen::JsCast;
    let (Some(details), Some(panel)) = (details.get(), panel.get()) else { return };
    if details.open() {
        let first = panel.query_selector("input:not([type=hidden]), select, textarea").ok().flatten();
        if let Some(field) = first.and_then(|f| f.dyn_into::<leptos::web_sys::HtmlElement>().ok()) {
            let _ = field.focus();
        }
    } else if let Some(summary) = summary.get() {
        let _ = summary.focus();
    }
}
