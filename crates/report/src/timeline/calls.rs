//! Tool calls inside their turn, with the permission answers and hook runs that belong to them.

use serde::Deserialize;
use turnstile_journal::payload::{
    HookEnd, PermissionCompleted, PermissionRequested, ToolExecutionComplete, ToolExecutionStart,
};

use super::caps::{ARGUMENTS_CAP, MAX_CALLS_PER_TURN, NOTE_CAP, TEXT_CAP};
use super::state::{At, Timeline, span};
use crate::items::{Clipped, Item, MarkKind, Note, NoteKind, Outcome, ToolCall};

/// Permission requests remembered at most (a damaged journal could leave many unanswered).
pub(super) const MAX_ASKS: usize = 4096;

/// The parts of a permission answer the report shows (the schema's union is wide and grows).
#[derive(Debug, Default, Deserialize)]
struct PermissionAnswer {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<String>,
}

/// The parts of a permission request the report shows.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionAsk {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    full_command_text: Option<String>,
    #[serde(default)]
    file_name: Option<String>,
    #[serde(default)]
    intention: Option<String>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

impl Timeline {
    pub(super) fn on_tool_start(
        &mut self,
        start: &ToolExecutionStart,
        at: &At,
        out: &mut Vec<Item>,
    ) {
        let ms = at.ms;
        let Some(open) = self.open_turn_mut(&at.lane) else {
            out.push(at.mark(
                MarkKind::Info,
                &format!(
                    "tool call {} ({}) outside a turn",
                    start.tool_call_id, start.tool_name
                ),
            ));
            return;
        };
        open.first_tool_ms = Some(open.first_tool_ms.map_or(ms, |f| f.min(ms)));
        open.last_tool_ms = Some(open.last_tool_ms.map_or(ms, |l| l.max(ms)));
        if open.turn.calls.len() >= MAX_CALLS_PER_TURN {
            open.turn.calls_left_out += 1;
            return;
        }
        let arguments = start
            .arguments
            .as_ref()
            .map(|a| a.to_string())
            .unwrap_or_default();
        open.turn.calls.push(ToolCall {
            id: start.tool_call_id.clone(),
            name: start.tool_name.clone(),
            arguments: Clipped::new(&arguments, ARGUMENTS_CAP),
            ..ToolCall::default()
        });
        open.call_start_ms.push(ms);
    }

    pub(super) fn on_tool_complete(
        &mut self,
        done: &ToolExecutionComplete,
        at: &At,
        out: &mut Vec<Item>,
    ) {
        let ms = at.ms;
        let (text, code) = match (&done.result, &done.error) {
            (Some(r), _) if done.success => (r.content.as_str(), None),
            (_, Some(e)) => (e.message.as_str(), e.code.clone()),
            (Some(r), None) => (r.content.as_str(), None),
            (None, None) => ("", None),
        };
        let outcome = Outcome {
            success: done.success,
            text: Clipped::new(text, TEXT_CAP),
            code,
        };
        let Some(open) = self.open_turn_mut(&at.lane) else {
            out.push(at.mark(
                MarkKind::Info,
                &format!("tool result for {} outside a turn", done.tool_call_id),
            ));
            return;
        };
        open.last_tool_ms = Some(open.last_tool_ms.map_or(ms, |l| l.max(ms)));
        if let Some(i) = open
            .turn
            .calls
            .iter()
            .position(|c| c.id == done.tool_call_id)
        {
            let call = &mut open.turn.calls[i];
            call.duration_ms = open.call_start_ms.get(i).map(|&s| span(s, ms));
            call.outcome = Some(outcome);
        }
    }

    /// Remembers what was asked until its answer arrives (the answer's note names it).
    pub(super) fn on_permission_requested(&mut self, ask: &PermissionRequested) {
        let parsed: PermissionAsk =
            serde_json::from_value(ask.permission_request.clone()).unwrap_or_default();
        let what = parsed
            .full_command_text
            .or(parsed.file_name)
            .or(parsed.intention)
            .unwrap_or_default();
        let summary = format!("{} {}", parsed.kind, what);
        if self.asks.len() < MAX_ASKS {
            self.asks
                .insert(ask.request_id.clone(), (parsed.tool_call_id, summary));
        }
    }

    pub(super) fn on_permission_completed(
        &mut self,
        done: PermissionCompleted,
        at: At,
        out: &mut Vec<Item>,
    ) {
        let answer: PermissionAnswer =
            serde_json::from_value(done.result.clone()).unwrap_or_default();
        let (call_id, asked) = self
            .asks
            .remove(&done.request_id)
            .unwrap_or((None, "permission".to_owned()));
        let mut text = format!("{asked}: {}", answer.kind);
        if !answer.rules.is_empty() {
            text.push_str(&format!(" ({})", answer.rules.join(", ")));
        }
        if let Some(source) = &done.decision_source {
            text.push_str(&format!(" by {source}"));
        }
        let note = Note {
            kind: NoteKind::Permission,
            line: at.line,
            text: Clipped::new(&text, NOTE_CAP),
            bad: answer.kind.starts_with("denied") || answer.kind == "cancelled",
        };
        self.call_note(at.lane, done.tool_call_id.or(call_id), note, out);
    }

    pub(super) fn on_hook_end(&mut self, end: HookEnd, at: At, out: &mut Vec<Item>) {
        let mut text = format!(
            "{} hook {}",
            end.hook_type,
            if end.success { "ran" } else { "failed" }
        );
        if let Some(e) = &end.error {
            text.push_str(&format!(": {}", e.message));
        } else if let Some(output) = &end.output {
            text.push_str(&format!(": {output}"));
        }
        let note = Note {
            kind: NoteKind::Hook,
            line: at.line,
            text: Clipped::new(&text, NOTE_CAP),
            bad: !end.success,
        };
        self.call_note(at.lane, end.parent_tool_call_id, note, out);
    }
}
