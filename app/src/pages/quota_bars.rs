//! A subscription's plan windows on its Providers row: one bar per window
//! (5-hour, weekly) with the share used and the time until it renews, as
//! the provider last stated them (`GET /api/quotas`). The bars follow the
//! page's refresh like the status badges; the countdown runs from the
//! server's now of that refresh, so server render and hydration agree.

use leptos::prelude::*;

use crate::{
    format,
    types::subscription::{ConnectionQuota, QuotaList, QuotaWindow},
};

/// The plan windows of connection `id`, from the latest refresh.
#[component]
pub fn LiveQuota(id: String, quotas: Resource<Result<(QuotaList, i64), ServerFnError>>) -> impl IntoView {
    move || {
        let (list, now) = quotas.get().and_then(Result::ok)?;
        let quota = list.connections.into_iter().find(|q| q.connection_id == id)?;
        Some(view! { <QuotaBars quota now /> })
    }
}

#[component]
fn QuotaBars(quota: ConnectionQuota, now: i64) -> impl IntoView {
    let plan = quota.plan.map(|p| format!("plan: {p}"));
    let note = match (&quota.error, quota.windows.is_empty()) {
        (Some(e), _) => Some(format!("usage not read: {e}")),
        (None, true) => Some("usage not read yet".to_owned()),
        (None, false) => None,
    };
    let stated = quota.fetched_at.map(|at| format!("as of {}", format::ago(now - at)));
    view! {
        <div class="mt-1 flex flex-col gap-0.5 text-xs tabular-nums" data-testid="quota">
            {quota.windows.into_iter().map(|w| view! { <WindowBar w now /> }).collect_view()}
            <span class="text-slate-500">{[plan, stated, note].into_iter().flatten().collect::<Vec<_>>().join(" · ")}</span>
        </div>
    }
}

/// One window: its bar, the share used and its renewal.
#[component]
fn WindowBar(w: QuotaWindow, now: i64) -> impl IntoView {
    let used = w.used_percent.clamp(0.0, 100.0);
    // Colour only where it means something, with its word beside it.
    let (fill, word) = match used {
        u if u >= 100.0 => ("bg-red-600", " · used up"),
        u if u >= 90.0 => ("bg-amber-500", " · nearly used"),
        _ => ("bg-slate-500", ""),
    };
    let renews =
        w.resets_at.map(|at| format!(" · renews in {}", format::duration(u64::try_from(at - now).unwrap_or(0))));
    let text = format!("{used:.0} % used{word}{}", renews.unwrap_or_default());
    let label = format!("{} window: {text}", w.window);
    let (window, name) = (w.window.clone(), w.window);
    view! {
        <div class="flex items-center gap-1" data-window=window>
            <span class="w-6">{name}</span>
            <span class="inline-block w-16 h-1.5 rounded bg-slate-200 overflow-hidden" role="img" aria-label=label>
                <span class=format!("block h-1.5 {fill}") style=format!("width: {used:.0}%")></span>
            </span>
            <span>{text}</span>
        </div>
    }
}
