//! The traffic chart (UI.md "Charts"): server-rendered SVG, requests as
//! bars stacked by outcome class, latency p50 / p95 as lines on a second
//! scale, the breaker as a thin band underneath; hovering a bucket or a
//! band segment shows its exact values (`<title>`), and a table behind a
//! disclosure says the same in text. Times are relative to the window's
//! end, so the server and the browser draw the same picture.

use leptos::prelude::*;

use crate::{
    format::ago,
    types::traffic::{BreakerSpan, TrafficPoint, TrafficSeries},
};

const WIDTH: f64 = 600.0;
const LEFT: f64 = 40.0;
const RIGHT: f64 = 52.0;
const TOP: f64 = 8.0;
const PLOT_H: f64 = 110.0;
/// The x labels' baseline, and the breaker band under them.
const LABELS_Y: f64 = TOP + PLOT_H + 14.0;
const BAND_Y: f64 = LABELS_Y + 6.0;
const BAND_H: f64 = 8.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
/// The current breaker state is drawn at least this wide.
const CURRENT_MIN_W: f64 = 6.0;

/// One outcome class: its count, CSS class and legend word.
type Class = (fn(&TrafficPoint) -> u32, &'static str, &'static str);

/// The outcome classes, bottom to top.
const CLASSES: [Class; 5] = [
    (|p| p.ok, "ok", "2xx"),
    (|p| p.client_errors, "c4xx", "4xx"),
    (|p| p.rate_limited, "c429", "429"),
    (|p| p.server_errors, "c5xx", "5xx"),
    (|p| p.transport, "transport", "transport"),
];

/// The time frame the points cover.
#[derive(Clone, Copy)]
pub struct Frame {
    pub start_ms: i64,
    pub bucket_ms: i64,
    pub buckets: usize,
}

impl Frame {
    fn window_ms(self) -> i64 {
        self.bucket_ms * i64::try_from(self.buckets).unwrap_or(1)
    }

    fn end_ms(self) -> i64 {
        self.start_ms + self.window_ms()
    }

    fn x_of(self, at_ms: i64) -> f64 {
        let t = (at_ms - self.start_ms).clamp(0, self.window_ms()) as f64;
        LEFT + PLOT_W * t / self.window_ms().max(1) as f64
    }

    /// How long before the window's end a bucket began.
    fn ago_of(self, i: usize) -> String {
        ago(self.end_ms() - (self.start_ms + self.bucket_ms * i64::try_from(i).unwrap_or(0)))
    }
}

/// 1, 2 or 5 times a power of ten, at least `v` (and at least 1).
fn nice(v: u32) -> u32 {
    let mut step = 1u32;
    loop {
        for m in [1, 2, 5] {
            if step.saturating_mul(m) >= v {
                return step.saturating_mul(m);
            }
        }
        step = step.saturating_mul(10);
    }
}

/// One bucket in words, for its hover title and the table.
pub fn describe(p: &TrafficPoint) -> String {
    let mut parts = vec![format!("{} requests", p.requests())];
    parts.extend(CLASSES.iter().filter(|c| (c.0)(p) > 0).map(|(f, _, word)| format!("{} {word}", f(p))));
    if let (Some(p50), Some(p95)) = (p.p50_ms, p.p95_ms) {
        parts.push(format!("p50 {p50} ms, p95 {p95} ms"));
    }
    if p.input_tokens + p.output_tokens > 0 {
        parts.push(tokens_in_out(p));
    }
    parts.join(" · ")
}

/// A token count as people read it: 950, 12.3k, 4.1M.
pub fn token_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// "12.3k tokens in (8.0k cached) · 1.2k out".
fn tokens_in_out(p: &TrafficPoint) -> String {
    let cached =
        if p.cached_tokens > 0 { format!(" ({} cached)", token_count(p.cached_tokens)) } else { String::new() };
    format!("{} tokens in{cached}, {} out", token_count(p.input_tokens), token_count(p.output_tokens))
}

/// A latency line: `M`/`L` commands, broken where a bucket had none.
fn latency_path(points: &[TrafficPoint], of: fn(&TrafficPoint) -> Option<u32>, max: u32, bar: f64) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for (i, p) in points.iter().enumerate() {
        match of(p) {
            Some(ms) => {
                let x = LEFT + bar * (i as f64 + 0.5);
                let y = TOP + PLOT_H * (1.0 - f64::from(ms.min(max)) / f64::from(max));
                d.push_str(&format!("{}{x:.1},{y:.1} ", if pen_down { 'L' } else { 'M' }));
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    d
}

#[component]
pub fn TrafficChart(
    /// Names the chart for assistive technology.
    label: String,
    series: TrafficSeries,
    frame: Frame,
    /// The breaker band, when the chart is a provider's.
    #[prop(optional)]
    breaker: Option<Vec<BreakerSpan>>,
) -> impl IntoView {
    let points = series.points;
    let bar = PLOT_W / points.len().max(1) as f64;
    let max_requests = nice(points.iter().map(TrafficPoint::requests).max().unwrap_or(0));
    let max_latency = nice(points.iter().filter_map(|p| p.p95_ms).max().unwrap_or(0));
    let height = if breaker.is_some() { BAND_Y + BAND_H } else { LABELS_Y + 4.0 };
    let bars = points.iter().enumerate().map(|(i, p)| {
        let x = LEFT + bar * i as f64;
        let mut y = TOP + PLOT_H;
        let stack = CLASSES.iter().filter(|c| (c.0)(p) > 0).map(|(f, class, _)| {
            let h = PLOT_H * f64::from(f(p)) / f64::from(max_requests);
            y -= h;
            view! { <rect class=*class x=format!("{:.1}", x + 0.5) y=format!("{y:.1}") width=format!("{:.1}", (bar - 1.0).max(0.5)) height=format!("{h:.1}") /> }
        });
        let title = format!("{}: {}", frame.ago_of(i), describe(p));
        view! {
            <g class="bucket">
                <title>{title}</title>
                <rect class="hover" x=format!("{x:.1}") y=TOP width=format!("{bar:.1}") height=PLOT_H />
                {stack.collect_view()}
            </g>
        }
    });
    let ticks = (0..=4).map(|i| {
        let x = LEFT + PLOT_W * f64::from(i) / 4.0;
        let text = if i == 4 { "now".to_owned() } else { ago(frame.window_ms() * i64::from(4 - i) / 4) };
        let anchor = match i {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        view! { <text x=format!("{x:.1}") y=LABELS_Y text-anchor=anchor>{text}</text> }
    });
    let band = breaker.map(|spans| {
        let n = spans.len();
        spans
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                // The state now reaches the chart's right edge, and stays visible however new.
                let now = i + 1 == n;
                let x1 = if now { WIDTH - RIGHT } else { frame.x_of(s.to_ms) };
                let x0 = if now { frame.x_of(s.from_ms).min(x1 - CURRENT_MIN_W) } else { frame.x_of(s.from_ms) };
                let state = crate::format::breaker_state(&s.state);
                let title = if now {
                    format!("breaker {state} since {}", ago(frame.end_ms() - s.from_ms))
                } else {
                    format!("breaker {state} from {} to {}", ago(frame.end_ms() - s.from_ms), ago(frame.end_ms() - s.to_ms))
                };
                view! {
                    <rect class=format!("band {}", s.state) x=format!("{x0:.1}") y=BAND_Y width=format!("{:.1}", (x1 - x0).max(0.5)) height=BAND_H>
                        <title>{title}</title>
                    </rect>
                }
            })
            .collect_view()
    });
    view! {
        <svg class="chart w-full" viewBox=format!("0 0 {WIDTH} {height}") role="img" aria-label=label data-testid="traffic-chart">
            <g class="axis">
                <line x1=LEFT y1=TOP + PLOT_H x2=WIDTH - RIGHT y2=TOP + PLOT_H />
                <text x=LEFT - 4.0 y=TOP + 8.0 text-anchor="end">{max_requests}</text>
                <text x=LEFT - 4.0 y=TOP + PLOT_H text-anchor="end">"0"</text>
                <text x=WIDTH - RIGHT + 4.0 y=TOP + 8.0>{format!("{max_latency} ms")}</text>
                {ticks.collect_view()}
            </g>
            {bars.collect_view()}
            <path class="p95" d=latency_path(&points, |p| p.p95_ms, max_latency, bar) />
            <path class="p50" d=latency_path(&points, |p| p.p50_ms, max_latency, bar) />
            {band}
        </svg>
    }
}

/// What every colour and line means.
#[component]
pub fn ChartLegend() -> impl IntoView {
    let swatch = |class: &'static str, word: &'static str| {
        view! {
            <span class="inline-flex items-center gap-1 mr-3">
                <svg class="chart" width="10" height="10" aria-hidden="true"><rect class=class width="10" height="10" /></svg>
                {word}
            </span>
        }
    };
    view! {
        <p class="text-xs text-slate-600 mt-1" data-testid="chart-legend">
            {CLASSES.iter().map(|(_, class, word)| swatch(class, word)).collect_view()}
            <span class="mr-3">"— p50 latency"</span>
            <span class="mr-3">"- - p95 latency (right scale; time to first event for streams)"</span>
            "Band: breaker "
            {swatch("band CLOSED", "closed")}
            {swatch("band DEGRADED", "degraded")}
            {swatch("band OPEN", "open")}
            {swatch("band HALF_OPEN", "half-open")}
            {swatch("band unknown", "before the gateway started")}
        </p>
    }
}

/// The chart's text alternative: every bucket with traffic.
#[component]
pub fn ChartTable(series: TrafficSeries, frame: Frame) -> impl IntoView {
    let rows: Vec<_> = series.points.iter().enumerate().filter(|(_, p)| p.requests() > 0).collect();
    view! {
        <details class="text-sm mt-1">
            <summary class="cursor-pointer text-indigo-700">"As a table"</summary>
            {if rows.is_empty() {
                view! { <p class="text-slate-500">"No requests in this window."</p> }.into_any()
            } else {
                let ms = |v: Option<u32>| v.map_or("–".to_owned(), |v| format!("{v} ms"));
                view! {
                    <div class="overflow-x-auto"><table class="text-xs mt-1 tabular-nums">
                        <thead><tr class="text-left">
                            <th class="pr-3">"Bucket"</th><th class="pr-3">"Requests"</th>
                            {CLASSES.iter().map(|c| view! { <th class="pr-3">{c.2}</th> }).collect_view()}
                            <th class="pr-3">"p50"</th><th class="pr-3">"p95"</th>
                        </tr></thead>
                        <tbody>
                            {rows.into_iter().map(|(i, p)| view! {
                                <tr>
                                    <td class="pr-3">{frame.ago_of(i)}</td>
                                    <td class="pr-3">{p.requests()}</td>
                                    {CLASSES.iter().map(|c| view! { <td class="pr-3">{(c.0)(p)}</td> }).collect_view()}
                                    <td class="pr-3">{ms(p.p50_ms)}</td>
                                    <td class="pr-3">{ms(p.p95_ms)}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }
                .into_any()
            }}
        </details>
    }
}
