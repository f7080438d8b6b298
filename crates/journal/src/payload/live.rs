//! Ephemeral notices the clients expect around a message: context usage, title, tool set,
//! send queue, model dispatch and the agent loop going idle.

use serde::{Deserialize, Serialize};

use super::payload;

/// `session.usage_info` (ephemeral): how full the context window is before a model call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsageInfo {
    /// The model's context window, in tokens.
    pub token_limit: u64,
    /// Tokens of the request: system + conversation + tool definitions.
    pub current_tokens: u64,
    /// Messages of the request (system, user, assistant and tool messages).
    pub messages_length: u64,
    /// Tokens of the system message(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_tokens: Option<u64>,
    /// Tokens of the other messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_tokens: Option<u64>,
    /// Tokens of the tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_definitions_tokens: Option<u64>,
    /// True on the first of these events of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_initial: Option<bool>,
}
payload!(SessionUsageInfo, "session.usage_info");

/// `session.title_changed` (ephemeral): the session's display title.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTitleChanged {
    /// The new title.
    pub title: String,
}
payload!(SessionTitleChanged, "session.title_changed");

/// `session.tools_updated` (ephemeral): the tools offered to a model were resolved again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionToolsUpdated {
    /// The model the tools apply to.
    pub model: String,
}
payload!(SessionToolsUpdated, "session.tools_updated");

/// `pending_messages.modified` (ephemeral, empty): the queue of messages waiting to run changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingMessagesModified {}
payload!(PendingMessagesModified, "pending_messages.modified");

/// `session.todos_changed` (ephemeral, empty): a statement wrote the `todos` or `todo_deps`
/// table of the session database; a client reads the tables again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionTodosChanged {}
payload!(SessionTodosChanged, "session.todos_changed");

/// `model.call_start` (ephemeral): a model request is being sent for a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCallStart {
    /// The turn that makes the call.
    pub turn_id: String,
    /// The model called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Previous response id sent with the request (internal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// Experimental attribution of the call (kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<serde_json::Value>,
}
payload!(ModelCallStart, "model.call_start");

/// `assistant.idle` (ephemeral): the agent loop stopped (before `session.idle`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantIdle {
    /// True when the loop was aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<bool>,
}
payload!(AssistantIdle, "assistant.idle");

/// `session.background_tasks_changed` (ephemeral, empty): a shell or a sub-agent started or
/// ended, or the session let its background work go as it closed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionBackgroundTasksChanged {}
payload!(
    SessionBackgroundTasksChanged,
    "session.background_tasks_changed"
);

/// `session.managed_settings_resolved` (ephemeral): which enterprise-managed settings the
/// session applies and where they came from, sent as a session starts or resumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionManagedSettingsResolved {
    /// The one channel that contributed, `mixed`, or `none`.
    pub source: String,
    /// An account or organisation layer was present.
    pub server_managed: bool,
    /// A device (MDM, file) layer was present.
    pub device_managed: bool,
    /// A layer injected by the SDK host was present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_managed: Option<bool>,
    /// The policy-helper layer (the weakest) was present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_helper_managed: Option<bool>,
    /// Policy could not be determined and the session fell back to its restrictions.
    pub fail_closed: bool,
    /// The sandbox is on only because policy could not be determined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_enabled_by_undetermined_policy: Option<bool>,
    /// Policy disables bypass-permissions ("yolo") mode.
    pub bypass_permissions_disabled: bool,
    /// Two or more managed sources gave permission allowlists, which are intersected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions_allow_intersected: Option<bool>,
    /// The setting keys under management.
    pub managed_keys: Vec<String>,
    /// The managed settings in force (any JSON; absent without managed policy).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub settings: Option<serde_json::Value>,
}
payload!(
    SessionManagedSettingsResolved,
    "session.managed_settings_resolved"
);

impl SessionManagedSettingsResolved {
    /// No managed layer at all: what a session without enterprise policy applies.
    pub fn none() -> Self {
        SessionManagedSettingsResolved {
            source: "none".into(),
            server_managed: false,
            device_managed: false,
            client_managed: Some(false),
            policy_helper_managed: None,
            fail_closed: false,
            sandbox_enabled_by_undetermined_policy: None,
            bypass_permissions_disabled: false,
            permissions_allow_intersected: None,
            managed_keys: Vec::new(),
            settings: None,
        }
    }
}
