//! An error text as people read it: an upstream's JSON body becomes its
//! sentence with the raw body behind a disclosure; a long text folds
//! behind its beginning.

use leptos::prelude::*;

use crate::format::upstream_message;

/// Text longer than this folds into a disclosure.
const SHORT: usize = 160;

#[component]
pub fn ErrorDetail(text: String) -> impl IntoView {
    let (shown, raw) = match upstream_message(&text) {
        Some(message) => (message, Some(text)),
        None if text.chars().count() > SHORT => {
            (format!("{}…", text.chars().take(SHORT).collect::<String>()), Some(text))
        }
        None => (text, None),
    };
    match raw {
        None => view! { <span data-testid="error-message">{shown}</span> }.into_any(),
        Some(raw) => view! {
            <span data-testid="error-message">{shown}</span>
            <details class="text-xs">
                <summary class="cursor-pointer text-slate-600">"Details"</summary>
                <pre class="whitespace-pre-wrap break-all mt-1 font-mono">{raw}</pre>
            </details>
        }
        .into_any(),
    }
}
