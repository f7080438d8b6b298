//! `session.model_change`: the session's model (or its reasoning effort) was switched.

use serde::{Deserialize, Serialize};

use super::payload;

/// `session.model_change`: the model selected for the next calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionModelChange {
    /// Context tier after the change; `null` clears one (the runtime writes `null` untiered).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub context_tier: Option<Option<String>>,
    /// The model now selected.
    pub new_model: String,
    /// The model selected before, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_model: Option<String>,
    /// Reasoning effort before the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_reasoning_effort: Option<String>,
    /// Reasoning effort after the change; `null` when cleared.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub reasoning_effort: Option<Option<String>>,
    /// Reasoning summary mode before the change: `none`, `concise`, `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_reasoning_summary: Option<String>,
    /// Reasoning summary mode after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
    /// Output verbosity before the change: `low`, `medium`, `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_verbosity: Option<String>,
    /// Output verbosity after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    /// Why, when not asked for: `rate_limit_auto_switch`, `refusal_fallback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Who changed it: `sdk`, `model_command`, `startup`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `auto` routing preference before the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_auto_tier: Option<String>,
    /// `auto` routing preference after the change; `null` clears it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::payload::nullable"
    )]
    pub auto_tier: Option<Option<String>>,
}
payload!(SessionModelChange, "session.model_change");
