//! `subagent.*` payloads: a sub-agent started by a `task` call, and how it ended. The
//! sub-agent's own events carry its id in the envelope's `agentId`.

use serde::{Deserialize, Serialize};

use super::payload;

/// `subagent.started`: a sub-agent begins, spawned by the tool call `tool_call_id`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStarted {
    /// The parent's tool call that spawned the sub-agent.
    pub tool_call_id: String,
    /// Internal name of the sub-agent (its agent type, e.g. "explore").
    pub agent_name: String,
    /// Human-readable name (e.g. "Explore Agent").
    pub agent_display_name: String,
    /// What the sub-agent does.
    pub agent_description: String,
    /// Model the sub-agent runs (or ran) with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where the model input came from (task_argument, subagent_configuration, custom_agent_definition, unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_model_source: Option<String>,
    /// What chose the model (explicit_override, configured_required, configured_preference, complementary_default, session_inheritance, agent_definition_default, runtime_policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_selection_source: Option<String>,
    /// Root id of the factory run that spawned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factory_run_id: Option<String>,
    /// Task-registry id of the spawning sub-agent; absent for the root session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Whether it can be resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumable: Option<bool>,
    /// Type of the sub-agent selected at spawn time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// "sync" or "background".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<String>,
}
payload!(SubagentStarted, "subagent.started");

/// `subagent.completed`: the sub-agent finished with an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentCompleted {
    /// The parent's tool call that spawned the sub-agent.
    pub tool_call_id: String,
    /// Internal name of the sub-agent (its agent type, e.g. "explore").
    pub agent_name: String,
    /// Human-readable name (e.g. "Explore Agent").
    pub agent_display_name: String,
    /// Model the sub-agent runs (or ran) with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// First model an inference request was started for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_dispatched_model: Option<String>,
    /// Model configured for this sub-agent by the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_model_preference: Option<String>,
    /// Model the parent named on the task call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_model_override: Option<String>,
    /// Whether that model matched the configured preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_model_matches_preference: Option<bool>,
    /// Why the explicit model did not become the effective one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override_reason: Option<String>,
    /// What chose the model (explicit_override, configured_required, configured_preference, complementary_default, session_inheritance, agent_definition_default, runtime_policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_selection_source: Option<String>,
    /// Whether the first dispatched model matched the configured preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_model_matches_actual: Option<bool>,
    /// Tool calls the sub-agent made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tool_calls: Option<u64>,
    /// Tokens (input + output) its model calls took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Wall-clock time it ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Whether it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<bool>,
}
payload!(SubagentCompleted, "subagent.completed");

/// `subagent.failed`: the sub-agent ended without an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentFailed {
    /// The parent's tool call that spawned the sub-agent.
    pub tool_call_id: String,
    /// Internal name of the sub-agent (its agent type, e.g. "explore").
    pub agent_name: String,
    /// Human-readable name (e.g. "Explore Agent").
    pub agent_display_name: String,
    /// Why it failed.
    pub error: String,
    /// Model the sub-agent runs (or ran) with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// First model an inference request was started for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_dispatched_model: Option<String>,
    /// Model configured for this sub-agent by the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_model_preference: Option<String>,
    /// Model the parent named on the task call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_model_override: Option<String>,
    /// Whether that model matched the configured preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_model_matches_preference: Option<bool>,
    /// Why the explicit model did not become the effective one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override_reason: Option<String>,
    /// What chose the model (explicit_override, configured_required, configured_preference, complementary_default, session_inheritance, agent_definition_default, runtime_policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_selection_source: Option<String>,
    /// Whether the first dispatched model matched the configured preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configured_model_matches_actual: Option<bool>,
    /// Tool calls the sub-agent made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tool_calls: Option<u64>,
    /// Tokens (input + output) its model calls took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Wall-clock time it ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}
payload!(SubagentFailed, "subagent.failed");
