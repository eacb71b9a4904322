//! Combos (SPEC §R8): a named virtual model whose targets are tried in the
//! strategy's order, so one request can fail over across providers.

use serde::{Deserialize, Serialize};

use super::validation::{Errors, FieldError};

/// Most targets one combo may list.
pub const MAX_COMBO_TARGETS: usize = 50;

/// How a combo orders its targets. Only `priority` (as listed) exists so
/// far; the other strategies of the SPEC are refused by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    Priority,
}

/// One target: `provider/model`, optionally pinned to one connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComboTarget {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Combo {
    /// The model name clients send.
    pub name: String,
    pub strategy: Strategy,
    pub targets: Vec<ComboTarget>,
}

impl Combo {
    /// Field checks that need no catalog; the server adds the provider check.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        e.model_name("name", &self.name, 64);
        if self.targets.is_empty() || self.targets.len() > MAX_COMBO_TARGETS {
            e.push("targets", format!("must list 1 to {MAX_COMBO_TARGETS} targets"));
        }
        for (i, t) in self.targets.iter().enumerate() {
            let ok = t.model.split_once('/').is_some_and(|(p, m)| !p.is_empty() && !m.is_empty());
            if !ok {
                e.push(&format!("targets.{i}.model"), "must be provider/model");
            }
        }
        e.into_result()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComboList {
    pub combos: Vec<Combo>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combos_need_a_name_and_provider_model_targets() {
        let target = |m: &str| ComboTarget { model: m.into(), connection_id: None, weight: None };
        let ok = Combo { name: "coding".into(), strategy: Strategy::Priority, targets: vec![target("openai/gpt-4o")] };
        assert_eq!(ok.validate(), Ok(()));
        let fields = |c: Combo| c.validate().unwrap_err().into_iter().map(|e| e.field).collect::<Vec<_>>();
        assert_eq!(fields(Combo { name: "a b".into(), ..ok.clone() }), ["name"]);
        assert_eq!(fields(Combo { targets: vec![], ..ok.clone() }), ["targets"]);
        assert_eq!(
            fields(Combo { targets: vec![target("gpt-4o"), target("openai/")], ..ok }),
            ["targets.0.model", "targets.1.model"]
        );
        let unknown: Result<Combo, _> = serde_json::from_str(r#"{"name":"x","strategy":"weighted","targets":[]}"#);
        assert!(unknown.is_err(), "strategies not built yet are refused");
    }
}
