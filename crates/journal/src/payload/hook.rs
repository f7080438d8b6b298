//! `hook.*` payloads: one user-configured hook invocation (preToolUse, postToolUse, ...).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::payload;

/// `hook.start`: a hook is invoked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookStart {
    /// Id shared with the matching [`HookEnd`].
    pub hook_invocation_id: String,
    /// Hook kind, e.g. `preToolUse`, `postToolUse`, `sessionStart`.
    pub hook_type: String,
    /// What the hook receives (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub input: Option<Value>,
    /// Parent tool call when a sub-agent triggered the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}
payload!(HookStart, "hook.start");

/// `hook.end`: a hook finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookEnd {
    /// Id of the matching [`HookStart`].
    pub hook_invocation_id: String,
    /// Hook kind, e.g. `preToolUse`, `postToolUse`, `sessionStart`.
    pub hook_type: String,
    /// What the hook produced (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub output: Option<Value>,
    /// Whether the hook succeeded.
    pub success: bool,
    /// Why the hook failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<HookError>,
    /// Parent tool call when a sub-agent triggered the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
}
payload!(HookEnd, "hook.end");

/// The error of a failed hook in [`HookEnd`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookError {
    /// Human-readable message.
    pub message: String,
    /// Stack trace, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Where the hook came from (e.g. its plugin), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
