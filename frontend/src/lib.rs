//! The browser half of the dashboard: hydrates the server-rendered page.
//! Every page is a lazy route, so hydration is asynchronous: it waits for
//! the page's chunks (`app/src/routes.rs`), then hydrates the page.

use leptos::wasm_bindgen::JsValue;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // The executor drives the reactive system and the hydration itself.
    _ = any_spawner::Executor::init_wasm_bindgen();
    leptos::task::spawn_local(async {
        leptos::mount::hydrate_from_async(leptos::tachys::dom::body(), app::App).await.forget();
        // Lets browser tests wait for interactivity instead of sleeping,
        // and time it: `__hydratedAt` is when (ms since the epoch, as
        // `performance.timeOrigin` counts) the page became interactive.
        if let Some(window) = leptos::web_sys::window() {
            let now = JsValue::from_f64(leptos::web_sys::js_sys::Date::now());
            let _ = leptos::web_sys::js_sys::Reflect::set(&window, &JsValue::from_str("__hydratedAt"), &now);
            let _ = leptos::web_sys::js_sys::Reflect::set(&window, &JsValue::from_str("__hydrated"), &JsValue::TRUE);
        }
    });
}
