//! A divergence: one way the replayed journal differs from the recording, with the lines of
//! both, the field, and the turn it belongs to.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::turns::TurnRef;

/// What kind of difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DivergenceKind {
    /// Both journals have the event, and a field of it differs.
    Field,
    /// The replay wrote another type of event than the recording has there.
    EventType,
    /// The replay ended before the recording does.
    Missing,
    /// The replay wrote more than the recording has.
    Extra,
    /// The recording calls a tool this engine does not have (the replay did not run).
    ToolMissing,
    /// The replay asked for an LLM call the recording has no answer for.
    OutOfAnswers,
    /// The replay compacted or truncated the history otherwise than the recording (behaviour
    /// profile; the strict one compares those events in place).
    History,
}

/// One line of a journal, as shown in a divergence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineRef {
    /// The journal.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: u64,
    /// The line as written.
    pub text: String,
}

/// One difference between the recording and its replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    /// What kind of difference.
    pub kind: DivergenceKind,
    /// Where in the conversation (on the recording's side when it has the event).
    pub turn: TurnRef,
    /// The event's type (the recording's, when it has one there).
    pub event_type: String,
    /// The field that differs, e.g. `data.result.content` (`type` for [`DivergenceKind::EventType`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The recording's line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<LineRef>,
    /// The replay's line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<LineRef>,
    /// The field's recorded value (after normalisation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_value: Option<Value>,
    /// The field's replayed value (after normalisation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_value: Option<Value>,
    /// The difference in one sentence.
    pub message: String,
}

/// Longest excerpt of a line or value shown in text output.
const SHOWN_CHARS: usize = 300;

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "at {}: {}", self.turn, self.message)?;
        if let Some(field) = &self.field {
            writeln!(f, "  field:    {field}")?;
        }
        for (side, line) in [("recorded", &self.recorded), ("replayed", &self.replayed)] {
            match line {
                Some(l) => {
                    writeln!(f, "  {side}: {}:{}", l.path.display(), l.line)?;
                    writeln!(f, "    {}", excerpt(&l.text))?;
                }
                None if self.kind != DivergenceKind::ToolMissing => {
                    writeln!(f, "  {side}: (no event here)")?;
                }
                None => {}
            }
        }
        if self.kind == DivergenceKind::Field {
            for (side, value) in [
                ("recorded", &self.recorded_value),
                ("replayed", &self.replayed_value),
            ] {
                let shown = value
                    .as_ref()
                    .map_or_else(|| "(absent)".to_owned(), |v| excerpt(&v.to_string()));
                writeln!(f, "  {side} value: {shown}")?;
            }
        }
        Ok(())
    }
}

/// At most [`SHOWN_CHARS`] characters of `text`, with `…` when cut.
pub fn excerpt(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(SHOWN_CHARS).collect();
        format!("{cut}…")
    }
}
