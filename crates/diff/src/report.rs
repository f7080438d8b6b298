//! What `turnstile diff` says: the two journals, what was compared, and the first divergence
//! (none when the sessions are the same). Its JSON form is documented in `docs/diff.md`.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::profile::{Profile, Runtime};
use crate::side::{Place, StepKind};

/// Longest excerpt of a value shown in the text form (the JSON form has it whole).
pub const SHOWN_CHARS: usize = 400;

/// One of the two journals.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    /// Its path.
    pub path: PathBuf,
    /// Which runtime wrote it.
    pub runtime: Runtime,
}

/// How much was compared, up to the divergence or to the end.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compared {
    /// Steps of A compared (requests, prompts, answers, tool calls and results, events).
    pub steps: u64,
    /// Main-agent LLM calls of A compared.
    pub llm_calls: u64,
    /// Tool calls of A compared.
    pub tool_calls: u64,
}

/// What kind of divergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DivergenceKind {
    /// The conversation an LLM call sent differs (a message, or their number).
    Request,
    /// A user prompt differs.
    Prompt,
    /// The model's answer differs (its text or its tool requests).
    Answer,
    /// A tool call's name or arguments differ.
    ToolCall,
    /// A tool call's result differs.
    ToolResult,
    /// Another event differs in a field.
    Event,
    /// The journals have different steps there (an event the other lacks, another type).
    Step,
    /// A ends there; B goes on.
    AEnds,
    /// B ends there; A goes on.
    BEnds,
}

impl DivergenceKind {
    /// The kind for two steps of the same kind that differ.
    pub fn of(kind: StepKind) -> DivergenceKind {
        match kind {
            StepKind::Request => DivergenceKind::Request,
            StepKind::Prompt => DivergenceKind::Prompt,
            StepKind::Answer => DivergenceKind::Answer,
            StepKind::ToolCall => DivergenceKind::ToolCall,
            StepKind::ToolResult => DivergenceKind::ToolResult,
            StepKind::Event => DivergenceKind::Event,
        }
    }
}

/// One side of a divergence.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct At {
    /// Where the step is in that journal.
    #[serde(flatten)]
    pub place: Place,
    /// The step's event type (`assistant.turn_start` for a request).
    pub event_type: String,
    /// What the step is.
    pub step: StepKind,
    /// The tool, for a tool call or result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The value at [`Divergence::field`] after normalisation (absent: the field is not there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// The first point where two sessions part.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    /// What differs.
    pub kind: DivergenceKind,
    /// The field that differs, as a path into the compared step (`data.result.content`,
    /// `messages[3].content` for a request); none when the steps themselves differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// A's step (none when A has ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<At>,
    /// B's step (none when B has ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<At>,
    /// The difference in one sentence.
    pub message: String,
}

/// The outcome of comparing two journals.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The first journal.
    pub a: Journal,
    /// The second journal.
    pub b: Journal,
    /// What was compared.
    pub profile: Profile,
    /// Whether no divergence was found.
    pub same: bool,
    /// How far the comparison went.
    pub compared: Compared,
    /// The first divergence (none when `same`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, j) in [("A", &self.a), ("B", &self.b)] {
            writeln!(f, "{name}: {} ({})", j.path.display(), j.runtime.name())?;
        }
        let c = &self.compared;
        let Some(d) = &self.divergence else {
            return writeln!(
                f,
                "same: {} LLM call{}, {} tool call{}, {} steps compared ({} profile)",
                c.llm_calls,
                plural(c.llm_calls),
                c.tool_calls,
                plural(c.tool_calls),
                c.steps,
                self.profile,
            );
        };
        write!(f, "{d}")?;
        writeln!(
            f,
            "{} step{} the same before it ({} profile)",
            c.steps,
            plural(c.steps),
            self.profile
        )
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "first divergence: {}", self.message)?;
        if let Some(field) = &self.field {
            writeln!(f, "  field: {field}")?;
        }
        for (name, at) in [("A", &self.a), ("B", &self.b)] {
            match at {
                Some(at) => {
                    writeln!(f, "  {name} line {}: {}", at.place.line, describe(at))?;
                    if self.field.is_some() {
                        let shown = at
                            .value
                            .as_ref()
                            .map_or_else(|| "(absent)".to_owned(), |v| excerpt(&v.to_string()));
                        writeln!(f, "    {shown}")?;
                    }
                }
                None => writeln!(f, "  {name}: (ended)")?,
            }
        }
        Ok(())
    }
}

/// A step in words: `request of LLM call 3`, `result of tool call 4 (bash)`, `session.info`.
pub fn describe(at: &At) -> String {
    let tool = at
        .tool
        .as_deref()
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let agent = at
        .place
        .agent
        .as_deref()
        .map(|a| format!(" of sub-agent {a}"))
        .unwrap_or_default();
    let call = at.place.llm_call;
    match at.step {
        StepKind::Request => format!("request of LLM call {call}"),
        StepKind::Prompt => format!("prompt {}", at.place.prompt),
        StepKind::Answer => format!("answer{agent} after LLM call {call}"),
        StepKind::ToolCall => format!("tool call {}{tool}{agent}", at.place.tool_call),
        StepKind::ToolResult => format!("result of tool call {}{tool}{agent}", at.place.tool_call),
        StepKind::Event if at.event_type == "assistant.turn_start" && at.place.agent.is_none() => {
            format!("start of LLM call {call}")
        }
        StepKind::Event => format!("{}{agent} after LLM call {call}", at.event_type),
    }
}

/// At most [`SHOWN_CHARS`] characters of `text`, with `…` when cut.
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
