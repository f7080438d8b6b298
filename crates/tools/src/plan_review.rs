//! What a plan's review is made of: the request the person reviews ([`PlanReview`]), their
//! decision ([`PlanDecision`]) and who reviews ([`PlanReviewer`]). A module of its own so that
//! the `exit_plan_mode` tool and the events a tool sends (`events.rs`) share it without
//! importing each other.

use super::BoxFuture;

/// What the person is asked to review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanReview {
    /// The plan in a sentence.
    pub summary: String,
    /// The session's plan file (`plan.md`), empty when there is none.
    pub plan_content: String,
    /// The ways to go on offered.
    pub actions: Vec<String>,
    /// The one the model recommends.
    pub recommended_action: String,
}

/// The person's decision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanDecision {
    /// The plan is approved.
    pub approved: bool,
    /// How to go on, when approved.
    pub selected_action: Option<String>,
    /// What the person said.
    pub feedback: Option<String>,
}

/// Why a plan got no decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanReviewError {
    /// Whoever reviews went away before deciding.
    #[error("the exit plan mode handler is no longer connected")]
    Disconnected,
    /// The handler answered with an error, or with something that is not a decision.
    #[error("the exit plan mode handler failed: {0}")]
    Handler(String),
}

/// Someone who reviews the model's plans.
pub trait PlanReviewer: Send + Sync {
    /// The session's plan file as it is now (empty when there is none).
    fn plan_content(&self) -> String;
    /// Asks for a decision on `review`.
    fn review(
        &self,
        review: PlanReview,
    ) -> BoxFuture<'static, Result<PlanDecision, PlanReviewError>>;
}
