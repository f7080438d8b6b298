//! Journal records into timeline [`Item`]s, one record at a time.
//!
//! A turn is held open while its events arrive and handed out when it ends, so memory follows
//! the open turns (one per agent, capped), never the journal; every text is clipped as it is
//! read. Marks are handed out where they happen. This file routes each event; `state.rs` holds
//! the builder's state every step shares, `caps.rs` the bounds on what is kept, `header.rs`
//! what the header shows, `facts.rs` the session's start, resume and shutdown, `turns.rs` opens
//! and closes turns, `calls.rs` nests tool calls with their permissions and hooks, `agents.rs`
//! names the sub-agents.

mod agents;
mod calls;
mod caps;
mod facts;
mod header;
mod state;
#[cfg(test)]
mod tests;
mod turns;

use turnstile_journal::payload::{self, TypedEvent};
use turnstile_journal::{Event, ReadError, Record};

use crate::items::{Clipped, Item, Lane, Mark, MarkKind, Note, NoteKind};
pub use caps::{
    ARGUMENTS_CAP, MAX_AGENT_NAMES, MAX_CALLS_PER_TURN, MAX_LANES, MAX_MODELS, MAX_NOTES, NAME_CAP,
    NOTE_CAP, OTHER_AGENTS, TEXT_CAP,
};
pub use header::{AgentName, ModelTokens, Requests, SessionFacts, Usage};
pub use state::Timeline;
use state::{At, OpenTurn, push_note};
use turns::close;

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the header shows, as far as read.
    pub fn facts(&self) -> &SessionFacts {
        &self.facts
    }

    /// Folds one result of the journal reader into the timeline; finished items go to `out`.
    pub fn push(&mut self, record: Result<Record, ReadError>, out: &mut Vec<Item>) {
        match record {
            Ok(record) => self.event(record.line, &record.event, out),
            Err(e) => out.push(Item::Mark(Mark {
                kind: if matches!(e, ReadError::Oversized { .. }) {
                    MarkKind::Oversized
                } else {
                    MarkKind::Unreadable
                },
                line: e.line().unwrap_or(0),
                lane: None,
                text: Clipped::new(&e.to_string(), NOTE_CAP),
            })),
        }
    }

    /// Hands out the turns still open at the end of the journal, marked as not ended.
    pub fn finish(&mut self, out: &mut Vec<Item>) {
        let mut open: Vec<OpenTurn> = self.open.drain().map(|(_, t)| t).collect();
        open.sort_by_key(|t| t.turn.ordinal);
        out.extend(open.into_iter().map(|t| Item::Turn(close(t, None))));
    }

    fn lane_of(&mut self, event: &Event) -> Lane {
        let id = event.agent_id.as_ref()?;
        if self.lanes.iter().any(|l| l == id) {
            return Some(id.clone());
        }
        if self.lanes.len() < MAX_LANES {
            self.lanes.push(id.clone());
            return Some(id.clone());
        }
        Some(OTHER_AGENTS.to_owned())
    }

    fn event(&mut self, line: u64, event: &Event, out: &mut Vec<Item>) {
        let lane = self.lane_of(event);
        let ms = event.timestamp.millis();
        self.facts.last_time = Some(event.timestamp.to_text());
        if let Some(open) = self.open.get_mut(&lane) {
            open.last_ms = open.last_ms.max(ms);
        }
        let typed = match payload::typed(event) {
            Ok(t) => t,
            Err(e) => {
                out.push(Item::Mark(Mark {
                    kind: MarkKind::Unreadable,
                    line,
                    lane,
                    text: Clipped::new(&format!("line {line}: {e}"), NOTE_CAP),
                }));
                return;
            }
        };
        let at = At { line, lane, ms };
        match typed {
            TypedEvent::SessionStart(start) => self.on_start(&start, &at, out),
            TypedEvent::SessionResume(resume) => self.on_resume(&resume, &at, out),
            TypedEvent::SessionShutdown(shutdown) => self.on_shutdown(&shutdown, &at, out),
            TypedEvent::SessionModelChange(change) => {
                self.facts.model = Some(change.new_model.clone());
                if self.facts.models.len() < MAX_MODELS {
                    self.facts.models.push(change.new_model.clone());
                }
                let text = match &change.previous_model {
                    Some(before) => format!("model {before} \u{2192} {}", change.new_model),
                    None => format!("model \u{2192} {}", change.new_model),
                };
                // A mark even inside a turn: a switch concerns every turn after it.
                out.push(at.mark(MarkKind::ModelChange, &text));
            }
            TypedEvent::SubagentStarted(s) => self.on_subagent_started(&s, at, out),
            TypedEvent::SubagentCompleted(s) => self.on_subagent_completed(&s, at, out),
            TypedEvent::SubagentFailed(s) => self.on_subagent_failed(&s, at, out),
            TypedEvent::UserMessage(msg) => {
                let kind = if msg.is_autopilot_continuation == Some(true) {
                    MarkKind::Nudge
                } else {
                    MarkKind::Prompt
                };
                // The runtime records its autopilot nudge only as what the model read.
                let text = match &msg.transformed_content {
                    Some(model_read) if msg.content.is_empty() => model_read,
                    _ => &msg.content,
                };
                out.push(Item::Mark(Mark {
                    kind,
                    line,
                    lane: at.lane,
                    text: Clipped::new(text, TEXT_CAP),
                }));
            }
            TypedEvent::AssistantTurnStart(start) => self.on_turn_start(&start, at, out),
            TypedEvent::AssistantMessage(msg) => self.on_message(&msg, &at, out),
            TypedEvent::AssistantTurnEnd(_) => self.on_turn_end(&at, out),
            TypedEvent::ToolExecutionStart(start) => {
                self.on_task_call(
                    &start.tool_call_id,
                    &start.tool_name,
                    start.arguments.as_ref(),
                );
                self.on_tool_start(&start, &at, out);
            }
            TypedEvent::ToolExecutionComplete(done) => self.on_tool_complete(&done, &at, out),
            TypedEvent::PermissionRequested(ask) => self.on_permission_requested(&ask),
            TypedEvent::PermissionCompleted(done) => self.on_permission_completed(done, at, out),
            TypedEvent::HookStart(_) => {}
            TypedEvent::HookEnd(end) => self.on_hook_end(end, at, out),
            TypedEvent::SessionError(e) => {
                let status = e
                    .status_code
                    .map(|s| format!(" (HTTP {s})"))
                    .unwrap_or_default();
                let text = format!("{}{status}: {}", e.error_type, e.message);
                self.note_or_mark(at, NoteKind::Error, MarkKind::Error, true, &text, out);
            }
            TypedEvent::Abort(a) => {
                let text = format!("aborted: {}", a.reason);
                self.note_or_mark(at, NoteKind::Abort, MarkKind::Abort, true, &text, out);
            }
            TypedEvent::SessionTaskComplete(done) => {
                out.push(at.mark(
                    MarkKind::TaskComplete,
                    &format!("task complete: {}", done.summary.as_deref().unwrap_or("")),
                ));
            }
            TypedEvent::Other(t) => match t.as_str() {
                "session.warning" => {
                    let text = event
                        .payload::<payload::SessionWarning>()
                        .map(|w| format!("{}: {}", w.warning_type, w.message))
                        .unwrap_or_else(|e| e.to_string());
                    self.note_or_mark(at, NoteKind::Warning, MarkKind::Warning, true, &text, out);
                }
                "session.compaction_complete" => {
                    let text = event
                        .payload::<payload::CompactionComplete>()
                        .map(|c| compaction_text(&c))
                        .unwrap_or_else(|e| e.to_string());
                    self.note_or_mark(
                        at,
                        NoteKind::Compaction,
                        MarkKind::Compaction,
                        false,
                        &text,
                        out,
                    );
                }
                "session.truncation"
                | "session.snapshot_rewind"
                | "session.mode_changed"
                | "session.info" => {
                    self.note_or_mark(at, NoteKind::Info, MarkKind::Info, false, t.as_str(), out);
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// The lane's open turn, else the main agent's (a runtime may record a sub-agent's tool
    /// events without its `agentId`).
    fn open_turn_mut(&mut self, lane: &Lane) -> Option<&mut OpenTurn> {
        if self.open.contains_key(lane) {
            return self.open.get_mut(lane);
        }
        self.open.get_mut(&None)
    }

    fn call_note(&mut self, lane: Lane, call_id: Option<String>, note: Note, out: &mut Vec<Item>) {
        let Some(open) = self.open_turn_mut(&lane) else {
            out.push(Item::Mark(Mark {
                kind: if note.bad {
                    MarkKind::Warning
                } else {
                    MarkKind::Info
                },
                line: note.line,
                lane,
                text: note.text,
            }));
            return;
        };
        let call = call_id.and_then(|id| open.turn.calls.iter_mut().find(|c| c.id == id));
        match call {
            Some(call) => push_note(&mut call.notes, note),
            None => push_note(&mut open.turn.notes, note),
        }
    }

    /// A note on the lane's open turn, or a mark where no turn is open.
    fn note_or_mark(
        &mut self,
        at: At,
        note: NoteKind,
        mark: MarkKind,
        bad: bool,
        text: &str,
        out: &mut Vec<Item>,
    ) {
        let At { line, lane, .. } = at;
        match self.open.get_mut(&lane) {
            Some(open) => push_note(
                &mut open.turn.notes,
                Note {
                    kind: note,
                    line,
                    text: Clipped::new(text, NOTE_CAP),
                    bad,
                },
            ),
            None => out.push(Item::Mark(Mark {
                kind: mark,
                line,
                lane,
                text: Clipped::new(text, NOTE_CAP),
            })),
        }
    }
}

/// What a compaction did, in a line.
fn compaction_text(c: &payload::CompactionComplete) -> String {
    if !c.success {
        return format!(
            "compaction failed: {}",
            c.error.as_deref().unwrap_or("no reason recorded")
        );
    }
    match (c.messages_removed, c.tokens_removed) {
        (Some(m), Some(t)) => format!("compaction: {m} messages ({t} tokens) summarised"),
        (Some(m), None) => format!("compaction: {m} messages summarised"),
        _ => "compaction: the history was summarised".to_owned(),
    }
}
