//! Aliases (SPEC §A): another name for a `provider/model` or a combo,
//! resolved before routing — e.g. `fast` → `groq/llama-3.3-70b`.

use serde::{Deserialize, Serialize};

use super::validation::{Errors, FieldError};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Alias {
    /// The name clients send.
    pub alias: String,
    /// What it stands for: `provider/model`, or a combo name.
    pub model: String,
}

impl Alias {
    /// Field checks that need no catalog; the server adds what needs one
    /// (a known provider or combo, no shadowing).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut e = Errors::default();
        e.model_name("alias", &self.alias, 64);
        e.text("model", &self.model, 200);
        if self.model.contains(char::is_whitespace) {
            e.push("model", "must not contain spaces");
        }
        if self.alias == self.model {
            e.push("model", "must differ from the alias");
        }
        e.into_result()
    }
}

/// `DELETE /api/aliases`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AliasName {
    pub alias: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliasList {
    pub aliases: Vec<Alias>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_is_a_plain_name_for_something_else() {
        let ok = Alias { alias: "fast".into(), model: "groq/llama-3.3-70b".into() };
        assert_eq!(ok.validate(), Ok(()));
        let fields = |a: Alias| a.validate().unwrap_err().into_iter().map(|e| e.field).collect::<Vec<_>>();
        assert_eq!(fields(Alias { alias: "a/b".into(), ..ok.clone() }), ["alias"]);
        assert_eq!(fields(Alias { model: "x y".into(), ..ok.clone() }), ["model"]);
        assert_eq!(fields(Alias { alias: "same".into(), model: "same".into() }), ["model"]);
    }
}
