//! Combos (SPEC §R8): a named virtual model whose targets are tried in the
//! strategy's order, so one request can fail over across providers.

use serde::{Deserialize, Serialize};

use super::validation::{Errors, FieldError};

mod config;
#[cfg(test)]
mod tests;

pub use config::{ComboConfig, ConfigForm, FusionSettings, FusionTuning};

/// Most targets one combo may list.
pub const MAX_COMBO_TARGETS: usize = 50;
/// How deep combos may nest (a combo naming a combo naming a combo).
pub const MAX_COMBO_DEPTH: usize = 3;

/// Most a target's weight may be.
pub const MAX_WEIGHT: u32 = 100;
/// The longest `comboTimeoutMs` (1 h).
pub const MAX_COMBO_TIMEOUT_MS: u64 = 3_600_000;

/// How a combo orders its targets, or for `fusion` and `pipeline` runs
/// them (SPEC §R8: all twenty).
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

    /// The strategies by what they are for, as the dashboard offers them.
    pub const GROUPS: [(&'static str, &'static [Self]); 4] = [
        ("Simple order", &[Self::Priority, Self::FillFirst, Self::Lkgp, Self::CostOptimized, Self::ContextOptimized]),
        (
            "Spread load",
            &[
                Self::Weighted,
                Self::RoundRobin,
                Self::Random,
                Self::StrictRandom,
                Self::LeastUsed,
                Self::P2c,
                Self::Auto,
            ],
        ),
        (
            "Use quota well",
            &[
                Self::ResetWindow,
                Self::ResetAware,
                Self::Headroom,
                Self::QuotaWeighted,
                Self::CacheOptimized,
                Self::ContextRelay,
            ],
        ),
        ("Multi-model", &[Self::Fusion, Self::Pipeline]),
    ];

    /// What a new combo starts with: the order you list.
    pub const RECOMMENDED: Self = Self::Priority;

    /// Whether a request to such a combo makes several calls (fusion's
    /// panel and judge, pipeline's steps) instead of one attempt loop.
    pub fn is_multi_call(self) -> bool {
        matches!(self, Self::Fusion | Self::Pipeline)
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
                "Tries every account of each target, the one whose quota window renews soonest first (a subscription's plan windows, an API key's rate-limit headers)."
            }
            Self::ResetAware => {
                "Tries every account of each target. On subscriptions it spends first a nearly used account that renews soon, saving one whose week must last; on API keys, the one with the most quota left."
            }
            Self::Headroom => {
                "Tries every account of each target, the one furthest from its rate limit first; accounts not yet seen count as untouched."
            }
            Self::QuotaWeighted => {
                "Tries every account of each target, leading with one drawn in proportion to its quota left and its requests in flight."
            }
            Self::CacheOptimized => {
                "Tries every account of each target; each conversation leads with the same one, so its prompt cache stays warm, unless that subscription is busy with other sessions. Without a session, as listed."
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
