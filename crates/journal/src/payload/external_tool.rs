//! `external_tool.*` payloads: a tool call handed to the client to run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload;

/// `external_tool.requested`: the client is asked to run a tool it provides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalToolRequested {
    /// Id the client's answer refers to.
    pub request_id: String,
    /// Session the request belongs to.
    pub session_id: String,
    /// The tool call's id.
    pub tool_call_id: String,
    /// The tool to run.
    pub tool_name: String,
    /// Provider that offered the tool, so the host routes back to it; may be `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub provider_id: Option<Option<String>>,
    /// Arguments for the tool (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub arguments: Option<Value>,
    /// The session's working directory, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// W3C `traceparent` of the execute_tool span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// W3C `tracestate` of the execute_tool span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}
payload!(ExternalToolRequested, "external_tool.requested");

/// `external_tool.completed` (ephemeral): the client answered; UIs dismiss their prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalToolCompleted {
    /// The answered request.
    pub request_id: String,
}
payload!(ExternalToolCompleted, "external_tool.completed");
