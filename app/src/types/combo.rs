//! Combos (SPEC §R8): a named virtual model whose targets are tried in the
//! strategy's order, so one request can fail over across providers.

use serde::{Deserialize, Serialize};

use super::validation::{Errors, FieldError};

/// Most targets one combo may list.
pub const MAX_COMBO_TARGETS: usize = 50;
/// How deep combos may nest (a combo naming a combo naming a combo).
pub const MAX_COMBO_DEPTH: usize = 3;

/// Most a target's weight may be.
pub const MAX_WEIGHT: u32 = 100;
/// The longest `comboTimeoutMs` (1 h).
pub const MAX_COMBO_TIMEOUT_MS: u64 = 3_600_000;

/// How a combo orders its targets (SPEC §R8). The other strategies of the
/// SPEC are refused by name until they exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// As listed.
    Priority,
    /// One target drawn by weight first, then the others by weight.
    Weighted,
    /// Each request starts at the next target.
    RoundRobin,
    /// As listed: the first target takes everything until it fails.
    FillFirst,
    /// The better of two targets drawn at random (success rate, latency, breaker).
    P2c,
    /// A fresh shuffle for every request.
    Random,
    /// A shuffled deck: every target leads once per round, never twice in a row.
    StrictRandom,
    /// The target with the fewest requests first.
    LeastUsed,
    /// The provider (and account) that served this combo last, first.
    Lkgp,
    /// The cheapest model first, by its list price per input token.
    CostOptimized,
    /// The model with the largest context window first.
    ContextOptimized,
    /// One target per account; the account whose upstream quota window
    /// resets soonest first.
    ResetWindow,
    /// One target per account; the most quota left, weighed with how soon
    /// it resets, first.
    ResetAware,
    /// One target per account; the account furthest from its limit first.
    Headroom,
    /// One target per account, drawn in proportion to its quota left and
    /// divided by its requests in flight.
    QuotaWeighted,
    /// One target per account; a conversation always leads with the same
    /// account (rendezvous hashing of its session), so its prompt cache stays warm.
    CacheOptimized,
    /// As listed; when the account serving a conversation nears its quota,
    /// a summary of the conversation is made for the account that takes
    /// it over.
    ContextRelay,
    /// Ranked by a weighted score (health, quota, price, latency), with
    /// some exploration and rotation among the best.
    Auto,
    /// Every target answers in parallel; a judge writes one answer from theirs.
    Fusion,
    /// The targets in a chain: each answers the previous one's text.
    Pipeline,
}

impl Strategy {
    pub const ALL: [Self; 20] = [
        Self::Priority,
        Self::Weighted,
        Self::RoundRobin,
        Self::FillFirst,
        Self::P2c,
        Self::Random,
        Self::StrictRandom,
        Self::LeastUsed,
        Self::Lkgp,
        Self::CostOptimized,
        Self::ContextOptimized,
        Self::ResetWindow,
        Self::ResetAware,
        Self::Headroom,
        Self::QuotaWeighted,
        Self::CacheOptimized,
        Self::ContextRelay,
        Self::Auto,
        Self::Fusion,
        Self::Pipeline,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Priority => "priority",
            Self::Weighted => "weighted",
            Self::RoundRobin => "round-robin",
            Self::FillFirst => "fill-first",
            Self::P2c => "p2c",
            Self::Random => "random",
            Self::StrictRandom => "strict-random",
            Self::LeastUsed => "least-used",
            Self::Lkgp => "lkgp",
            Self::CostOptimized => "cost-optimized",
            Self::ContextOptimized => "context-optimized",
            Self::ResetWindow => "reset-window",
            Self::ResetAware => "reset-aware",
            Self::Headroom => "headroom",
            Self::QuotaWeighted => "quota-weighted",
            Self::CacheOptimized => "cache-optimized",
            Self::ContextRelay => "context-relay",
            Self::Auto => "auto",
            Self::Fusion => "fusion",
            Self::Pipeline => "pipeline",
        }
    }

    /// One line on when to pick it, for the dashboard.
    pub fn explain(self) -> &'static str {
        match self {
            Self::Priority => {
                "Tries the targets in the order listed; later ones only when earlier ones fail or are excluded."
            }
            Self::Weighted => {
                "Sends each request first to a target drawn by weight (0–100), so traffic splits in proportion; the others follow by weight."
            }
            Self::RoundRobin => "Starts each request at the next target in turn, spreading load evenly.",
            Self::FillFirst => {
                "Uses the first target until it fails or is excluded, then the next: fills one account before touching the next."
            }
            Self::P2c => {
                "Draws two targets and leads with the healthier (success rate, latency, breaker state): load follows health."
            }
            Self::Random => "A fresh random order for every request.",
            Self::StrictRandom => "A shuffled deck: every target leads exactly once per round, never twice in a row.",
            Self::LeastUsed => "Leads with the target that has served the fewest requests so far.",
            Self::Lkgp => "Leads with the provider that served this combo last (last known good), then as listed.",
            Self::CostOptimized => {
                "Cheapest model first, by its list price per input token; models without a known price last."
            }
            Self::ContextOptimized => {
                "Largest context window first; models without a known window last. It does not look at the request's size."
            }
            Self::ResetWindow => {
                "Tries every account of each target, the one whose rate-limit window resets soonest first (from the upstream's rate-limit headers)."
            }
            Self::ResetAware => {
                "Tries every account of each target, the one with the most quota left first, favouring a nearly used one that resets soon."
            }
            Self::Headroom => {
                "Tries every account of each target, the one furthest from its rate limit first; accounts not yet seen count as untouched."
            }
            Self::QuotaWeighted => {
                "Tries every account of each target, leading with one drawn in proportion to its quota left and its requests in flight."
            }
            Self::CacheOptimized => {
                "Tries every account of each target; each conversation always leads with the same one, so its prompt cache stays warm. Without a session, as listed."
            }
            Self::ContextRelay => {
                "Tries the targets as listed. When the account serving a conversation nears its rate limit, a summary of the conversation is written, and another account taking the conversation over gets it as a system note."
            }
            Self::Auto => {
                "Leads with the best-scoring target (breaker health, quota left, price, latency), now and then exploring another; the rest follow by score."
            }
            Self::Fusion => {
                "Asks every target at once (without tools, not streamed) and has the judge model (default: the first target) write one answer from theirs."
            }
            Self::Pipeline => {
                "Runs the targets as a chain: each gets its prompt and the previous target's answer; the last one's answer, streamed, is the reply."
            }
        }
    }
}

/// One target: `provider/model` (optionally pinned to one connection), or
/// the name of another combo, whose targets take its place (nested combos,
/// at most [`MAX_COMBO_DEPTH`] deep).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboTarget {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    /// Share of traffic under `weighted` (0–100; all 0 = an even split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// `pipeline` only: this step's instructions, sent as its system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl ComboTarget {
    /// The combo this target names, when it names one (no `provider/`).
    pub fn combo_ref(&self) -> Option<&str> {
        (!self.model.contains('/')).then_some(self.model.as_str())
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
    fn validate(&self, strategy: Strategy, e: &mut Errors) {
        if let Some(ms) = self.combo_timeout_ms {
            e.range("config.comboTimeoutMs", i64::try_from(ms).unwrap_or(i64::MAX), 0, MAX_COMBO_TIMEOUT_MS as i64);
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
        let wide = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        if let Some(ms) = self.target_timeout_ms {
            if matches!(strategy, Strategy::Fusion | Strategy::Pipeline) {
                e.push("config.targetTimeoutMs", "is not read by fusion or pipeline, whose calls run as single models");
            }
            let (low, high) = Self::TARGET_TIMEOUT_RANGE_MS;
            e.range("config.targetTimeoutMs", wide(ms), wide(low), wide(high));
        }
        if let Some(n) = self.max_retries {
            e.range("config.maxRetries", n.into(), 0, Self::MAX_MAX_RETRIES.into());
        }
        if let Some(ms) = self.retry_delay_ms {
            e.range("config.retryDelayMs", wide(ms), 0, wide(Self::MAX_RETRY_DELAY_MS));
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
        let max_wait = wide(FusionTuning::MAX_WAIT_MS);
        if let Some(ms) = t.straggler_grace_ms {
            e.range("config.fusionTuning.stragglerGraceMs", wide(ms), 0, max_wait);
        }
        if let Some(ms) = t.panel_hard_timeout_ms {
            e.range("config.fusionTuning.panelHardTimeoutMs", wide(ms), 1, max_wait);
        }
    }
}

/// The per-combo fields the dashboard's form edits, as typed (empty =
/// unset). Read the same way in the browser, as they are typed, and on save.
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
        let (fusion, pipeline, relay) =
            (strategy == Strategy::Fusion, strategy == Strategy::Pipeline, strategy == Strategy::ContextRelay);
        let judge = self.judge_model.trim();
        let config = ComboConfig {
            combo_timeout_ms: whole(&mut e, "config.comboTimeoutMs", &self.combo_timeout_ms),
            target_timeout_ms: kept.target_timeout_ms.filter(|_| !fusion && !pipeline),
            judge_model: (fusion && !judge.is_empty()).then(|| judge.to_owned()),
            max_retries: if pipeline { whole(&mut e, "config.maxRetries", &self.max_retries) } else { None },
            retry_delay_ms: if pipeline { whole(&mut e, "config.retryDelayMs", &self.retry_delay_ms) } else { None },
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

/// The longest pipeline step prompt.
pub const MAX_PROMPT_CHARS: usize = 20_000;

/// Checks a target's model: `provider/model` or a combo's name.
fn target_model(e: &mut Errors, field: &str, model: &str) {
    if model.contains('/') {
        if !model.split_once('/').is_some_and(|(p, m)| !p.is_empty() && !m.is_empty()) {
            e.push(field, "must be provider/model or a combo's name");
        }
    } else {
        e.model_name(field, model, 64);
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Combo {
    /// The model name clients send.
    pub name: String,
    pub strategy: Strategy,
    pub targets: Vec<ComboTarget>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub config: ComboConfig,
}

fn is_default(c: &ComboConfig) -> bool {
    *c == ComboConfig::default()
}

impl Combo {
    /// The combos this combo names: as targets, and as its fusion judge.
    pub fn combo_refs(&self) -> impl Iterator<Item = &str> {
        let judge = self.config.judge_model.as_deref().filter(|m| !m.contains('/'));
        self.targets.iter().filter_map(ComboTarget::combo_ref).chain(judge)
    }

    /// Field checks that need no catalog; the server adds the provider check.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        e.model_name("name", &self.name, 64);
        if self.targets.is_empty() || self.targets.len() > MAX_COMBO_TARGETS {
            e.push("targets", format!("must list 1 to {MAX_COMBO_TARGETS} targets"));
        }
        for (i, t) in self.targets.iter().enumerate() {
            target_model(&mut e, &format!("targets.{i}.model"), &t.model);
            if let Some(prompt) = &t.prompt {
                let field = format!("targets.{i}.prompt");
                if self.strategy != Strategy::Pipeline {
                    e.push(&field, "is read only by the pipeline strategy");
                } else if prompt.trim().is_empty() || prompt.chars().count() > MAX_PROMPT_CHARS {
                    e.push(&field, format!("must be 1 to {MAX_PROMPT_CHARS} characters"));
                } else if prompt.contains(|c: char| c.is_control() && c != '\n' && c != '\t') {
                    e.push(&field, "must not contain control characters other than line breaks and tabs");
                }
            }
            if t.combo_ref().is_some() && t.connection_id.is_some() {
                e.push(&format!("targets.{i}.connectionId"), "a combo target cannot be pinned to a connection");
            }
            if t.weight.is_some_and(|w| w > MAX_WEIGHT) {
                e.push(&format!("targets.{i}.weight"), format!("must be 0 to {MAX_WEIGHT}"));
            }
        }
        self.config.validate(self.strategy, &mut e);
        e.into_result()
    }
}

/// The dashboard's targets text: one target per line, `provider/model`,
/// then optionally a weight (0–100) and `@connectionId`, e.g.
/// `openai/gpt-4o 90`, and for a pipeline step `| its prompt`. Checked as
/// it is typed and again on save.
pub fn parse_targets(text: &str) -> Result<Vec<ComboTarget>, FieldError> {
    let bad = |n: usize, why: &str| FieldError::new("targets", format!("line {n}: {why}"));
    let mut targets = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let (line, prompt) = match line.split_once('|') {
            Some((target, prompt)) => (target, Some(prompt.trim().to_owned()).filter(|p| !p.is_empty())),
            None => (line, None),
        };
        let mut words = line.split_whitespace();
        let model = words.next().unwrap_or_default();
        if model.contains('/') && !model.split_once('/').is_some_and(|(p, m)| !p.is_empty() && !m.is_empty()) {
            return Err(bad(n, "start with provider/model or a combo's name, e.g. openai/gpt-4o 90"));
        }
        if model.is_empty() {
            return Err(bad(n, "start with provider/model or a combo's name, e.g. openai/gpt-4o 90"));
        }
        let mut target = ComboTarget { model: model.to_owned(), connection_id: None, weight: None, prompt };
        for word in words {
            if let Some(id) = word.strip_prefix('@').filter(|id| !id.is_empty()) {
                target.connection_id = Some(id.to_owned());
            } else {
                match word.parse::<u32>() {
                    Ok(w) if w <= MAX_WEIGHT => target.weight = Some(w),
                    _ => return Err(bad(n, &format!("{word:?} is neither a weight (0–{MAX_WEIGHT}) nor @connection"))),
                }
            }
        }
        targets.push(target);
    }
    if targets.is_empty() {
        return Err(FieldError::new("targets", "list at least one target, one provider/model per line"));
    }
    Ok(targets)
}

/// The targets as [`parse_targets`] reads them.
pub fn format_targets(targets: &[ComboTarget]) -> String {
    let line = |t: &ComboTarget| {
        let mut l = t.model.clone();
        if let Some(w) = t.weight {
            l.push_str(&format!(" {w}"));
        }
        if let Some(c) = &t.connection_id {
            l.push_str(&format!(" @{c}"));
        }
        if let Some(p) = &t.prompt {
            // One line per target: a prompt's line breaks become spaces.
            l.push_str(&format!(" | {}", p.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
        l
    };
    targets.iter().map(line).collect::<Vec<_>>().join("\n")
}

/// The strategy named `name` (as the API spells it).
pub fn parse_strategy(name: &str) -> Result<Strategy, FieldError> {
    Strategy::ALL
        .into_iter()
        .find(|s| s.as_str() == name)
        .ok_or_else(|| FieldError::new("strategy", format!("unknown strategy {name:?}")))
}

/// One target of a combo as it stands now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// `provider/model` (a nested combo's targets appear in its place).
    pub model: String,
    /// Whether it could be tried now.
    pub ready: bool,
    /// Why not, in words.
    pub reason: Option<String>,
    /// When the reason lapses, if a timer ends it.
    pub retry_after_ms: Option<u64>,
}

/// A combo as it stands now: its targets, and the one that served last.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComboStatus {
    pub name: String,
    pub targets: Vec<TargetStatus>,
    pub last_served: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ComboStatusList {
    pub combos: Vec<ComboStatus>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComboList {
    pub combos: Vec<Combo>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(m: &str) -> ComboTarget {
        ComboTarget { model: m.into(), connection_id: None, weight: None, prompt: None }
    }

    fn combo() -> Combo {
        Combo {
            name: "coding".into(),
            strategy: Strategy::Priority,
            targets: vec![target("openai/gpt-4o")],
            config: ComboConfig::default(),
        }
    }

    fn fields(c: Combo) -> Vec<String> {
        c.validate().unwrap_err().into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn combos_need_a_name_and_provider_model_targets() {
        let ok = combo();
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(fields(Combo { name: "a b".into(), ..ok.clone() }), ["name"]);
        assert_eq!(fields(Combo { targets: vec![], ..ok.clone() }), ["targets"]);
        assert_eq!(
            fields(Combo { targets: vec![target("a b"), target("openai/")], ..ok.clone() }),
            ["targets.0.model", "targets.1.model"]
        );
        let pinned_ref = ComboTarget { connection_id: Some("c1".into()), ..target("other-combo") };
        assert_eq!(fields(Combo { targets: vec![pinned_ref], ..ok.clone() }), ["targets.0.connectionId"]);
        assert_eq!(Combo { targets: vec![target("other-combo")], ..ok }.validate(), Ok(()), "a combo may name a combo");
        let unknown: Result<Combo, _> = serde_json::from_str(r#"{"name":"x","strategy":"fastest","targets":[]}"#);
        assert!(unknown.is_err(), "unknown strategies are refused");
    }

    #[test]
    fn weights_and_the_combo_timeout_are_bounded() {
        let heavy = ComboTarget { weight: Some(101), ..target("openai/gpt-4o") };
        assert_eq!(fields(Combo { targets: vec![heavy], ..combo() }), ["targets.0.weight"]);
        let config = ComboConfig { combo_timeout_ms: Some(MAX_COMBO_TIMEOUT_MS + 1), ..ComboConfig::default() };
        assert_eq!(fields(Combo { config, ..combo() }), ["config.comboTimeoutMs"]);
        let unknown: Result<Combo, _> =
            serde_json::from_str(r#"{"name":"x","strategy":"priority","targets":[],"config":{"hedging":true}}"#);
        assert!(unknown.is_err(), "config fields the engine does not read are refused");
    }

    #[test]
    fn strategy_fields_are_refused_for_other_strategies_and_bounded_for_their_own() {
        let config: ComboConfig = serde_json::from_value(serde_json::json!({
            "maxRetries": 11, "retryDelayMs": 1, "judgeModel": "openai/", "fusionTuning": {"minPanel": 0, "panelHardTimeoutMs": 0}
        }))
        .unwrap();
        let prompted = ComboTarget { prompt: Some("summarise".into()), ..target("openai/gpt-4o") };
        let priority = Combo { config: config.clone(), targets: vec![prompted.clone()], ..combo() };
        assert_eq!(
            fields(priority),
            [
                "targets.0.prompt",
                "config.maxRetries",
                "config.retryDelayMs",
                "config.judgeModel",
                "config.fusionTuning",
                "config.maxRetries",
                "config.judgeModel",
                "config.fusionTuning.minPanel",
                "config.fusionTuning.panelHardTimeoutMs"
            ]
        );
        let pipeline = Combo { strategy: Strategy::Pipeline, ..combo() };
        let ok = ComboConfig { max_retries: Some(10), retry_delay_ms: Some(0), ..ComboConfig::default() };
        assert_eq!(Combo { config: ok, targets: vec![prompted], ..pipeline.clone() }.validate(), Ok(()));
        let control = ComboTarget { prompt: Some("a\u{1b}b".into()), ..target("openai/gpt-4o") };
        assert_eq!(fields(Combo { targets: vec![control], ..pipeline }), ["targets.0.prompt"]);
        let fusion = Combo { strategy: Strategy::Fusion, ..combo() };
        let judge = ComboConfig { judge_model: Some("panel-judge".into()), ..ComboConfig::default() };
        assert_eq!(Combo { config: judge, ..fusion.clone() }.combo_refs().collect::<Vec<_>>(), ["panel-judge"]);
        let tuned = ComboConfig::default().fusion(3);
        assert_eq!((tuned.min_panel, tuned.max_panel, tuned.straggler_grace_ms), (2, 40, 8_000));
        assert_eq!(ComboConfig::default().fusion(1).min_panel, 1, "minPanel is at most the panel's size");
    }

    #[test]
    fn target_lines_read_and_write_the_same_targets() {
        let text = "openai/gpt-4o 90\n\ndeepseek/deepseek-chat 10 @conn-1\ngroq/llama";
        let targets = parse_targets(text).unwrap();
        assert_eq!(
            targets[1],
            ComboTarget {
                model: "deepseek/deepseek-chat".into(),
                connection_id: Some("conn-1".into()),
                weight: Some(10),
                prompt: None
            }
        );
        assert_eq!(targets[2].weight, None);
        assert_eq!(parse_targets(&format_targets(&targets)).unwrap(), targets);
        let steps = parse_targets("openai/gpt-4o | Summarise: be brief\ngroq/llama|").unwrap();
        assert_eq!(steps[0].prompt.as_deref(), Some("Summarise: be brief"));
        assert_eq!(steps[1].prompt, None, "an empty prompt is none");
        assert_eq!(parse_targets(&format_targets(&steps)).unwrap(), steps);
        let err = |t: &str| parse_targets(t).unwrap_err().message;
        assert_eq!(
            err("openai/gpt-4o\nopenai/"),
            "line 2: start with provider/model or a combo's name, e.g. openai/gpt-4o 90"
        );
        assert_eq!(parse_targets("backup 10").unwrap()[0].combo_ref(), Some("backup"));
        assert!(err("openai/gpt-4o 101").contains("neither a weight"));
        assert!(err(" \n").contains("at least one target"));
        assert!(err(" | a prompt alone").contains("start with provider/model"));
        assert_eq!(parse_strategy("round-robin"), Ok(Strategy::RoundRobin));
        assert_eq!(parse_strategy("fastest").unwrap_err().field, "strategy");
    }

    #[test]
    fn the_dashboard_form_gives_the_config_of_its_strategy_only_and_keeps_what_it_cannot_edit() {
        let form = ConfigForm {
            combo_timeout_ms: " 500 ".into(),
            judge_model: "openai/gpt-4o".into(),
            max_retries: "3".into(),
            retry_delay_ms: String::new(),
        };
        let kept =
            ComboConfig { target_timeout_ms: Some(5_000), handoff_threshold: Some(0.9), ..ComboConfig::default() };
        let priority = form.config(Strategy::Priority, kept.clone()).unwrap();
        assert_eq!(
            priority,
            ComboConfig { combo_timeout_ms: Some(500), target_timeout_ms: Some(5_000), ..ComboConfig::default() },
            "the judge and the retries belong to other strategies; so does the kept handoff threshold"
        );
        assert_eq!(form.config(Strategy::Pipeline, kept.clone()).unwrap().max_retries, Some(3));
        assert_eq!(form.config(Strategy::Fusion, kept).unwrap().judge_model.as_deref(), Some("openai/gpt-4o"));
        let bad = ConfigForm { combo_timeout_ms: "soon".into(), max_retries: "11".into(), ..form };
        let fields =
            |s| bad.config(s, ComboConfig::default()).unwrap_err().into_iter().map(|e| e.field).collect::<Vec<_>>();
        assert_eq!(fields(Strategy::Pipeline), ["config.comboTimeoutMs"], "unreadable numbers first");
        let bounded = ConfigForm { combo_timeout_ms: String::new(), ..bad.clone() };
        assert_eq!(
            bounded.config(Strategy::Pipeline, ComboConfig::default()).unwrap_err()[0].message,
            "must be between 0 and 10"
        );
    }

    #[test]
    fn every_strategy_round_trips_by_its_name() {
        for s in Strategy::ALL {
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
            assert_eq!(serde_json::from_value::<Strategy>(json).unwrap(), s);
            assert!(!s.explain().is_empty());
        }
    }
}
