//! Ephemeral notices of a plan's review: the model's `exit_plan_mode` call asks the person to
//! review its plan (`exit_plan_mode.requested`), and their decision
//! (`exit_plan_mode.completed`). Field order is the Copilot CLI 1.0.81-0's.

use serde::{Deserialize, Serialize};

use super::payload;

/// `exit_plan_mode.requested` (ephemeral): a plan to review; a client with an exit-plan-mode
/// handler is asked with `exitPlanMode.request`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitPlanModeRequested {
    /// The id the decision names.
    pub request_id: String,
    /// The plan in a sentence.
    pub summary: String,
    /// The ways to go on offered (`interactive`, `autopilot`, `exit_only`).
    pub actions: Vec<String>,
    /// The one the model recommends.
    pub recommended_action: String,
    /// The model's call that asks (the runtime writes it, though the schema lacks it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The session's plan file, empty when there is none.
    pub plan_content: String,
}
payload!(ExitPlanModeRequested, "exit_plan_mode.requested");

/// `exit_plan_mode.completed` (ephemeral): the person's decision on a plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitPlanModeCompleted {
    /// The plan is approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// How to go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_action: Option<String>,
    /// What the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The request decided.
    pub request_id: String,
}
payload!(ExitPlanModeCompleted, "exit_plan_mode.completed");
