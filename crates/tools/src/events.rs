//! What a running tool tells its session besides its result: a narrow handle in the call's
//! context (not the session), through which the loop records the matching event while the
//! call runs, before its `tool.execution_complete`.

use tokio::sync::mpsc;

use super::ToolContext;

/// A session event a tool may cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolEvent {
    /// A statement wrote the `todos` or `todo_deps` table (`session.todos_changed`).
    TodosChanged,
    /// `skill` loaded this skill: after the call's completion the loop records
    /// `skill.invoked` and the skill's context as a user message.
    SkillInvoked(Box<crate::skills::Skill>),
    /// `exit_plan_mode` asked for a review of the plan (`exit_plan_mode.requested`).
    PlanReviewRequested {
        /// The id the decision names.
        request_id: String,
        /// The model's call that asks.
        tool_call_id: Option<String>,
        /// What is reviewed.
        review: crate::plan_review::PlanReview,
    },
    /// The plan's review was decided (`exit_plan_mode.completed`).
    PlanReviewCompleted {
        /// The request decided.
        request_id: String,
        /// The decision.
        decision: crate::plan_review::PlanDecision,
    },
}

/// Where a running call sends its events.
pub type EventSender = mpsc::UnboundedSender<ToolEvent>;

impl ToolContext {
    /// Tells the session `event` (nothing outside a session); callable from a blocking thread.
    pub fn notify(&self, event: ToolEvent) {
        if let Some(events) = &self.events {
            // The loop stops listening only once the call is over: nothing is left to tell.
            let _ = events.send(event);
        }
    }
}
