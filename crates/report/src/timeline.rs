//! Journal records into timeline [`Item`]s, one record at a time.
//!
//! A turn is held open while its events arrive and handed out when it ends, so memory follows
//! the open turns (one per agent, capped), never the journal; every text is clipped as it is
//! read. Marks are handed out where they happen.

use std::collections::HashMap;

use serde::Deserialize;
use turnstile_journal::payload::{self, TypedEvent};
use turnstile_journal::{Event, ReadError, Record};

use crate::items::{Clipped, Item, Lane, Mark, MarkKind, Note, NoteKind, Outcome, ToolCall, Turn};

/// Bytes of a tool call's arguments kept.
pub const ARGUMENTS_CAP: usize = 2 << 10;
/// Bytes of a tool result, an answer or a prompt kept.
pub const TEXT_CAP: usize = 4 << 10;
/// Bytes of a note or mark kept.
pub const NOTE_CAP: usize = 1 << 10;
/// Tool calls kept per turn; the rest are counted.
pub const MAX_CALLS_PER_TURN: usize = 128;
/// Notes kept per turn or call; the rest are dropped.
pub const MAX_NOTES: usize = 64;
/// Agents with a lane of their own; the turns of any further agent share [`OTHER_AGENTS`].
pub const MAX_LANES: usize = 16;
/// The lane of agents beyond [`MAX_LANES`].
pub const OTHER_AGENTS: &str = "other agents";

/// The facts about the session the header shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFacts {
    /// `session.start` `sessionId`.
    pub session_id: Option<String>,
    /// Who wrote the journal (`producer`).
    pub producer: Option<String>,
    /// The model at start (then the last `session.model_change`).
    pub model: Option<String>,
    /// The working directory at start.
    pub cwd: Option<String>,
    /// `session.start` `startTime`.
    pub start_time: Option<String>,
    /// Timestamp of the last event read.
    pub last_time: Option<String>,
    /// Output and input tokens per model from the last `session.shutdown`.
    pub shutdown_tokens: Vec<ModelTokens>,
}

/// One model's totals from `session.shutdown` `modelMetrics`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTokens {
    /// The model id (filled from the map key).
    #[serde(skip)]
    pub model: String,
    /// Calls made.
    #[serde(default)]
    pub requests: Requests,
    /// Token totals.
    #[serde(default)]
    pub usage: Usage,
}

/// `modelMetrics.<model>.requests`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Requests {
    /// Calls made.
    #[serde(default)]
    pub count: u64,
}

/// `modelMetrics.<model>.usage`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

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

/// A turn being assembled.
#[derive(Debug)]
struct OpenTurn {
    turn: Turn,
    start_ms: i64,
    last_ms: i64,
    first_tool_ms: Option<i64>,
    last_tool_ms: Option<i64>,
    /// Start time of each call by position in `turn.calls`.
    call_start_ms: Vec<i64>,
}

/// The builder: feed records in journal order, collect items.
#[derive(Debug, Default)]
pub struct Timeline {
    facts: SessionFacts,
    open: HashMap<Lane, OpenTurn>,
    lanes: Vec<String>,
    turns: u64,
    /// Permission requests waiting for their answer: request id -> (call id, summary).
    asks: HashMap<String, (Option<String>, String)>,
    /// The process writing since the last start or resume has recorded its shutdown.
    closed_cleanly: bool,
    started: bool,
}

/// Permission requests remembered at most (a damaged journal could leave many unanswered).
const MAX_ASKS: usize = 4096;

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
                kind: MarkKind::Unreadable,
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
        let mark = |kind, text: &str| {
            Item::Mark(Mark {
                kind,
                line,
                lane: lane.clone(),
                text: Clipped::new(text, NOTE_CAP),
            })
        };
        match typed {
            TypedEvent::SessionStart(start) => {
                self.started = true;
                self.closed_cleanly = false;
                let facts = &mut self.facts;
                facts.session_id.get_or_insert(start.session_id.clone());
                facts.producer.get_or_insert(start.producer.clone());
                if facts.model.is_none() {
                    facts.model = start.selected_model.clone();
                }
                if facts.cwd.is_none() {
                    facts.cwd = start.context.as_ref().map(|c| c.cwd.clone());
                }
                facts.start_time.get_or_insert(start.start_time.clone());
                out.push(mark(
                    MarkKind::Start,
                    &format!(
                        "session started by {} {} with {}",
                        start.producer,
                        start.copilot_version,
                        start.selected_model.as_deref().unwrap_or("no model named")
                    ),
                ));
            }
            TypedEvent::SessionResume(resume) => {
                if self.started && !self.closed_cleanly {
                    out.push(mark(
                        MarkKind::Crash,
                        "the process before this resume ended without session.shutdown (it crashed or was killed)",
                    ));
                }
                self.started = true;
                self.closed_cleanly = false;
                for open in self.open.values_mut() {
                    push_note(
                        &mut open.turn.notes,
                        Note {
                            kind: NoteKind::Info,
                            line,
                            text: Clipped::new(
                                "the session was resumed while this turn was open",
                                NOTE_CAP,
                            ),
                            bad: true,
                        },
                    );
                }
                let active = if resume.session_was_active == Some(true) {
                    " (work was open)"
                } else {
                    ""
                };
                out.push(mark(
                    MarkKind::Resume,
                    &format!("resumed after {} events{active}", resume.event_count),
                ));
            }
            TypedEvent::SessionShutdown(shutdown) => {
                self.closed_cleanly = true;
                self.facts.shutdown_tokens = shutdown
                    .model_metrics
                    .iter()
                    .filter_map(|(model, v)| {
                        let mut t: ModelTokens = serde_json::from_value(v.clone()).ok()?;
                        t.model = model.clone();
                        Some(t)
                    })
                    .collect();
                out.push(mark(
                    MarkKind::Shutdown,
                    &format!("shutdown ({})", shutdown.shutdown_type),
                ));
            }
            TypedEvent::SessionModelChange(change) => {
                self.facts.model = Some(change.new_model.clone());
                self.note_or_mark(
                    lane,
                    line,
                    NoteKind::Info,
                    MarkKind::Info,
                    false,
                    &format!("model changed to {}", change.new_model),
                    out,
                );
            }
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
                    lane,
                    text: Clipped::new(text, TEXT_CAP),
                }));
            }
            TypedEvent::AssistantTurnStart(start) => {
                if let Some(previous) = self.open.remove(&lane) {
                    out.push(Item::Turn(close(previous, None)));
                }
                self.turns += 1;
                self.open.insert(
                    lane.clone(),
                    OpenTurn {
                        turn: Turn {
                            ordinal: self.turns,
                            turn_id: start.turn_id.clone(),
                            lane,
                            line,
                            ..Turn::default()
                        },
                        start_ms: ms,
                        last_ms: ms,
                        first_tool_ms: None,
                        last_tool_ms: None,
                        call_start_ms: Vec::new(),
                    },
                );
            }
            TypedEvent::AssistantMessage(msg) => {
                let Some(open) = self.open.get_mut(&lane) else {
                    out.push(mark(
                        MarkKind::Info,
                        &format!("assistant message outside a turn: {}", msg.content),
                    ));
                    return;
                };
                if open.turn.answer.shown.is_empty() && open.turn.model_ms == 0 {
                    open.turn.model_ms = span(open.start_ms, ms);
                }
                if !msg.content.is_empty() {
                    open.turn.answer = Clipped::new(&msg.content, TEXT_CAP);
                }
                if let Some(tokens) = msg.output_tokens {
                    *open.turn.output_tokens.get_or_insert(0) += tokens;
                }
            }
            TypedEvent::AssistantTurnEnd(_) => match self.open.remove(&lane) {
                Some(open) => out.push(Item::Turn(close(open, Some(ms)))),
                None => out.push(mark(
                    MarkKind::Unreadable,
                    "assistant.turn_end without a turn start",
                )),
            },
            TypedEvent::ToolExecutionStart(start) => {
                let Some(open) = self.open_turn_mut(&lane) else {
                    out.push(mark(
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
            TypedEvent::ToolExecutionComplete(done) => {
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
                let Some(open) = self.open_turn_mut(&lane) else {
                    out.push(mark(
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
            TypedEvent::PermissionRequested(ask) => {
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
            TypedEvent::PermissionCompleted(done) => {
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
                    line,
                    text: Clipped::new(&text, NOTE_CAP),
                    bad: answer.kind.starts_with("denied") || answer.kind == "cancelled",
                };
                self.call_note(lane, done.tool_call_id.or(call_id), note, out);
            }
            TypedEvent::HookStart(_) => {}
            TypedEvent::HookEnd(end) => {
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
                    line,
                    text: Clipped::new(&text, NOTE_CAP),
                    bad: !end.success,
                };
                self.call_note(lane, end.parent_tool_call_id, note, out);
            }
            TypedEvent::SessionError(e) => {
                let status = e
                    .status_code
                    .map(|s| format!(" (HTTP {s})"))
                    .unwrap_or_default();
                self.note_or_mark(
                    lane,
                    line,
                    NoteKind::Error,
                    MarkKind::Error,
                    true,
                    &format!("{}{status}: {}", e.error_type, e.message),
                    out,
                );
            }
            TypedEvent::Abort(a) => {
                self.note_or_mark(
                    lane,
                    line,
                    NoteKind::Abort,
                    MarkKind::Abort,
                    true,
                    &format!("aborted: {}", a.reason),
                    out,
                );
            }
            TypedEvent::SessionTaskComplete(done) => {
                out.push(mark(
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
                    self.note_or_mark(
                        lane,
                        line,
                        NoteKind::Warning,
                        MarkKind::Warning,
                        true,
                        &text,
                        out,
                    );
                }
                "session.compaction_complete"
                | "session.truncation"
                | "session.snapshot_rewind"
                | "subagent.started"
                | "subagent.completed"
                | "subagent.failed"
                | "session.mode_changed"
                | "session.info" => {
                    let bad = t.as_str() == "subagent.failed";
                    self.note_or_mark(
                        lane,
                        line,
                        NoteKind::Info,
                        MarkKind::Info,
                        bad,
                        t.as_str(),
                        out,
                    );
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

    #[allow(clippy::too_many_arguments)]
    fn note_or_mark(
        &mut self,
        lane: Lane,
        line: u64,
        note: NoteKind,
        mark: MarkKind,
        bad: bool,
        text: &str,
        out: &mut Vec<Item>,
    ) {
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

fn push_note(notes: &mut Vec<Note>, note: Note) {
    if notes.len() < MAX_NOTES {
        notes.push(note);
    }
}

/// Milliseconds from `from` to `to`; a clock that went backwards counts as zero.
fn span(from: i64, to: i64) -> u64 {
    u64::try_from(to.saturating_sub(from)).unwrap_or(0)
}

/// The finished turn; `end_ms` is its `assistant.turn_end`'s time, `None` when it has none.
fn close(open: OpenTurn, end_ms: Option<i64>) -> Turn {
    let mut turn = open.turn;
    turn.ended = end_ms.is_some();
    turn.total_ms = span(open.start_ms, end_ms.unwrap_or(open.last_ms));
    if let (Some(first), Some(last)) = (open.first_tool_ms, open.last_tool_ms) {
        turn.tool_ms = span(first, last);
    }
    turn
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use turnstile_journal::{EventType, Timestamp};

    /// Events in order, `ms` after an epoch, with an optional agent.
    fn run(events: &[(&str, serde_json::Value, i64, Option<&str>)]) -> Vec<Item> {
        let mut timeline = Timeline::new();
        let mut out = Vec::new();
        for (i, (kind, data, ms, agent)) in events.iter().enumerate() {
            let mut event = Event::with_raw_data(
                EventType::new(kind),
                serde_json::value::to_raw_value(data).unwrap(),
                None,
            );
            event.timestamp = Timestamp::from_millis(1_795_970_035_000 + ms);
            event.agent_id = agent.map(str::to_owned);
            let record = Record {
                line: i as u64 + 1,
                offset: 0,
                len: 0,
                event,
            };
            timeline.push(Ok(record), &mut out);
        }
        timeline.finish(&mut out);
        out
    }

    fn turns(items: &[Item]) -> Vec<&Turn> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Turn(t) => Some(t),
                Item::Mark(_) => None,
            })
            .collect()
    }

    fn marks(items: &[Item]) -> Vec<MarkKind> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Mark(m) => Some(m.kind),
                Item::Turn(_) => None,
            })
            .collect()
    }

    fn start() -> (&'static str, serde_json::Value, i64, Option<&'static str>) {
        (
            "session.start",
            json!({"sessionId": "s", "version": 1, "producer": "turnstile", "copilotVersion": "1", "startTime": "t"}),
            0,
            None,
        )
    }

    #[test]
    fn a_turn_splits_into_model_and_tool_time_with_its_call_and_permission() {
        let items = run(&[
            start(),
            ("assistant.turn_start", json!({"turnId": "0"}), 10, None),
            (
                "assistant.message",
                json!({"messageId": "m", "content": "", "outputTokens": 12}),
                110,
                None,
            ),
            (
                "tool.execution_start",
                json!({"toolCallId": "c1", "toolName": "bash", "arguments": {"command": "rm -rf build"}}),
                120,
                None,
            ),
            (
                "permission.requested",
                json!({"requestId": "r1", "permissionRequest": {"kind": "shell", "fullCommandText": "rm -rf build", "toolCallId": "c1"}}),
                121,
                None,
            ),
            (
                "permission.completed",
                json!({"requestId": "r1", "toolCallId": "c1", "result": {"kind": "denied-by-rules", "rules": ["shell(rm)"]}}),
                122,
                None,
            ),
            (
                "tool.execution_complete",
                json!({"toolCallId": "c1", "success": false, "error": {"message": "Permission denied", "code": "denied"}}),
                150,
                None,
            ),
            ("assistant.turn_end", json!({"turnId": "0"}), 160, None),
        ]);
        let turns = turns(&items);
        assert_eq!(turns.len(), 1);
        let t = turns[0];
        assert_eq!((t.model_ms, t.tool_ms, t.total_ms), (100, 30, 150));
        assert_eq!(t.output_tokens, Some(12));
        assert!(t.ended);
        let call = &t.calls[0];
        assert_eq!(call.name, "bash");
        assert_eq!(call.duration_ms, Some(30));
        assert_eq!(call.arguments.shown, r#"{"command":"rm -rf build"}"#);
        let outcome = call.outcome.as_ref().unwrap();
        assert!(!outcome.success && outcome.code.as_deref() == Some("denied"));
        assert_eq!(call.notes.len(), 1);
        assert_eq!(
            call.notes[0].text.shown,
            "shell rm -rf build: denied-by-rules (shell(rm))"
        );
        assert!(call.notes[0].bad);
    }

    #[test]
    fn a_resume_without_a_shutdown_is_a_crash_and_a_clean_one_is_not() {
        let items = run(&[
            start(),
            ("assistant.turn_start", json!({"turnId": "0"}), 10, None),
            (
                "session.resume",
                json!({"resumeTime": "t", "eventCount": 2}),
                20,
                None,
            ),
            ("assistant.turn_end", json!({"turnId": "0"}), 21, None),
            (
                "session.shutdown",
                json!({"shutdownType": "routine", "totalApiDurationMs": 0, "sessionStartTime": 0, "codeChanges": {"linesAdded": 0, "linesRemoved": 0, "filesModified": []}, "modelMetrics": {"m": {"requests": {"count": 2}, "usage": {"inputTokens": 5, "outputTokens": 6}}}}),
                30,
                None,
            ),
            (
                "session.resume",
                json!({"resumeTime": "t", "eventCount": 5}),
                40,
                None,
            ),
        ]);
        assert_eq!(
            marks(&items),
            [
                MarkKind::Start,
                MarkKind::Crash,
                MarkKind::Resume,
                MarkKind::Shutdown,
                MarkKind::Resume
            ]
        );
        let t = turns(&items)[0];
        assert_eq!(
            t.notes[0].text.shown,
            "the session was resumed while this turn was open"
        );
    }

    #[test]
    fn sub_agents_get_lanes_and_an_unended_turn_is_handed_out_at_the_end() {
        let items = run(&[
            ("assistant.turn_start", json!({"turnId": "0"}), 0, None),
            (
                "assistant.turn_start",
                json!({"turnId": "0"}),
                1,
                Some("sub-1"),
            ),
            (
                "session.error",
                json!({"errorType": "http", "message": "boom"}),
                2,
                Some("sub-1"),
            ),
            (
                "assistant.turn_end",
                json!({"turnId": "0"}),
                3,
                Some("sub-1"),
            ),
        ]);
        let turns = turns(&items);
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].lane.as_deref(), Some("sub-1"));
        assert_eq!(turns[0].notes[0].kind, NoteKind::Error);
        assert_eq!(turns[1].lane, None);
        assert!(!turns[1].ended);
    }

    #[test]
    fn texts_calls_and_lanes_are_capped() {
        let mut events = vec![("assistant.turn_start", json!({"turnId": "0"}), 0, None)];
        for i in 0..(MAX_CALLS_PER_TURN + 10) {
            events.push(("tool.execution_start", json!({"toolCallId": format!("c{i}"), "toolName": "view", "arguments": {"p": "x".repeat(10_000)}}), 1, None));
            events.push(("tool.execution_complete", json!({"toolCallId": format!("c{i}"), "success": true, "result": {"content": "y".repeat(100_000)}}), 2, None));
        }
        let agents: Vec<String> = (0..MAX_LANES + 5).map(|i| format!("agent-{i}")).collect();
        for a in &agents {
            events.push((
                "assistant.turn_start",
                json!({"turnId": "0"}),
                3,
                Some(a.as_str()),
            ));
            events.push((
                "assistant.turn_end",
                json!({"turnId": "0"}),
                4,
                Some(a.as_str()),
            ));
        }
        let items = run(&events);
        let turns = turns(&items);
        let main = turns.iter().find(|t| t.lane.is_none()).unwrap();
        assert_eq!(main.calls.len(), MAX_CALLS_PER_TURN);
        assert_eq!(main.calls_left_out, 10);
        let call = &main.calls[0];
        assert_eq!(call.arguments.shown.len(), ARGUMENTS_CAP);
        let result = &call.outcome.as_ref().unwrap().text;
        assert_eq!(
            (result.shown.len(), result.left_out),
            (TEXT_CAP, 100_000 - TEXT_CAP)
        );
        let mut lanes: Vec<_> = turns.iter().filter_map(|t| t.lane.clone()).collect();
        lanes.sort();
        lanes.dedup();
        assert_eq!(lanes.len(), MAX_LANES + 1, "{lanes:?}");
        assert!(lanes.contains(&OTHER_AGENTS.to_owned()));
    }

    #[test]
    fn a_nudge_without_content_shows_what_the_model_read() {
        let items = run(&[
            ("user.message", json!({"content": "fix it"}), 0, None),
            (
                "user.message",
                json!({"content": "", "transformedContent": "You have not yet marked the task as complete", "isAutopilotContinuation": true}),
                1,
                None,
            ),
        ]);
        let texts: Vec<(MarkKind, &str)> = items
            .iter()
            .filter_map(|i| match i {
                Item::Mark(m) => Some((m.kind, m.text.shown.as_str())),
                Item::Turn(_) => None,
            })
            .collect();
        assert_eq!(
            texts,
            [
                (MarkKind::Prompt, "fix it"),
                (
                    MarkKind::Nudge,
                    "You have not yet marked the task as complete"
                )
            ]
        );
    }

    #[test]
    fn data_that_does_not_fit_its_type_is_marked_not_dropped() {
        let items = run(&[("tool.execution_start", json!({"toolName": 5}), 0, None)]);
        assert_eq!(marks(&items), [MarkKind::Unreadable]);
    }
}
