//! Paths of pages that more than one module names (a form that comes back
//! to the page it was posted from).

/// The Get started page.
pub const GET_STARTED: &str = "/get-started";
