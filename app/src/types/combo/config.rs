//! A combo's `config`: the fields beyond its strategy, each read by the
//! strategies named on it (refused for the others), with the dashboard
//! form's reading of them.

use serde::{Deserialize, Serialize};

use super::{MAX_COMBO_TIMEOUT_MS, Strategy, target_model};
use crate::types::{
    settings::{duration_ms, human_ms},
    validation::{Errors, FieldError},
};

/// A duration out of `min..=max`, its bounds as the dashboard's duration
/// fields read (`1 h`, `500 ms`).
fn duration_range(e: &mut Errors, field: &str, ms: u64, min: u64, max: u64) {
    if !(min..=max).contains(&ms) {
        e.push(field, format!("must be between {} and {}", human_ms(min), human_ms(max)));
    }
}

/// Per-combo behaviour beyond the strategy. Fields a strategy does not
/// read are refused for it, so a saved config always means something.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboConfig {
    /// Stop trying further targets once this long has passed (`0` or
    /// unset: no limit) and answer `504 COMBO_TIMEOUT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combo_timeout_ms: Option<u64>,
    /// How long one attempt on a target may wait for the upstream's answer
    /// to start — its headers; for a stream, its first event — (1000–600000
    /// ms; unset: the gateway's own timeouts,
    /// `FETCH_TIMEOUT_MS` and, for a stream, `STREAM_READINESS_TIMEOUT_MS`,
    /// which it never exceeds). Past it the attempt fails as a timeout and
    /// the combo moves on. Not for fusion or pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_timeout_ms: Option<u64>,
    /// `pipeline`: how often an intermediate step that failed with
    /// 429/502/503/504 is tried again (0–10, default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// `pipeline`: the wait before such a retry (0–60000 ms, default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_delay_ms: Option<u64>,
    /// `fusion`: who writes the answer from the panel's (`provider/model`
    /// or a combo; default the first target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_model: Option<String>,
    /// `fusion`: how the panel is gathered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion_tuning: Option<FusionTuning>,
    /// `context-relay`: the share of the serving account's quota used
    /// (0.5–0.94, default 0.85) from which a handoff summary is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_threshold: Option<f64>,
    /// `context-relay`: who writes the summary (`provider/model`; default
    /// the model that served).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_model: Option<String>,
    /// `context-relay`: the providers whose accounts hand off (default:
    /// every provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_providers: Option<Vec<String>>,
    /// `context-relay`: the latest messages the summary covers (5–100,
    /// default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_messages_for_summary: Option<u32>,
}

/// How a `fusion` combo gathers its panel (every field optional; the
/// defaults are the [`FusionTuning`] constants).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FusionTuning {
    /// Answers to wait for before stragglers get only their grace (default
    /// 2; at most the panel's size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_panel: Option<u32>,
    /// How long stragglers may still answer once `minPanel` answered
    /// (default 8000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub straggler_grace_ms: Option<u64>,
    /// The panel's whole time (default 90000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel_hard_timeout_ms: Option<u64>,
    /// The largest panel accepted (default 40, 1–200): a bigger one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_panel: Option<u32>,
}

impl FusionTuning {
    pub const DEFAULT_MIN_PANEL: u32 = 2;
    pub const DEFAULT_STRAGGLER_GRACE_MS: u64 = 8_000;
    pub const DEFAULT_PANEL_HARD_TIMEOUT_MS: u64 = 90_000;
    pub const DEFAULT_MAX_PANEL: u32 = 40;
    pub const MAX_MAX_PANEL: u32 = 200;
    /// The longest grace or panel time (10 min).
    pub const MAX_WAIT_MS: u64 = 600_000;
}

impl ComboConfig {
    pub const DEFAULT_MAX_RETRIES: u32 = 1;
    pub const MAX_MAX_RETRIES: u32 = 10;
    pub const DEFAULT_RETRY_DELAY_MS: u64 = 2_000;
    pub const MAX_RETRY_DELAY_MS: u64 = 60_000;

    pub const DEFAULT_HANDOFF_THRESHOLD: f64 = 0.85;
    pub const HANDOFF_THRESHOLD_RANGE: (f64, f64) = (0.5, 0.94);
    pub const DEFAULT_MAX_MESSAGES_FOR_SUMMARY: u32 = 30;
    pub const MAX_MESSAGES_FOR_SUMMARY_RANGE: (u32, u32) = (5, 100);

    pub fn handoff_threshold(&self) -> f64 {
        self.handoff_threshold.unwrap_or(Self::DEFAULT_HANDOFF_THRESHOLD)
    }

    pub fn max_messages_for_summary(&self) -> usize {
        self.max_messages_for_summary.unwrap_or(Self::DEFAULT_MAX_MESSAGES_FOR_SUMMARY) as usize
    }

    /// Whether `provider`'s accounts hand off.
    pub fn hands_off(&self, provider: &str) -> bool {
        self.handoff_providers.as_ref().is_none_or(|list| list.iter().any(|p| p == provider))
    }

    pub const TARGET_TIMEOUT_RANGE_MS: (u64, u64) = (1_000, 600_000);

    pub fn max_retries(&self) -> u32 {
        self.max_retries.unwrap_or(Self::DEFAULT_MAX_RETRIES)
    }

    pub fn retry_delay_ms(&self) -> u64 {
        self.retry_delay_ms.unwrap_or(Self::DEFAULT_RETRY_DELAY_MS)
    }

    /// The fusion tuning with its defaults filled in, `minPanel` clamped to
    /// 1..=`panel`.
    pub fn fusion(&self, panel: usize) -> FusionSettings {
        let t = self.fusion_tuning.unwrap_or_default();
        let panel = u32::try_from(panel).unwrap_or(u32::MAX).max(1);
        FusionSettings {
            min_panel: t.min_panel.unwrap_or(FusionTuning::DEFAULT_MIN_PANEL).clamp(1, panel),
            straggler_grace_ms: t.straggler_grace_ms.unwrap_or(FusionTuning::DEFAULT_STRAGGLER_GRACE_MS),
            panel_hard_timeout_ms: t.panel_hard_timeout_ms.unwrap_or(FusionTuning::DEFAULT_PANEL_HARD_TIMEOUT_MS),
            max_panel: t.max_panel.unwrap_or(FusionTuning::DEFAULT_MAX_PANEL),
        }
    }

    /// Field checks; `strategy` decides which fields may be set at all.
    pub(super) fn validate(&self, strategy: Strategy, e: &mut Errors) {
        if let Some(ms) = self.combo_timeout_ms {
            duration_range(e, "config.comboTimeoutMs", ms, 0, MAX_COMBO_TIMEOUT_MS);
        }
        let only = |e: &mut Errors, set: bool, field: &str, owner: Strategy| {
            if set && strategy != owner {
                e.push(field, format!("is read only by the {} strategy", owner.as_str()));
            }
        };
        only(e, self.max_retries.is_some(), "config.maxRetries", Strategy::Pipeline);
        only(e, self.retry_delay_ms.is_some(), "config.retryDelayMs", Strategy::Pipeline);
        only(e, self.judge_model.is_some(), "config.judgeModel", Strategy::Fusion);
        only(e, self.fusion_tuning.is_some(), "config.fusionTuning", Strategy::Fusion);
        let relay = Strategy::ContextRelay;
        only(e, self.handoff_threshold.is_some(), "config.handoffThreshold", relay);
        only(e, self.handoff_model.is_some(), "config.handoffModel", relay);
        only(e, self.handoff_providers.is_some(), "config.handoffProviders", relay);
        only(e, self.max_messages_for_summary.is_some(), "config.maxMessagesForSummary", relay);
        let (low, high) = Self::HANDOFF_THRESHOLD_RANGE;
        if self.handoff_threshold.is_some_and(|t| !(low..=high).contains(&t)) {
            e.push("config.handoffThreshold", format!("must be {low} to {high}"));
        }
        let provider_model = |m: &str| m.split_once('/').is_some_and(|(p, m)| !p.is_empty() && !m.is_empty());
        if self.handoff_model.as_deref().is_some_and(|m| !provider_model(m)) {
            e.push("config.handoffModel", "must be provider/model");
        }
        if self.handoff_providers.as_ref().is_some_and(|l| l.is_empty() || l.iter().any(|p| p.trim().is_empty())) {
            e.push("config.handoffProviders", "must list provider ids (leave it out for every provider)");
        }
        if let Some(n) = self.max_messages_for_summary {
            let (low, high) = Self::MAX_MESSAGES_FOR_SUMMARY_RANGE;
            e.range("config.maxMessagesForSummary", n.into(), low.into(), high.into());
        }
        if let Some(ms) = self.target_timeout_ms {
            if matches!(strategy, Strategy::Fusion | Strategy::Pipeline) {
                e.push("config.targetTimeoutMs", "is not read by fusion or pipeline, whose calls run as single models");
            }
            let (low, high) = Self::TARGET_TIMEOUT_RANGE_MS;
            duration_range(e, "config.targetTimeoutMs", ms, low, high);
        }
        if let Some(n) = self.max_retries {
            e.range("config.maxRetries", n.into(), 0, Self::MAX_MAX_RETRIES.into());
        }
        if let Some(ms) = self.retry_delay_ms {
            duration_range(e, "config.retryDelayMs", ms, 0, Self::MAX_RETRY_DELAY_MS);
        }
        if let Some(judge) = &self.judge_model {
            target_model(e, "config.judgeModel", judge);
        }
        let t = self.fusion_tuning.unwrap_or_default();
        if let Some(n) = t.min_panel {
            e.range("config.fusionTuning.minPanel", n.into(), 1, FusionTuning::MAX_MAX_PANEL.into());
        }
        if let Some(n) = t.max_panel {
            e.range("config.fusionTuning.maxPanel", n.into(), 1, FusionTuning::MAX_MAX_PANEL.into());
        }
        if let Some(ms) = t.straggler_grace_ms {
            duration_range(e, "config.fusionTuning.stragglerGraceMs", ms, 0, FusionTuning::MAX_WAIT_MS);
        }
        if let Some(ms) = t.panel_hard_timeout_ms {
            duration_range(e, "config.fusionTuning.panelHardTimeoutMs", ms, 1, FusionTuning::MAX_WAIT_MS);
        }
    }
}

/// The per-combo fields the dashboard's form edits, as typed (empty =
/// unset; durations with a unit, `30 s`, or in ms). Read the same way in
/// the browser, as they are typed, and on save.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigForm {
    pub combo_timeout_ms: String,
    pub judge_model: String,
    pub max_retries: String,
    pub retry_delay_ms: String,
}

impl ConfigForm {
    /// The config these fields give for `strategy` — a field of another
    /// strategy is ignored — over `kept`, what the form has no inputs for
    /// (the fields of other strategies are dropped from it too); every
    /// problem named by its field.
    pub fn config(&self, strategy: Strategy, kept: ComboConfig) -> Result<ComboConfig, Vec<FieldError>> {
        let mut e = Errors::default();
        fn whole<T: std::str::FromStr>(e: &mut Errors, field: &str, text: &str) -> Option<T> {
            let text = text.trim();
            if text.is_empty() {
                return None;
            }
            let n = text.parse::<T>().ok();
            if n.is_none() {
                e.push(field, "must be a whole number");
            }
            n
        }
        fn duration(e: &mut Errors, field: &str, text: &str) -> Option<u64> {
            let text = text.trim();
            if text.is_empty() {
                return None;
            }
            duration_ms(text).map_err(|message| e.push(field, message)).ok()
        }
        let (fusion, pipeline, relay) =
            (strategy == Strategy::Fusion, strategy == Strategy::Pipeline, strategy == Strategy::ContextRelay);
        let judge = self.judge_model.trim();
        let config = ComboConfig {
            combo_timeout_ms: duration(&mut e, "config.comboTimeoutMs", &self.combo_timeout_ms),
            target_timeout_ms: kept.target_timeout_ms.filter(|_| !fusion && !pipeline),
            judge_model: (fusion && !judge.is_empty()).then(|| judge.to_owned()),
            max_retries: if pipeline { whole(&mut e, "config.maxRetries", &self.max_retries) } else { None },
            retry_delay_ms: if pipeline { duration(&mut e, "config.retryDelayMs", &self.retry_delay_ms) } else { None },
            fusion_tuning: kept.fusion_tuning.filter(|_| fusion),
            handoff_threshold: kept.handoff_threshold.filter(|_| relay),
            handoff_model: kept.handoff_model.filter(|_| relay),
            handoff_providers: kept.handoff_providers.filter(|_| relay),
            max_messages_for_summary: kept.max_messages_for_summary.filter(|_| relay),
        };
        if e.0.is_empty() {
            config.validate(strategy, &mut e);
        }
        e.into_result().map(|()| config)
    }
}

/// [`FusionTuning`] with every default filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusionSettings {
    pub min_panel: u32,
    pub straggler_grace_ms: u64,
    pub panel_hard_timeout_ms: u64,
    pub max_panel: u32,
}
