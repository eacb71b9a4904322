//! The Get started page: how far the operator is (a connection, a passed
//! test, a key) and the copy-ready setup of each agent for this gateway.

use serde::{Deserialize, Serialize};

/// What the Get started page needs to know.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetStarted {
    pub connections: usize,
    /// Connections whose last test passed.
    pub tested: usize,
    pub keys: usize,
    /// This gateway as the browser reached it (`http://host:port`).
    pub base_url: String,
    /// A `provider/model` the snippets can name.
    pub example_model: String,
}

impl GetStarted {
    /// Both a connection and a key exist: the dashboard opens on Health.
    pub fn is_set_up(&self) -> bool {
        self.connections > 0 && self.keys > 0
    }
}

/// One agent's setup, ready to paste.
#[derive(Clone, Debug, PartialEq)]
pub struct Snippet {
    pub agent: &'static str,
    /// Where it goes ("shell", "~/.codex/config.toml", …).
    pub place: &'static str,
    pub text: String,
}

/// The setup of every agent the README covers, for `base_url`, `key` and
/// `model`.
pub fn snippets(base_url: &str, key: &str, model: &str) -> Vec<Snippet> {
    let v1 = format!("{base_url}/v1");
    vec![
        Snippet {
            agent: "Claude Code",
            place: "shell",
            text: format!("ANTHROPIC_BASE_URL={base_url} ANTHROPIC_AUTH_TOKEN={key} claude --model {model}"),
        },
        Snippet {
            agent: "Codex CLI",
            place: "~/.codex/config.toml (then: export OMNIROUTE_API_KEY=…)",
            text: format!(
                "model = \"{model}\"\nmodel_provider = \"omniroute\"\n\n[model_providers.omniroute]\nname = \"OmniRoute\"\n\
                 base_url = \"{v1}\"\nenv_key = \"OMNIROUTE_API_KEY\"\nwire_api = \"responses\"\n\n\
                 # export OMNIROUTE_API_KEY={key}"
            ),
        },
        Snippet {
            agent: "opencode",
            place: "opencode.json",
            text: format!(
                "{{\n  \"provider\": {{\n    \"omniroute\": {{\n      \"npm\": \"@ai-sdk/openai-compatible\",\n      \
                 \"options\": {{ \"baseURL\": \"{v1}\", \"apiKey\": \"{key}\" }},\n      \
                 \"models\": {{ \"{model}\": {{}} }}\n    }}\n  }}\n}}"
            ),
        },
        Snippet {
            agent: "aider",
            place: "shell",
            text: format!("aider --openai-api-base {v1} --openai-api-key {key} --model openai/{model}"),
        },
        Snippet {
            agent: "OpenAI SDK",
            place: "Python",
            text: format!(
                "from openai import OpenAI\n\nclient = OpenAI(base_url=\"{v1}\", api_key=\"{key}\")\n\
                 reply = client.chat.completions.create(model=\"{model}\", messages=[{{\"role\": \"user\", \"content\": \"Hello\"}}])\n\
                 print(reply.choices[0].message.content)"
            ),
        },
        Snippet {
            agent: "Anthropic SDK",
            place: "Python",
            text: format!(
                "import anthropic\n\nclient = anthropic.Anthropic(base_url=\"{base_url}\", api_key=\"{key}\")\n\
                 reply = client.messages.create(model=\"{model}\", max_tokens=512, messages=[{{\"role\": \"user\", \"content\": \"Hello\"}}])\n\
                 print(reply.content[0].text)"
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_snippet_names_this_gateway_the_key_and_the_model() {
        let all = snippets("http://gw.lan:20128", "omr-abc", "openai/gpt-4o-mini");
        assert_eq!(all.len(), 6);
        for s in &all {
            assert!(s.text.contains("http://gw.lan:20128"), "{}", s.agent);
            assert!(s.text.contains("omr-abc"), "{}", s.agent);
            assert!(s.text.contains("openai/gpt-4o-mini"), "{}", s.agent);
        }
        let codex = all.iter().find(|s| s.agent == "Codex CLI").map(|s| s.text.as_str()).unwrap_or_default();
        assert!(codex.contains("base_url = \"http://gw.lan:20128/v1\""), "{codex}");
        let claude = all.iter().find(|s| s.agent == "Claude Code").map(|s| s.text.as_str()).unwrap_or_default();
        assert!(claude.starts_with("ANTHROPIC_BASE_URL=http://gw.lan:20128 "), "Claude Code takes the root URL");
    }
}
