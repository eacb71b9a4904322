//! The browser half of the dashboard: hydrates the server-rendered page.

use leptos::wasm_bindgen::JsValue;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
    // Lets browser tests wait for interactivity instead of sleeping.
    if let Some(window) = leptos::web_sys::window() {
        let _ = leptos::web_sys::js_sys::Reflect::set(&window, &JsValue::from_str("__hydrated"), &JsValue::TRUE);
    }
}
