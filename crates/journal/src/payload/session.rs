//! `session.*` payloads: the session's lifecycle from start (or resume) to shutdown.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::payload;

/// The `producer` turnstile writes in `session.start`: the Copilot CLI's own, which the tools
/// that read `~/.copilot/session-state/` recognise a Copilot session by (`docs/decisions.md`).
pub const PRODUCER: &str = "copilot-agent";

/// The `copilotVersion` turnstile writes in `session.start`: the Copilot CLI release whose
/// journal format turnstile writes and is checked against (`fixtures/copilot-runtime/`).
/// turnstile's own version is in the main agent's `system.message`
/// ([`super::SystemMessageMetadata::turnstile`]).
pub const COPILOT_VERSION: &str = "1.0.81-0";

/// `session.start`: the first event of every journal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStart {
    /// The session's id (the journal's folder name).
    pub session_id: String,
    /// Schema version of the event format; the runtime writes 1.
    pub version: u32,
    /// Who wrote the journal, e.g. `copilot-agent`.
    pub producer: String,
    /// Version of the writing application.
    pub copilot_version: String,
    /// When the session was created (ISO 8601, milliseconds, `Z`).
    pub start_time: String,
    /// Model selected at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_model: Option<String>,
    /// Reasoning effort, e.g. `none`, `low`, `medium`, `high`, `xhigh`, `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Reasoning summary mode: `none`, `concise` or `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
    /// Output verbosity: `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    /// Context tier (`default`, `long_context`); the runtime writes `null` for untiered models.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub context_tier: Option<Option<String>>,
    /// Routing preference for the `auto` model: `efficiency`, `balance`, `intelligence`, `fast`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_tier: Option<String>,
    /// Session limits configured at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_limits: Option<SessionLimits>,
    /// Working directory and git context at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<WorkingDirectoryContext>,
    /// Per-session override of the built-in GitHub MCP server, kept for cold resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github_mcp_tool_config: Option<GitHubMcpToolConfig>,
    /// Whether another client already had the session open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub already_in_use: Option<bool>,
    /// Whether the session can be steered remotely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_steerable: Option<bool>,
    /// Parent session whose context this one continues (telemetry is reported under it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detached_from_spawning_parent_session_id: Option<String>,
}
payload!(SessionStart, "session.start");

/// `session.resume`: a process picked the session up again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionResume {
    /// When the session was resumed (ISO 8601).
    pub resume_time: String,
    /// Number of persisted events at resume.
    pub event_count: u64,
    /// Size of `events.jsonl` at resume; absent when it could not be stat'd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_file_size_bytes: Option<u64>,
    /// Model selected at resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_model: Option<String>,
    /// Reasoning effort, e.g. `none`, `low`, `medium`, `high`, `xhigh`, `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Reasoning summary mode: `none`, `concise` or `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
    /// Output verbosity: `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    /// Context tier (`default`, `long_context`); `null` when none is active.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub context_tier: Option<Option<String>>,
    /// Routing preference for the `auto` model: `efficiency`, `balance`, `intelligence`, `fast`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_tier: Option<String>,
    /// Session limits at resume; `null` when none are active.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub session_limits: Option<Option<SessionLimits>>,
    /// Working directory and git context at resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<WorkingDirectoryContext>,
    /// Whether another client already had the session open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub already_in_use: Option<bool>,
    /// Whether the session can be steered remotely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_steerable: Option<bool>,
    /// True when tool calls and permission requests left in flight stay pending after resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_pending_work: Option<bool>,
    /// True when the resume joined live work another client was driving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_was_active: Option<bool>,
}
payload!(SessionResume, "session.resume");

/// `session.error`: an error shown in the timeline (model call, auth, quota, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionError {
    /// Category, e.g. `authentication`, `authorization`, `quota`, `rate_limit`, `context_limit`, `query`.
    pub error_type: String,
    /// Fine-grained upstream code, e.g. `rate_limited`, `quota_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Set on rate limits: an `auto_mode_switch.requested` follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible_for_auto_switch: Option<bool>,
    /// Human-readable message.
    pub message: String,
    /// Recovery action: `sign_in`, `switch_account`, `show_account`, `review_sandbox_policy`,
    /// `allow_sandbox_outbound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
    /// Stack trace, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// HTTP status of the upstream request (0..=999).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// `x-github-request-id` of the failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_call_id: Option<String>,
    /// `x-copilot-service-request-id` of the failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_request_id: Option<String>,
    /// A URL the user can open about this error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
payload!(SessionError, "session.error");

/// `session.idle` (ephemeral): nothing is running any more.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdle {
    /// True when the loop that just ended was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<bool>,
    /// Session mode when it went idle: `interactive`, `plan` or `autopilot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}
payload!(SessionIdle, "session.idle");

/// `session.warning`: something the user should know that did not stop the session (the
/// engine records one when autopilot gives up).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionWarning {
    /// Category, e.g. `autopilot`.
    pub warning_type: String,
    /// What happened, for people.
    pub message: String,
    /// A link with more to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// What the user can do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<Value>,
}
payload!(SessionWarning, "session.warning");

/// `session.task_complete`: the agent called `task_complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTaskComplete {
    /// The agent's summary of the finished task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Whether the completion was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Completion decision: `completed`, `continue` or `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Runtime rationale for the decision, when one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Autopilot objective the reviewer evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective_id: Option<i64>,
}
payload!(SessionTaskComplete, "session.task_complete");

/// `session.shutdown`: the last event of a cleanly closed session, with its usage totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionShutdown {
    /// `routine` or `error`.
    pub shutdown_type: String,
    /// What went wrong when `shutdown_type` is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// Premium requests used by the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_premium_requests: Option<Number>,
    /// Nano-AI units used by the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_nano_aiu: Option<Number>,
    /// Token counts per token type (`{"tokenCount": n}` each), session-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_details: Option<Map<String, Value>>,
    /// Time spent in model API calls, in milliseconds.
    pub total_api_duration_ms: u64,
    /// Session start as Unix milliseconds.
    pub session_start_time: u64,
    /// Size of `events.jsonl` at shutdown; absent when it could not be stat'd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_file_size_bytes: Option<u64>,
    /// Lines and files changed during the session.
    pub code_changes: CodeChanges,
    /// Usage per model id (`requests`, `usage`, `totalNanoAiu`, `tokenDetails`).
    pub model_metrics: Map<String, Value>,
    /// Usage per agent instance (`main` for the main conversation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_metrics: Option<Map<String, Value>>,
    /// Model selected at shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_model: Option<String>,
    /// Tokens in the context window at shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_tokens: Option<u64>,
    /// System-message tokens at shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_tokens: Option<u64>,
    /// Non-system message tokens at shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_tokens: Option<u64>,
    /// Tool-definition tokens at shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions_tokens: Option<u64>,
}
payload!(SessionShutdown, "session.shutdown");

/// Working directory and git context of a session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkingDirectoryContext {
    /// The working directory.
    pub cwd: String,
    /// Root of the enclosing git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_root: Option<String>,
    /// `owner/name` (GitHub) or `org/project/repo` (Azure DevOps) from the remote URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Hosting platform: `github` or `ado`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_type: Option<String>,
    /// Raw host of the remote URL, e.g. `github.com`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_host: Option<String>,
    /// Current branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Head commit of the branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_commit: Option<String>,
    /// Base commit of the branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// Set on the preliminary event of a directory change, before git context is resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_git_context: Option<bool>,
}

/// `session.context_changed`: the session's working directory and its git context after a
/// change (a client's `setWorkingDirectory` or `recordContextChange`); the preliminary event
/// of a directory change has `pendingGitContext` and no repository facts yet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionContextChanged(pub WorkingDirectoryContext);
payload!(SessionContextChanged, "session.context_changed");

/// Optional limits of a session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionLimits {
    /// AI credits allowed in the current accounting window (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ai_credits: Option<Number>,
}

/// Per-session configuration of the built-in GitHub MCP server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitHubMcpToolConfig {
    /// Use the read-write endpoint and request all toolsets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_all_tools: Option<bool>,
    /// Extra toolsets requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_toolsets: Option<Vec<String>>,
    /// Extra tools requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tools: Option<Vec<String>>,
    /// Request the insiders build of the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_insiders_mode: Option<bool>,
}

/// Code changes of a whole session (`session.shutdown`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeChanges {
    /// Lines added.
    pub lines_added: u64,
    /// Lines removed.
    pub lines_removed: u64,
    /// Paths of the files modified.
    pub files_modified: Vec<String>,
}
