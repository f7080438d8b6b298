//! Ephemeral notices of the session's user interface: a form the user is asked to fill in
//! (`elicitation.requested`/`elicitation.completed`) and what the session's clients can show
//! (`capabilities.changed`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload;

/// `elicitation.requested` (ephemeral): a form (or a URL) for the user; a client with an
/// elicitation handler answers it with `session.ui.handlePendingElicitation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequested {
    /// The id the answer names.
    pub request_id: String,
    /// The model's tool call the request belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The MCP server that asked; absent when the session itself asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_source: Option<String>,
    /// What the user is asked for.
    pub message: String,
    /// "form" or "url".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The form's JSON schema (form mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// The URL to open (url mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}
payload!(ElicitationRequested, "elicitation.requested");

/// `elicitation.completed` (ephemeral): the user's answer to an elicitation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleted {
    /// The request answered.
    pub request_id: String,
    /// "accept", "decline" or "cancel".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The form's values (accept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}
payload!(ElicitationCompleted, "elicitation.completed");

/// `capabilities.changed` (ephemeral): what the session's clients can show changed (a client
/// with an elicitation handler joined, or the last one left).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilitiesChanged {
    /// The UI capabilities that changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiCapabilities>,
}
payload!(CapabilitiesChanged, "capabilities.changed");

/// `capabilities.changed`'s `ui`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiCapabilities {
    /// A client answers elicitations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<bool>,
}
