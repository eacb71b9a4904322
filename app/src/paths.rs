//! Paths of pages that more than one module names (a form that comes back
//! to the page it was posted from).

/// The Get started page.
pub const GET_STARTED: &str = "/get-started";

/// The query parameter naming the form a page shows open (`?edit=<key>`:
/// a settings card, a connection's or a combo's Edit panel). Edit is a
/// link to it, so a page load without JS opens the form; with JS it opens
/// in place. Pages carry no closed forms: the browser's form scan forces
/// a layout per form at load, and each one is hydrated.
pub const EDIT: &str = "edit";

/// The link that opens the form named `key` on this page, at the element
/// whose id is `key` (its card or row).
pub fn edit_link(key: &str) -> String {
    format!("?{EDIT}={}#{key}", crate::format::query_escape(key))
}

/// The form this page load asks for open (`?edit=<key>`), if any.
pub fn edit_param() -> Option<String> {
    use leptos::prelude::WithUntracked;
    leptos_router::hooks::use_query_map().with_untracked(|q| q.get(EDIT))
}
