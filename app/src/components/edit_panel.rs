//! An Edit disclosure whose form opens in a panel along the right edge
//! (the whole width on a phone), over the page and scrolling on its own,
//! so a form never squeezes into a table cell.
//!
//! The form exists only while the panel is open (`paths::EDIT`): a table
//! of twenty connections no longer carries twenty hidden forms for the
//! browser to scan and lay out and for the page to hydrate. Edit is a link
//! to `?edit=<key>`, so without JavaScript a page load opens the panel (a
//! post reloads the page, shut). Once hydrated, Edit opens it in place and
//! moves the focus to its first field; Escape or a save shuts it, and the
//! focus goes back to Edit. Which panel is open is the page's state
//! ([`edited`]), so it stays open while the page's rows are rebuilt
//! around it (a refused save reloads them).

use leptos::{ev, html, prelude::*};

use crate::paths;

/// `label` names the disclosure ("Edit fake-a"); `title` heads the panel.
#[component]
pub fn EditPanel(
    label: String,
    title: String,
    /// What `?edit=` names to open this panel on a page load: the id of
    /// the row the link brings into view.
    key: String,
    /// The page's open panel, by key ([`edited`]); callers that shut it
    /// themselves (Cancel) set it to `None`.
    editing: RwSignal<Option<String>>,
    /// Turns true when the form's save succeeded: the panel shuts.
    saved: Signal<bool>,
    children: ChildrenFn,
) -> impl IntoView {
    let open = {
        let key = key.clone();
        Memo::new(move |_| editing.with(|e| e.as_deref() == Some(key.as_str())))
    };
    let link = NodeRef::<html::A>::new();
    let panel = NodeRef::<html::Div>::new();
    // In the browser only: without JS the post reloads the page anyway.
    #[cfg(target_arch = "wasm32")]
    {
        Effect::watch(
            move || saved.get(),
            move |saved, _, _| {
                if *saved {
                    editing.set(None);
                }
            },
            false,
        );
        Effect::watch(move || open.get(), move |now, _, _| moved(*now, link, panel), false);
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = saved;
    let on_click = {
        let key = key.clone();
        move |e: ev::MouseEvent| {
            e.prevent_default();
            editing.set((!open.get_untracked()).then(|| key.clone()));
        }
    };
    let on_keydown = move |e: ev::KeyboardEvent| {
        if e.key() == "Escape" {
            editing.set(None);
        }
    };
    view! {
        <div data-testid="edit" data-open=move || open.get().then_some("")>
            <a
                node_ref=link
                href=paths::edit_link(&key)
                class="text-sm text-indigo-700"
                aria-label=label
                aria-expanded=move || open.get().to_string()
                on:click=on_click
            >
                "Edit"
            </a>
            {move || {
                open.get()
                    .then(|| {
                        view! {
                            <div
                                node_ref=panel
                                role="dialog"
                                aria-label=title.clone()
                                class="side-panel fixed inset-y-0 right-0 z-40 w-full sm:w-[32rem] overflow-y-auto bg-white p-4 shadow-xl border-l border-slate-200"
                                on:keydown=on_keydown
                            >
                                <h2 class="font-semibold mb-3">{title.clone()}</h2>
                                {children()}
                            </div>
                        }
                    })
            }}
        </div>
    }
}

/// Opened: the focus goes to the panel's first field (once it is drawn);
/// shut: back to Edit.
#[cfg(target_arch = "wasm32")]
fn moved(open: bool, link: NodeRef<html::A>, panel: NodeRef<html::Div>) {
    use leptos::wasm_bindgen::JsCast;
    request_animation_frame(move || {
        if open {
            let Some(panel) = panel.get_untracked() else { return };
            let first = panel.query_selector("input:not([type=hidden]), select, textarea").ok().flatten();
            if let Some(field) = first.and_then(|f| f.dyn_into::<leptos::web_sys::HtmlElement>().ok()) {
                let _ = field.focus();
            }
        } else if let Some(link) = link.get_untracked() {
            let _ = link.focus();
        }
    });
}

/// A page's open Edit panel: the one this page load asks for (`?edit=`).
pub fn edited() -> RwSignal<Option<String>> {
    RwSignal::new(paths::edit_param())
}
