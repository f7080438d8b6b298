//! `permission.*` payloads: asking whether a tool call may run, and the answer.
//!
//! The request and result shapes are large tagged unions (by `kind`) that grow with each
//! runtime; they stay raw JSON so a newer kind neither fails to parse nor loses fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload;

/// `permission.requested`: a tool call needs approval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequested {
    /// Id the answer refers to.
    pub request_id: String,
    /// What is asked, by `kind`: `shell`, `write`, `read`, `mcp`, `url`, `memory`,
    /// `custom-tool`, `hook`, `extension-management`, `factory`, `extension-permission-access`,
    /// `extension-env-access`.
    pub permission_request: Value,
    /// The prompt a UI shows, by `kind` (`commands`, `write`, `read`, `mcp`, `url`, `memory`,
    /// `custom-tool`, `path`, `hook`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_request: Option<Value>,
    /// Mode of the owning turn: `interactive`, `plan` or `autopilot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_mode: Option<String>,
    /// Risk metadata from the tool host, display only (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub risk_assessment: Option<Value>,
    /// True when a permissionRequest hook already decided and no client action is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by_hook: Option<bool>,
}
payload!(PermissionRequested, "permission.requested");

/// `permission.completed`: the request was answered; UIs dismiss their prompt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionCompleted {
    /// The answered request.
    pub request_id: String,
    /// The tool call the request was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The answer, by `kind`: `approved`, `approved-for-session`, `approved-for-location`,
    /// `cancelled`, `denied-by-rules`, `denied-no-approval-rule-and-could-not-request-from-user`,
    /// `denied-interactively-by-user`, `denied-by-content-exclusion-policy`,
    /// `denied-by-permission-request-hook`.
    pub result: Value,
    /// Who decided: `assisted_approval`, `human_response`, `host_policy`,
    /// `unattended_fallback`, `authorization_carry_forward` (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_source: Option<String>,
}
payload!(PermissionCompleted, "permission.completed");

impl PermissionCompleted {
    /// The result's `kind`, which is all most consumers branch on.
    pub fn result_kind(&self) -> Option<&str> {
        self.result.get("kind").and_then(Value::as_str)
    }
}
