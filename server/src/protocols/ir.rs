//! The one internal representation every protocol translates through
//! (ARCHITECTURE.md §4): a request, a complete response, and the events of
//! a streamed response. It holds what the four protocols share — system
//! prompt, turns of text, images, tool definitions, tool calls and their
//! results, reasoning, stop reason, usage — so that each protocol needs
//! only a reader and a writer for it, not one translator per pair.

use serde_json::Value;

/// Who spoke a turn. Tool results travel in user turns (as Anthropic and
/// Gemini model them); OpenAI's `tool` role maps onto that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ImageSource {
    Url(String),
    Base64 { media_type: String, data: String },
}

/// One piece of a turn.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(String),
    Image(ImageSource),
    /// A tool call; `arguments` is the JSON text of the arguments object.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    ToolResult {
        call_id: String,
        content: Vec<Part>,
        is_error: bool,
    },
    /// Model reasoning ("thinking"); `signature` lets Anthropic verify it
    /// when it is sent back.
    Reasoning {
        text: String,
        signature: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ToolChoice {
    Auto,
    None,
    /// Some tool must be called.
    Required,
    Named(String),
}

/// A chat request, whatever protocol it came in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    pub model: String,
    pub system: Vec<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<Tool>,
    pub tool_choice: Option<ToolChoice>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub stop: Vec<String>,
    pub stream: bool,
    /// Reasoning budget in tokens (Anthropic `thinking.budget_tokens`).
    pub reasoning_budget: Option<u64>,
    /// Reasoning effort (`low`/`medium`/`high`; OpenAI and Responses).
    pub reasoning_effort: Option<String>,
    pub parallel_tool_calls: Option<bool>,
}

impl Request {
    /// Appends to the last turn when it has the same role (consecutive
    /// tool results or calls become one turn, as every protocol's strict
    /// alternation wants), else starts a new turn.
    pub fn push(&mut self, role: Role, parts: Vec<Part>) {
        match self.messages.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => self.messages.push(Message { role, parts }),
        }
    }
}

/// Characters per token of the local estimate (English text and JSON
/// average about four).
const CHARS_PER_TOKEN: usize = 4;

impl Request {
    /// A local estimate of the input tokens (`count_tokens` answers it
    /// without an upstream call): every character the model would read —
    /// system prompt, turns, tool calls and results, tool definitions —
    /// at four per token; each image counts as a typical ~1,600 tokens.
    pub fn estimated_input_tokens(&self) -> u64 {
        fn part_chars(p: &Part) -> usize {
            match p {
                Part::Text(t) => t.chars().count(),
                Part::Image(_) => 1_600 * CHARS_PER_TOKEN,
                Part::ToolCall { name, arguments, .. } => name.len() + arguments.chars().count(),
                Part::ToolResult { content, .. } => content.iter().map(part_chars).sum(),
                Part::Reasoning { text, .. } => text.chars().count(),
            }
        }
        let system: usize = self.system.iter().map(|s| s.chars().count()).sum();
        let turns: usize = self.messages.iter().flat_map(|m| &m.parts).map(part_chars).sum();
        let tools: usize = self
            .tools
            .iter()
            .map(|t| {
                t.name.len() + t.description.as_ref().map_or(0, |d| d.chars().count()) + t.parameters.to_string().len()
            })
            .sum();
        u64::try_from((system + turns + tools).div_ceil(CHARS_PER_TOKEN)).unwrap_or(u64::MAX)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StopReason {
    #[default]
    EndTurn,
    MaxTokens,
    ToolUse,
    StopSequence,
    ContentFilter,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_tokens: Option<u64>,
}

/// A complete (non-streamed) answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Response {
    pub id: String,
    pub model: String,
    /// Text, reasoning and tool calls, in order.
    pub parts: Vec<Part>,
    pub stop: StopReason,
    pub usage: Usage,
}

/// One step of a streamed answer. Writers keep whatever state their
/// protocol needs (open blocks, indices) to turn these into frames.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Start {
        id: String,
        model: String,
    },
    Text(String),
    Reasoning(String),
    ReasoningSignature(String),
    /// A tool call begins; `index` counts the calls of this answer.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        delta: String,
    },
    /// Token counts as far as known (may come more than once).
    Usage(Usage),
    Stop(StopReason),
}

/// An upstream stream reported a failure mid-way (an `error` event,
/// `response.failed`): the client's stream must end with an error.
#[derive(Debug, PartialEq, Eq)]
pub struct StreamFault(pub String);
