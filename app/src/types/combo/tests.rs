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
    let kept = ComboConfig { target_timeout_ms: Some(5_000), handoff_threshold: Some(0.9), ..ComboConfig::default() };
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
fn the_dashboard_form_reads_durations_in_natural_units_and_bounds_them_so() {
    let form = ConfigForm { combo_timeout_ms: "2 min".into(), retry_delay_ms: "1.5 s".into(), ..ConfigForm::default() };
    let config = form.config(Strategy::Pipeline, ComboConfig::default()).unwrap();
    assert_eq!((config.combo_timeout_ms, config.retry_delay_ms), (Some(120_000), Some(1_500)));
    let message =
        |form: ConfigForm| form.config(Strategy::Pipeline, ComboConfig::default()).unwrap_err()[0].message.clone();
    assert_eq!(
        message(ConfigForm { combo_timeout_ms: "2 h".into(), ..ConfigForm::default() }),
        "must be between 0 and 1 h"
    );
    assert_eq!(
        message(ConfigForm { retry_delay_ms: "2 min".into(), ..ConfigForm::default() }),
        "must be between 0 and 1 min"
    );
    assert!(message(ConfigForm { combo_timeout_ms: "soon".into(), ..ConfigForm::default() }).contains("30 s"));
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

#[test]
fn the_groups_offer_every_strategy_once() {
    let mut offered: Vec<&str> = Strategy::GROUPS.iter().flat_map(|(_, s)| s.iter().map(|s| s.as_str())).collect();
    let mut all: Vec<&str> = Strategy::ALL.iter().map(|s| s.as_str()).collect();
    offered.sort_unstable();
    all.sort_unstable();
    assert_eq!(offered, all);
    assert_eq!(Strategy::GROUPS[0].1[0], Strategy::RECOMMENDED);
}
