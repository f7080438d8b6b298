//! The person behind an SDK client, asked to review the model's plan (`exit_plan_mode`) with
//! the server-to-client request `exitPlanMode.request` (`{sessionId, summary, planContent,
//! actions, recommendedAction}` answered by `{approved, selectedAction?, feedback?}`), as the
//! Copilot CLI asks a client that opened its session with `requestExitPlanMode: true`. The
//! decision's words are the tool call's result, so the journal holds it.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use turnstile_tools::BoxFuture;
use turnstile_tools::exit_plan_mode::{PlanDecision, PlanReview, PlanReviewError, PlanReviewer};

use crate::peer::{CallError, Peer};

/// Asks a session's plan reviews of the client that opened it.
pub(crate) struct ClientPlanReviewer {
    session_id: String,
    peer: Arc<Peer>,
    /// The session's `plan.md`.
    plan_file: PathBuf,
}

impl ClientPlanReviewer {
    /// Reviews of `session_id`'s plans (its plan file `plan_file`), asked of the client behind
    /// `peer`.
    pub(crate) fn new(session_id: String, peer: Arc<Peer>, plan_file: PathBuf) -> Self {
        ClientPlanReviewer {
            session_id,
            peer,
            plan_file,
        }
    }
}

impl PlanReviewer for ClientPlanReviewer {
    fn plan_content(&self) -> String {
        turnstile_home::plan::read(&self.plan_file)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn review(
        &self,
        review: PlanReview,
    ) -> BoxFuture<'static, Result<PlanDecision, PlanReviewError>> {
        let peer = Arc::clone(&self.peer);
        let params = json!({
            "sessionId": self.session_id,
            "summary": review.summary,
            "planContent": review.plan_content,
            "actions": review.actions,
            "recommendedAction": review.recommended_action,
        });
        Box::pin(async move {
            let answer = peer
                .call("exitPlanMode.request", params)
                .await
                .map_err(|e| match e {
                    CallError::Closed => PlanReviewError::Disconnected,
                    other => PlanReviewError::Handler(other.to_string()),
                })?;
            parse_decision(&answer)
        })
    }
}

/// `{approved, selectedAction?, feedback?}`; an answer without a boolean `approved` is the
/// handler's failure.
fn parse_decision(answer: &Value) -> Result<PlanDecision, PlanReviewError> {
    let Some(approved) = answer.get("approved").and_then(Value::as_bool) else {
        return Err(PlanReviewError::Handler(
            "the answer has no boolean `approved`".into(),
        ));
    };
    let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(PlanDecision {
        approved,
        selected_action: text("selectedAction"),
        feedback: text("feedback"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_must_say_whether_it_approves() {
        let decision = parse_decision(&json!({"approved": true, "selectedAction": "interactive"}));
        assert_eq!(
            decision,
            Ok(PlanDecision {
                approved: true,
                selected_action: Some("interactive".into()),
                feedback: None,
            })
        );
        assert!(matches!(
            parse_decision(&json!({"selectedAction": "interactive"})),
            Err(PlanReviewError::Handler(_))
        ));
    }
}
