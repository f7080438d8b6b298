//! Folding events into a [`SessionState`], one event at a time.
//!
//! Counting and open work go through the same lenient field reader and step function as the
//! audit ([`crate::tracking`]); the conversation and the metadata come from the typed payloads
//! of the journal crate. An event whose `data` does not fit its payload still counts and still
//! opens or closes work; it is noted in [`SessionState::malformed_events`].

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use serde::Deserialize;
use turnstile_journal::payload::{
    AssistantUsage, Payload, SKILL_SOURCE_PREFIX, SessionBinaryAsset, SessionContextChanged,
    SessionError, SessionResume, SessionStart, SnapshotRewind, SystemMessage, SystemNotification,
    UserMessage,
};
use turnstile_journal::{Event, LiveMark, REWIND_MARKER, Record, Uuid};

use crate::conversation::{Conversation, Message, ToolImage};
use crate::error::ReplayError;
use crate::fold_assistant::read_assistant;
use crate::fold_lenient::{
    CompactionComplete, ModeChanged, ModelChange, Shutdown, Truncation, add_tokens, agent_usage,
    model_usage,
};
use crate::fold_tool_lean::ToolOutcome;
use crate::fold_user_shell::{Completed as UserShellCompleted, UserRequested};
use crate::open_work::OpenToolCall;
use crate::raw::fields::{Fields, Kind, Store};
use crate::raw::json;
use crate::raw::types::Scratch;
use crate::state::BinaryAsset;
use crate::state::{
    KEPT_RECENT, PendingCompaction, ResumeInfo, SessionErrorInfo, SessionState, TokenCounts,
};
use crate::tracking::{Step, track};

mod escaped;
mod line;

pub(crate) use line::{Ahead, ReadAhead, ToolRead, prepare_line};

/// Builds a [`SessionState`] from events fed in journal order.
///
/// Incremental: the loop keeps one alive and feeds it every event it emits; a checkpoint
/// restores one with [`Folder::from_state`] and feeds it the journal's tail.
#[derive(Debug, Default)]
pub struct Folder {
    state: SessionState,
    store: Store,
    scratch: Scratch,
    line: Vec<u8>,
    /// The payload of the line being applied when it was deserialized ahead, on the reading
    /// thread (see [`prepare_line`]).
    prepared: ReadAhead,
    /// How tool results are read (the lean way; the tests also take the payload type's).
    pub(crate) tool_read: ToolRead,
    /// Tool results in the conversation whose `content` is still escaped as in the journal
    /// (read ahead lazily: most are compacted away before the end of a large fold), by the
    /// address of their text, with its length. [`Folder::resolve_escaped`] unescapes them.
    /// Every message the fold drops is dropped by a compaction or a rewind, after which the
    /// map is pruned to the texts still held: an address in it is never that of another text.
    escaped: HashMap<usize, usize>,
    /// The tool results' texts compactions dropped, kept for the thread that allocated them
    /// to free (see [`Folder::take_dropped`]); `None`: freed at once.
    dropped: Option<Vec<String>>,
}

/// The parts of an event the fold reads, borrowed from an [`Event`] or straight from a line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventRef<'a> {
    event_type: &'a str,
    data: &'a str,
    agent_id: Option<&'a str>,
    id: Uuid,
    /// The schema says the type is never written to disk.
    ephemeral_type: bool,
}

impl<'a> From<&'a Event> for EventRef<'a> {
    fn from(event: &'a Event) -> Self {
        EventRef {
            event_type: event.event_type.as_str(),
            data: event.data.get(),
            agent_id: event.agent_id.as_deref(),
            id: event.id,
            ephemeral_type: event.is_ephemeral(),
        }
    }
}

impl Folder {
    /// A folder for a new, empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// A folder that continues from a state folded earlier.
    pub fn from_state(state: SessionState) -> Self {
        Folder {
            state,
            ..Self::default()
        }
    }

    /// The state so far.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The final state.
    pub fn into_state(self) -> SessionState {
        self.state
    }

    /// Applies an event as the loop emits it: a persisted type counts as the next journal line
    /// (its size is that of its serialized line); an ephemeral one (by its type, or marked
    /// `"ephemeral":true` as the runtime marks its internal `model.*` events) only updates live
    /// figures such as usage.
    pub fn apply(&mut self, event: &Event) {
        if event.is_ephemeral() || event.live_mark != LiveMark::Absent {
            let line = self.state.event_count;
            let event = EventRef::from(event);
            let fields = self.read_fields(event);
            self.step(event, line, &fields);
        } else {
            self.line.clear();
            event.write_persisted(&mut self.line);
            let len = self.line.len() as u64 + 1;
            self.apply_persisted(event, len);
        }
    }

    /// Applies a line read from a journal.
    pub fn apply_record(&mut self, record: &Record) {
        self.apply_persisted(&record.event, record.len);
    }

    /// Applies an event that is the next line of the journal, `line_len` bytes with its `\n`.
    pub fn apply_persisted(&mut self, event: &Event, line_len: u64) {
        let event = EventRef::from(event);
        let fields = self.read_fields(event);
        self.persisted(event, &fields, line_len);
    }

    fn persisted(&mut self, event: EventRef<'_>, fields: &Fields, line_len: u64) {
        let line = self.state.event_count + 1;
        self.step(event, line, fields);
        self.state.event_count += 1;
        // A rewind marker is not itself in the view it cuts.
        if event.event_type != REWIND_MARKER {
            self.state.view_events += 1;
        }
        self.state.byte_size += line_len;
        // An ephemeral event on disk is an error the audit reports; the chain skips it.
        if !event.ephemeral_type {
            self.state.last_event_id = Some(event.id);
            self.state.shut_down = event.event_type == "session.shutdown";
        }
    }

    /// The lenient fields of an event's `data`, into `self.store`.
    fn read_fields(&mut self, event: EventRef<'_>) -> Fields {
        let kind = Kind::of(event.event_type);
        self.store.clear();
        let mut fields = Fields::default();
        if kind.reads_fields() {
            let Scratch { stack, inner, .. } = &mut self.scratch;
            let store = &mut self.store;
            json::scan_object(event.data.as_bytes(), stack, &mut |k, v| {
                fields.set_raw(kind, k, v, store, inner)
            });
        }
        fields
    }

    fn warn(&mut self, line: u64, event: EventRef<'_>, reason: impl std::fmt::Display) {
        self.state.malformed_events += 1;
        if self.state.recent_warnings.len() >= KEPT_RECENT {
            self.state.recent_warnings.remove(0);
        }
        self.state
            .recent_warnings
            .push(format!("line {line}: {}: {reason}", event.event_type));
    }

    fn payload<P: Payload>(&mut self, line: u64, event: EventRef<'_>) -> Option<P> {
        let parsed = serde_json::from_str::<P>(event.data);
        self.checked(line, event, parsed)
    }

    /// A payload already deserialized, or the warning for why it could not be.
    fn checked<P>(
        &mut self,
        line: u64,
        event: EventRef<'_>,
        parsed: serde_json::Result<P>,
    ) -> Option<P> {
        // Only called for events of the type `P` reads; the wording is `Event::payload`'s.
        match parsed {
            Ok(p) => Some(p),
            Err(e) => {
                let reason = format!(
                    "`data` of {} does not match the schema: {e}",
                    event.event_type
                );
                self.warn(line, event, reason);
                None
            }
        }
    }

    fn lenient<P: for<'de> Deserialize<'de>>(
        &mut self,
        line: u64,
        event: EventRef<'_>,
    ) -> Option<P> {
        match serde_json::from_str::<P>(event.data) {
            Ok(p) => Some(p),
            Err(e) => {
                self.warn(line, event, e);
                None
            }
        }
    }

    /// Applies one event whose lenient `fields` are in `self.store`.
    fn step(&mut self, event: EventRef<'_>, line: u64, fields: &Fields) {
        let name = event.event_type;
        let kind = Kind::of(name);
        let agent = event.agent_id;
        let step = track(
            &mut self.state.open_work,
            &mut self.state.counts,
            kind,
            agent,
            line,
            fields,
            &self.store,
        );
        let main = agent.is_none();
        if let Step::Abandoned(abandoned) = &step {
            // The resumed runtime answers a cut-off call with a made-up interrupted result.
            for call in abandoned.tool_calls.iter().filter(|c| c.agent_id.is_none()) {
                self.conversation()
                    .add_interrupted_result(&call.tool_call_id, &call.name);
            }
        }
        match name {
            "session.start" => {
                if let Some(p) = self.payload::<SessionStart>(line, event) {
                    let meta = &mut self.state.session;
                    meta.session_id = Some(p.session_id);
                    meta.producer = Some(p.producer);
                    meta.copilot_version = Some(p.copilot_version);
                    meta.start_time = Some(p.start_time);
                    meta.model = p.selected_model.or(meta.model.take());
                    meta.context = p.context.or(meta.context.take());
                    meta.session_limits = p.session_limits;
                }
            }
            "session.resume" => {
                if let Some(p) = self.payload::<SessionResume>(line, event) {
                    self.state.last_resume = Some(ResumeInfo {
                        resume_time: p.resume_time,
                        event_count: p.event_count,
                        session_was_active: p.session_was_active,
                        line,
                    });
                    let meta = &mut self.state.session;
                    meta.model = p.selected_model.or(meta.model.take());
                    meta.context = p.context.or(meta.context.take());
                    if let Some(limits) = p.session_limits {
                        meta.session_limits = limits;
                    }
                }
            }
            "session.context_changed" => {
                // The last recorded context is where the session works now (the preliminary
                // event of a move carries the directory before its repository facts).
                if let Some(SessionContextChanged(context)) =
                    self.payload::<SessionContextChanged>(line, event)
                {
                    self.state.session.context = Some(context);
                }
            }
            "session.mode_changed" => {
                if let Some(ModeChanged {
                    new_mode: Some(mode),
                }) = self.lenient::<ModeChanged>(line, event)
                {
                    self.state.session.mode = mode;
                }
            }
            "session.model_change" if main => {
                if let Some(ModelChange {
                    new_model: Some(model),
                }) = self.lenient::<ModelChange>(line, event)
                {
                    self.state.session.model = Some(model);
                }
            }
            "session.binary_asset" => {
                if let Some(p) = self.payload::<SessionBinaryAsset>(line, event) {
                    self.state.assets.insert(
                        p.asset_id,
                        BinaryAsset {
                            mime_type: p.mime_type,
                            data: p.data,
                        },
                    );
                }
            }
            "system.message" if main => {
                if let Some(p) = self.payload::<SystemMessage>(line, event) {
                    if p.role == "system" {
                        self.conversation().set_system(p.content);
                    } else {
                        self.conversation()
                            .push(Message::Developer { content: p.content });
                    }
                }
            }
            // What the runtime tells the model on its own reaches it as a user message.
            "system.notification" if main => {
                if let Some(p) = self.payload::<SystemNotification>(line, event) {
                    self.conversation().push(Message::User {
                        content: p.content,
                        typed: None,
                        autopilot_continuation: false,
                        message_id: None,
                        attachments: Vec::new(),
                    });
                }
            }
            "user.message" if main => {
                let parsed = self.payload::<UserMessage>(line, event);
                // A loaded skill's context joins the running turn, after its tool result.
                if let Some(p) = &parsed
                    && p.source
                        .as_deref()
                        .is_some_and(|s| s.starts_with(SKILL_SOURCE_PREFIX))
                {
                    let content = p.content.clone();
                    let message_id = p.message_id.clone();
                    self.conversation().push(Message::User {
                        content,
                        typed: None,
                        autopilot_continuation: false,
                        message_id,
                        attachments: Vec::new(),
                    });
                    return;
                }
                let mut hidden = std::mem::take(&mut self.state.hidden);
                self.conversation().restore(&mut hidden);
                self.apply_pending_compaction();
                self.state.interaction_turns = 0;
                if let Some(p) = parsed {
                    self.state.interaction_id = p.interaction_id.clone();
                    let (content, typed) = match p.transformed_content {
                        Some(sent) if sent != p.content => (sent, Some(p.content)),
                        _ => (p.content, None),
                    };
                    self.conversation().push(Message::User {
                        content,
                        typed,
                        autopilot_continuation: p.is_autopilot_continuation == Some(true),
                        message_id: p.message_id,
                        attachments: p.attachments.unwrap_or_default(),
                    });
                }
            }
            "assistant.turn_start" if main => {
                self.state.interaction_turns += 1;
                if let Some(pending) = &mut self.state.pending_compaction {
                    pending.turn_starts += 1;
                    if pending.turn_starts >= 2 {
                        self.apply_pending_compaction();
                    }
                }
            }
            "assistant.message" if main => {
                // Deserialized ahead when the line came from a large file (same bytes).
                let parsed = match self.prepared.assistant.take() {
                    Some(parsed) => *parsed,
                    None => read_assistant(event.data),
                };
                if let Some(p) = self.checked(line, event, parsed) {
                    self.conversation().push(Message::Assistant {
                        content: p.content,
                        tool_requests: p.tool_requests,
                        message_id: Some(p.message_id),
                    });
                }
            }
            "tool.user_requested" if main => {
                if let Some(p) = self.lenient::<UserRequested>(line, event) {
                    self.state
                        .user_shells
                        .insert(p.tool_call_id, p.arguments.command);
                }
            }
            "tool.execution_complete" => {
                if main && self.user_shell_result(line, event, fields) {
                    return;
                }
                if let Step::ToolCompleted(call) = &step {
                    self.tool_result(line, event, call.as_ref(), fields);
                }
            }
            "session.error" => {
                if let Some(p) = self.payload::<SessionError>(line, event) {
                    if self.state.recent_errors.len() >= KEPT_RECENT {
                        self.state.recent_errors.remove(0);
                    }
                    self.state.recent_errors.push(SessionErrorInfo {
                        error_type: p.error_type,
                        message: p.message,
                        line,
                    });
                }
            }
            "session.shutdown" => {
                self.state.shutdowns += 1;
                self.state.usage.llm_calls_at_shutdown = self.state.counts.llm_calls();
                if let Some(Shutdown {
                    model_metrics: Some(metrics),
                    agent_metrics,
                    total_api_duration_ms,
                    code_changes,
                }) = self.lenient::<Shutdown>(line, event)
                {
                    self.state.usage.agents_at_shutdown = agent_metrics
                        .iter()
                        .flatten()
                        .map(|(agent, v)| (agent.clone(), agent_usage(v)))
                        .collect();
                    self.state.usage.at_shutdown = metrics
                        .iter()
                        .map(|(m, v)| (m.clone(), model_usage(v)))
                        .collect();
                    self.state.usage.api_duration_ms_at_shutdown =
                        total_api_duration_ms.unwrap_or(0);
                    self.state.usage.code_changes_at_shutdown = code_changes.unwrap_or_default();
                }
            }
            "session.compaction_complete" if main => {
                if let Some(CompactionComplete {
                    success: Some(true),
                    summary_content: Some(summary),
                    messages_removed,
                    pre_compaction_messages_length,
                }) = self.lenient::<CompactionComplete>(line, event)
                {
                    // The runtime replaces what the conversation held when the compaction
                    // started (system prompt aside); what came meanwhile stays after the
                    // summary. It records the count as `preCompactionMessagesLength`.
                    let removed = messages_removed.or(pre_compaction_messages_length);
                    self.apply_pending_compaction();
                    let pending = PendingCompaction {
                        summary,
                        removed,
                        turn_starts: 0,
                        at: self.state.view_events,
                    };
                    // Finished inside a main-agent turn, it ran in the background of that
                    // turn (the runtime's way) and reaches the model late; finished between
                    // turns (turnstile's foreground compaction, a manual one), it is what the
                    // very next request carries.
                    let in_turn = self
                        .state
                        .open_work
                        .turns
                        .iter()
                        .any(|t| t.agent_id.is_none());
                    self.state.pending_compaction = Some(pending);
                    if !in_turn {
                        self.apply_pending_compaction();
                    }
                    self.state.compactions += 1;
                }
            }
            "session.truncation" if main => {
                if let Some(Truncation {
                    messages_removed_during_truncation: Some(removed),
                }) = self.lenient::<Truncation>(line, event)
                {
                    let mut hidden = std::mem::take(&mut self.state.hidden);
                    self.conversation().truncate_oldest(removed, &mut hidden);
                    self.state.hidden = hidden;
                    self.state.truncations += 1;
                }
            }
            REWIND_MARKER if main => {
                if let Some(p) = self.payload::<SnapshotRewind>(line, event) {
                    self.rewind(p.events_removed);
                }
            }
            "assistant.usage" => {
                if let Some(p) = self.payload::<AssistantUsage>(line, event) {
                    let usage = &mut self.state.usage;
                    usage.calls += 1;
                    add_tokens(
                        &mut usage.tokens,
                        TokenCounts {
                            input: p.input_tokens.unwrap_or(0),
                            output: p.output_tokens.unwrap_or(0),
                            cache_read: p.cache_read_tokens.unwrap_or(0),
                            cache_write: p.cache_write_tokens.unwrap_or(0),
                            reasoning: p.reasoning_tokens.unwrap_or(0),
                        },
                    );
                }
            }
            _ => {}
        }
    }

    /// The conversation, changed by the event being folded.
    fn conversation(&mut self) -> Conversation<'_> {
        Conversation::new(
            &mut self.state.conversation,
            &mut self.state.origins,
            self.state.view_events,
        )
    }

    /// Applies a rewind marker: the last `removed` events of the view leave it, and with them
    /// every message they added and a compaction they finished that the model has not seen.
    fn rewind(&mut self, removed: u64) {
        let cut = self.state.view_events.saturating_sub(removed);
        self.conversation().rewind_to(cut);
        self.state.hidden.rewind_to(cut);
        if self
            .state
            .pending_compaction
            .as_ref()
            .is_some_and(|p| p.at >= cut)
        {
            self.state.pending_compaction = None;
        }
        self.state.view_events = cut;
        self.state.rewinds += 1;
        self.prune_escaped();
    }

    /// Lets the model see a finished compaction: its summary replaces the history it covered.
    fn apply_pending_compaction(&mut self) {
        if let Some(p) = self.state.pending_compaction.take() {
            let mut conversation =
                Conversation::new(&mut self.state.conversation, &mut self.state.origins, p.at);
            let mut gone = conversation.compact(p.summary, p.removed);
            // The summary stands for the history before it, what truncations hid included.
            let mut hidden = std::mem::take(&mut self.state.hidden);
            if let Some(dropped) = &mut self.dropped {
                // Only the tool results' texts were allocated on the reading thread: they go
                // back there to be freed (most of a compaction's cost). The rest was built on
                // this thread and is freed here, so neither thread frees into the other's
                // malloc arena, whose lock made both wait (`docs/performance.md`).
                for message in gone.iter_mut().chain(hidden.messages.iter_mut()) {
                    if let Message::Tool { content, .. } = message {
                        dropped.push(std::mem::take(content));
                    }
                }
            }
            self.prune_escaped();
        }
    }

    /// Puts the result of a command the user ran into the conversation as the user message
    /// the model is given (see [`crate::fold_user_shell`]); false when the result is not of
    /// such a command.
    fn user_shell_result(&mut self, line: u64, event: EventRef<'_>, fields: &Fields) -> bool {
        let Some(id) = self.store.opt(fields.tool_call_id) else {
            return false;
        };
        let Some(command) = self.state.user_shells.remove(id) else {
            return false;
        };
        // Read ahead as a tool result when the line came from a large file: not used here.
        self.prepared.tool = None;
        if let Some(done) = self.lenient::<UserShellCompleted>(line, event) {
            let content = done.message(&command);
            self.conversation().push(Message::User {
                content,
                typed: None,
                autopilot_continuation: false,
                message_id: None,
                attachments: Vec::new(),
            });
        }
        true
    }

    /// Puts a tool result into the conversation when the main agent made (or ran) the call.
    fn tool_result(
        &mut self,
        line: u64,
        event: EventRef<'_>,
        call: Option<&OpenToolCall>,
        fields: &Fields,
    ) {
        let Some(id) = self.store.opt(fields.tool_call_id).map(str::to_owned) else {
            return;
        };
        let agent = call.map_or(event.agent_id, |c| c.agent_id.as_deref());
        if agent.is_some() {
            return;
        }
        let name = call.map(|c| c.name.clone()).unwrap_or_default();
        // Deserialized ahead when the line came from a large file (same bytes, same result).
        let parsed = match self.prepared.tool.take() {
            Some(parsed) => parsed,
            None => self.tool_read.read(event.data),
        };
        let (content, success) = match self.checked(line, event, parsed) {
            Some(ToolOutcome {
                content,
                success,
                escaped,
            }) => {
                if escaped {
                    self.note_escaped(&content);
                }
                (content, success)
            }
            // Still answer the call, so the history stays valid.
            None => (String::new(), fields.success == Some(true)),
        };
        let images = if success {
            ToolImage::of_result(event.data)
        } else {
            Vec::new()
        };
        self.conversation().add_tool_result(
            Message::Tool {
                tool_call_id: id.clone(),
                name,
                content,
                success,
                images,
            },
            &id,
        );
    }
}

/// Folds events given in journal order (their line sizes are those of their serialized form).
pub fn fold<I>(events: I) -> SessionState
where
    I: IntoIterator,
    I::Item: Borrow<Event>,
{
    let mut folder = Folder::new();
    for event in events {
        folder.apply(event.borrow());
    }
    folder.into_state()
}

/// A journal folded from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedJournal {
    /// The state after the last complete line.
    pub state: SessionState,
    /// Offset of a last line without `\n` (a torn write, or a writer mid-line); not folded.
    pub torn_tail_at: Option<u64>,
}

/// Folds the journal at `path`. A damaged line in the middle is an error naming it; an
/// unterminated last line is left out and reported.
pub fn fold_file(path: &Path) -> Result<FoldedJournal, ReplayError> {
    let file = File::open(path).map_err(|e| ReplayError::io(path, e))?;
    let mut folder = Folder::new();
    let torn_tail_at = fold_tail(path, file, &mut folder, 0, 0, u64::MAX, None)?;
    Ok(FoldedJournal {
        state: folder.into_state(),
        torn_tail_at,
    })
}

pub(crate) use crate::fold_read::fold_tail;
