//! The compaction of a session's history: `session.compaction_start` when a summary call to
//! the model begins, `session.compaction_complete` with the summary and what it replaces.

use serde::{Deserialize, Serialize};

use super::payload;

/// `session.compaction_start`: a summary call to the model begins (an LLM call outside any
/// turn), with how full the context window was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionStart {
    /// Tokens of the system message(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_tokens: Option<u64>,
    /// Tokens of the other messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_tokens: Option<u64>,
    /// Tokens of the tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions_tokens: Option<u64>,
    /// Tokens of the whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_tokens: Option<u64>,
    /// The context window the compaction targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
    /// What started it: `threshold`, `context_limit_retry`, `manual`, `memory_pressure`,
    /// `model_switch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
}
payload!(CompactionStart, "session.compaction_start");

/// `session.compaction_complete`: the summary call ended; on success the summary replaces the
/// oldest `messagesRemoved` non-system messages of the model's history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionComplete {
    /// Whether a summary was made.
    pub success: bool,
    /// Why not, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The HTTP status of the summary call that failed, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Tokens of the request before the compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_compaction_tokens: Option<u64>,
    /// Non-system messages before the compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_compaction_messages_length: Option<u64>,
    /// Non-system messages the summary replaces (the oldest ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_removed: Option<u64>,
    /// Tokens those messages held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_removed: Option<u64>,
    /// Focus instructions of a manual compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
    /// The summary the model wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_content: Option<String>,
    /// The context window the compaction targeted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
    /// What started it (see [`CompactionStart::trigger`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// What the summary call used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_tokens_used: Option<CompactionTokensUsed>,
}
payload!(CompactionComplete, "session.compaction_complete");

/// `compactionTokensUsed` of [`CompactionComplete`], in `assistant.usage` terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionTokensUsed {
    /// Input tokens of the summary call.
    pub input_tokens: u64,
    /// Output tokens of the summary call.
    pub output_tokens: u64,
    /// Cached input tokens reused.
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Duration of the call, in milliseconds.
    pub duration: u64,
    /// The model that summarized.
    pub model: String,
}
