//! What the timeline is made of: turns (with their tool calls, permissions, hooks and
//! problems) and the session-level marks between them. Every text field is already clipped
//! to its cap, so an item's size does not follow the journal's.

/// Who ran a turn: the main agent, or a sub-agent by the envelope's `agentId`.
pub type Lane = Option<String>;

/// One LLM call: `assistant.turn_start` to `assistant.turn_end`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// 1-based count of turns in the journal (all lanes).
    pub ordinal: u64,
    /// The recorded `turnId`.
    pub turn_id: String,
    /// The agent that ran it.
    pub lane: Lane,
    /// Line of its `assistant.turn_start`.
    pub line: u64,
    /// Milliseconds from the turn's start to its answer (`assistant.message`).
    pub model_ms: u64,
    /// Milliseconds from the first tool start to the last tool result of the turn.
    pub tool_ms: u64,
    /// Milliseconds from start to `assistant.turn_end` (or the turn's last event).
    pub total_ms: u64,
    /// The answer text (clipped).
    pub answer: Clipped,
    /// Output tokens the journal records for the turn (`assistant.message.outputTokens`).
    pub output_tokens: Option<u64>,
    /// Tool calls, in request order (at most [`crate::timeline::MAX_CALLS_PER_TURN`]).
    pub calls: Vec<ToolCall>,
    /// Calls beyond the cap (counted only).
    pub calls_left_out: u64,
    /// Permissions, hooks, errors, aborts and warnings of the turn not tied to one call.
    pub notes: Vec<Note>,
    /// False when the journal has no `assistant.turn_end` for it.
    pub ended: bool,
}

/// One tool call of a turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as compact JSON (clipped).
    pub arguments: Clipped,
    /// Milliseconds from `tool.execution_start` to `tool.execution_complete`.
    pub duration_ms: Option<u64>,
    /// The outcome; `None` while no result is recorded.
    pub outcome: Option<Outcome>,
    /// Permissions and hooks about this call.
    pub notes: Vec<Note>,
}

/// A tool call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// `success` of `tool.execution_complete`.
    pub success: bool,
    /// The result text, or the error message (clipped).
    pub text: Clipped,
    /// The error code (`denied`, `interrupted`, ...).
    pub code: Option<String>,
}

/// Text cut to a cap, with the number of bytes left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Clipped {
    /// The first bytes of the text.
    pub shown: String,
    /// Bytes left out.
    pub left_out: usize,
}

impl Clipped {
    /// The first `max` bytes of `s`.
    pub fn new(s: &str, max: usize) -> Self {
        let (shown, left_out) = crate::escape::clip(s, max);
        Clipped {
            shown: shown.to_owned(),
            left_out,
        }
    }
}

/// Something that happened inside a turn, or to a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// What kind of thing.
    pub kind: NoteKind,
    /// Its line in the journal.
    pub line: u64,
    /// What to show (clipped).
    pub text: Clipped,
    /// Whether it is bad news (denied, failed, error).
    pub bad: bool,
}

/// The kinds of [`Note`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// `permission.requested` / `permission.completed`.
    Permission,
    /// `hook.start` / `hook.end`.
    Hook,
    /// `session.error`.
    Error,
    /// `abort`.
    Abort,
    /// `session.warning`.
    Warning,
    /// `session.compaction_complete`: the history was summarised.
    Compaction,
    /// `session.info`, sub-agent starts and ends and other facts.
    Info,
}

impl NoteKind {
    /// The CSS class and `data-kind` value.
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Permission => "permission",
            NoteKind::Hook => "hook",
            NoteKind::Error => "error",
            NoteKind::Abort => "abort",
            NoteKind::Warning => "warning",
            NoteKind::Compaction => "compaction",
            NoteKind::Info => "info",
        }
    }
}

/// A session-level event between turns.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// What kind of mark.
    pub kind: MarkKind,
    /// Its line in the journal.
    pub line: u64,
    /// Its agent, when a sub-agent's.
    pub lane: Lane,
    /// What to show (clipped).
    pub text: Clipped,
}

/// The kinds of [`Mark`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// `session.start`.
    Start,
    /// A user's (or client's) `user.message`.
    Prompt,
    /// An autopilot continuation.
    Nudge,
    /// `session.resume`.
    Resume,
    /// The process before a resume ended without `session.shutdown`.
    Crash,
    /// `session.shutdown`.
    Shutdown,
    /// `session.task_complete`.
    TaskComplete,
    /// `session.error` outside a turn.
    Error,
    /// `abort` outside a turn.
    Abort,
    /// `session.warning` outside a turn.
    Warning,
    /// A line the reader could not read, or data that does not fit its type.
    Unreadable,
    /// A line longer than readers hold (`TURNSTILE_MAX_LINE_BYTES`): its number and size only.
    Oversized,
    /// `session.compaction_complete` outside a turn.
    Compaction,
    /// `session.model_change`: always a mark, wherever it happens, so a switch is seen.
    ModelChange,
    /// Anything else worth a line (sub-agent start/end, truncation, rewind, ...).
    Info,
}

impl MarkKind {
    /// The CSS class and `data-kind` value.
    pub fn as_str(self) -> &'static str {
        match self {
            MarkKind::Start => "start",
            MarkKind::Prompt => "prompt",
            MarkKind::Nudge => "nudge",
            MarkKind::Resume => "resume",
            MarkKind::Crash => "crash",
            MarkKind::Shutdown => "shutdown",
            MarkKind::TaskComplete => "task-complete",
            MarkKind::Error => "error",
            MarkKind::Abort => "abort",
            MarkKind::Warning => "warning",
            MarkKind::Unreadable => "unreadable",
            MarkKind::Oversized => "oversized",
            MarkKind::Compaction => "compaction",
            MarkKind::ModelChange => "model-change",
            MarkKind::Info => "info",
        }
    }
}

/// One thing of the timeline, in the order it is complete.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A turn, once it ended (or the journal did).
    Turn(Turn),
    /// A mark, where it happened.
    Mark(Mark),
}
