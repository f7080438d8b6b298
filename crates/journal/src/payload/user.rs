//! `user.message`: what the user (or the runtime on the user's behalf) sent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload;

/// `user.message`: a user prompt, as displayed and as sent to the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// The text as shown in the timeline.
    pub content: String,
    /// The text as sent to the model (datetime header, reminders, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transformed_content: Option<String>,
    /// Origin, e.g. `system` for autopilot nudges, `skill-pdf`, `agent-<id>`; absent for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Stable id of the logical message (the id `send` returned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Files, selections, blobs or GitHub references attached (a large tagged union; kept raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<Value>>,
    /// Document MIME types sent natively rather than as tagged files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_native_document_mime_types: Option<Vec<String>>,
    /// Native-document attachments that fell back to tagged-file paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_document_path_fallback_paths: Option<Vec<String>>,
    /// Mode when sent: `interactive`, `plan`, `autopilot` or `shell`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_mode: Option<String>,
    /// True when autopilot injected the message to keep the agent going.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_autopilot_continuation: Option<bool>,
    /// When it reached the loop: `idle`, `steering` or `queued`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// Interaction this message starts or joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// Turn that consumed the message; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Parent agent task, for background telemetry of this user turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_task_id: Option<String>,
}
payload!(UserMessage, "user.message");
