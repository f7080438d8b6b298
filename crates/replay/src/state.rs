//! [`SessionState`]: everything a fold of a journal knows about its session.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use turnstile_journal::Uuid;
use turnstile_journal::payload::WorkingDirectoryContext;

use crate::conversation::{Hidden, Message};
use crate::open_work::OpenWork;
use crate::tracking::Counters;
pub use crate::tracking::{TaskCompletion, ToolOutcomes};

/// How many recent errors and warnings a state keeps (the counts are exact).
pub const KEPT_RECENT: usize = 16;

/// The session rebuilt from its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// Who the session is and where it runs.
    pub session: SessionMeta,
    /// The messages the model sees on its next call, in order (system message first).
    pub conversation: Vec<Message>,
    /// For each message of `conversation`, the view position of the event that added it (see
    /// `view_events`); a rewind drops the messages of the events it removes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<u64>,
    /// Persisted events in the view: folded, less the rewind markers and the events they
    /// removed. The next event's view position.
    #[serde(default)]
    pub view_events: u64,
    /// Rewind markers (`session.snapshot_rewind` on disk) applied.
    #[serde(default)]
    pub rewinds: u64,
    /// Counts of turns, messages, tool outcomes, task completion, errors and resumes.
    pub counts: Counters,
    /// Turns since the last `user.message` of the main agent (the next `turnId`).
    pub interaction_turns: u64,
    /// `interactionId` of the last user message, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// Turns, tool calls and requests that started and have not finished.
    pub open_work: OpenWork,
    /// The last few `session.error` events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_errors: Vec<SessionErrorInfo>,
    /// The last `session.resume`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_resume: Option<ResumeInfo>,
    /// `session.shutdown` events.
    pub shutdowns: u64,
    /// Successful `session.compaction_complete` events.
    pub compactions: u64,
    /// `session.truncation` events applied to the conversation.
    #[serde(default)]
    pub truncations: u64,
    /// What truncations of the current message took out of the view; the next main-agent
    /// `user.message` puts it back (see [`Hidden`]).
    #[serde(default, skip_serializing_if = "Hidden::is_empty")]
    pub hidden: Hidden,
    /// Commands the user ran in the session's shell (`tool.user_requested`) whose
    /// `tool.execution_complete` has not come yet: `toolCallId` -> command.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_shells: BTreeMap<String, String>,
    /// A finished compaction the model does not see yet (see [`PendingCompaction`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_compaction: Option<PendingCompaction>,
    /// Token usage.
    pub usage: Usage,
    /// Id of the last persisted event (the `parentId` of the next one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<Uuid>,
    /// The last persisted event is `session.shutdown`: the engine that wrote it closed the
    /// session, so work it left open was suspended there (its last client left while it
    /// waited on that client), not cut off by a crash.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shut_down: bool,
    /// Persisted events folded (lines of the journal).
    pub event_count: u64,
    /// Bytes of those events in the journal, newlines included.
    pub byte_size: u64,
    /// Events whose `data` did not fit the schema of their type (folded leniently).
    pub malformed_events: u64,
    /// The last few of those, as `type: reason`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_warnings: Vec<String>,
    /// Bytes recorded once by `session.binary_asset` (attached images), by asset id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub assets: BTreeMap<String, BinaryAsset>,
}

/// A background compaction that finished while its follow-up request was already built.
///
/// The Copilot runtime builds a turn's follow-up request as the turn's tool calls finish; a
/// compaction completing after that (its `session.compaction_complete` comes before the
/// turn's end) reaches the model one request later: at the next `user.message`, or at the
/// second `assistant.turn_start` after it, whichever comes first. A compaction that completes
/// while no main-agent turn is open (turnstile's, made before a request; a manual one) is
/// never pending: the next request carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCompaction {
    /// The summary the model wrote.
    pub summary: String,
    /// Non-system messages it replaces (those the conversation held when it started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// Main-agent turn starts seen since it finished.
    pub turn_starts: u32,
    /// View position of the `session.compaction_complete` (a rewind before it drops it).
    #[serde(default)]
    pub at: u64,
}

/// The bytes of one `session.binary_asset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BinaryAsset {
    /// MIME type of the bytes.
    pub mime_type: String,
    /// The bytes, base64.
    pub data: String,
}

impl SessionState {
    /// True when the journal ends mid-work: a resume must close something or the loop was
    /// running (this is the `sessionWasActive` of the resume plan).
    pub fn was_active(&self) -> bool {
        !self.open_work.is_idle()
    }

    /// `sessionWasActive` of a resume, as the Copilot CLI reports it: a session its engine
    /// shut down (work left open by a suspension included) was not active; one a crash cut
    /// off mid-work was.
    pub fn was_active_at_resume(&self) -> bool {
        self.was_active() && !self.shut_down
    }

    /// The working directory, when recorded.
    pub fn cwd(&self) -> Option<&str> {
        self.session.context.as_ref().map(|c| c.cwd.as_str())
    }
}

/// Session metadata from `session.start`, `session.resume` and mode/model changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// The session id of `session.start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Who wrote the journal (`copilot-agent`, `turnstile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
    /// Version of the writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copilot_version: Option<String>,
    /// `startTime` of `session.start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// The selected model (start, resume, `session.model_change`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Working directory and git context (start or last resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<WorkingDirectoryContext>,
    /// Agent mode: `interactive` (the runtime's initial mode), `plan`, `autopilot`.
    pub mode: String,
    /// The session limits in force: `session.start`'s, replaced by a `session.resume` that
    /// records its own (`null` there clears them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_limits: Option<turnstile_journal::payload::SessionLimits>,
}

impl Default for SessionMeta {
    fn default() -> Self {
        SessionMeta {
            session_id: None,
            producer: None,
            copilot_version: None,
            start_time: None,
            model: None,
            context: None,
            mode: "interactive".to_owned(),
            session_limits: None,
        }
    }
}

/// One `session.error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionErrorInfo {
    /// Category, e.g. `rate_limit`.
    pub error_type: String,
    /// The message.
    pub message: String,
    /// Line of the event.
    pub line: u64,
}

/// One `session.resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeInfo {
    /// `resumeTime`.
    pub resume_time: String,
    /// `eventCount` it recorded.
    pub event_count: u64,
    /// `sessionWasActive` it recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_was_active: Option<bool>,
    /// Line of the event.
    pub line: u64,
}

/// Token usage of the session.
///
/// `assistant.usage` is ephemeral, so per-call figures exist only while the loop runs
/// (`calls` and the token sums); on disk the runtime records totals in `session.shutdown`
/// (`atShutdown`, per model, cumulative over the whole session).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// `assistant.usage` events seen live.
    pub calls: u64,
    /// Sum of their figures.
    pub tokens: TokenCounts,
    /// Model metrics of the last `session.shutdown`, by model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub at_shutdown: BTreeMap<String, ModelUsage>,
    /// `totalApiDurationMs` of the last `session.shutdown` (cumulative, like its metrics).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub api_duration_ms_at_shutdown: u64,
    /// `codeChanges` of the last `session.shutdown` (cumulative, like its metrics).
    #[serde(default, skip_serializing_if = "CodeTotals::is_empty")]
    pub code_changes_at_shutdown: CodeTotals,
    /// `agentMetrics` of the last `session.shutdown`, by agent (`main`, a sub-agent's id).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents_at_shutdown: BTreeMap<String, AgentUsage>,
    /// The LLM calls the journal held when the last `session.shutdown` was written
    /// ([`crate::tracking::Counters::llm_calls`]): the calls after it are not in its totals.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub llm_calls_at_shutdown: u64,
}

/// One agent's usage as `session.shutdown`'s `agentMetrics` reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentUsage {
    /// The agent's type (`explore`, ...), for a sub-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// Its label, as its `subagent.started` gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_display_name: Option<String>,
    /// Time its model calls took.
    #[serde(default)]
    pub api_duration_ms: u64,
    /// Its calls and tokens by model.
    #[serde(default)]
    pub models: BTreeMap<String, ModelUsage>,
}

/// Lines and files the session's file tools changed (`codeChanges` of `session.shutdown`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CodeTotals {
    /// Lines added.
    pub lines_added: u64,
    /// Lines removed.
    pub lines_removed: u64,
    /// Absolute paths of the files changed, in the order they were first changed.
    pub files_modified: Vec<String>,
}

impl CodeTotals {
    /// True when nothing was changed.
    pub fn is_empty(&self) -> bool {
        self.lines_added == 0 && self.lines_removed == 0 && self.files_modified.is_empty()
    }

    /// Adds one change of `path`.
    pub fn add(&mut self, path: &str, added: u64, removed: u64) {
        self.lines_added += added;
        self.lines_removed += removed;
        if !self.files_modified.iter().any(|p| p == path) {
            self.files_modified.push(path.to_owned());
        }
    }
}

/// True for 0 (a figure left out of a checkpoint when nothing was recorded).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Token counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCounts {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Tokens read from the prompt cache.
    pub cache_read: u64,
    /// Tokens written to the prompt cache.
    pub cache_write: u64,
    /// Output tokens spent reasoning.
    pub reasoning: u64,
}

/// Usage of one model as `session.shutdown` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    /// Model calls.
    pub requests: u64,
    /// Token counters.
    pub tokens: TokenCounts,
}
