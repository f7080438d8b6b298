//! `exit_plan_mode`: in plan mode, the model asks the person to review its plan and how to go
//! on (`interactive`, `autopilot`, `exit_only`). Offered only when someone can review it
//! ([`PlanReviewer`]: an SDK client with an exit-plan-mode handler) and only to messages sent
//! in plan mode, as the runtime offers it. The request and the decision are announced as
//! `exit_plan_mode.requested` and `exit_plan_mode.completed` ([`ToolEvent`]); the decision's
//! words are the call's result, so the journal's `tool.execution_complete` holds it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::events::ToolEvent;
pub use super::plan_review::{PlanDecision, PlanReview, PlanReviewError, PlanReviewer};
use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec, args};

/// The tool's name.
pub const EXIT_PLAN_MODE: &str = "exit_plan_mode";

/// How the person may go on after the plan, when the model names none.
pub const DEFAULT_ACTIONS: [&str; 3] = ["autopilot", "interactive", "exit_only"];

/// The `exit_plan_mode` tool over the one who reviews.
#[derive(Clone)]
pub struct ExitPlanModeTool {
    reviewer: Arc<dyn PlanReviewer>,
}

impl ExitPlanModeTool {
    /// The tool, asking `reviewer`.
    pub fn new(reviewer: Arc<dyn PlanReviewer>) -> Self {
        ExitPlanModeTool { reviewer }
    }
}

impl std::fmt::Debug for ExitPlanModeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExitPlanModeTool").finish_non_exhaustive()
    }
}

/// The checked arguments.
#[derive(Debug, Clone)]
pub struct ExitPlanArgs {
    summary: String,
    actions: Vec<String>,
    recommended_action: String,
}

impl AsyncTool for ExitPlanModeTool {
    const NAME: &'static str = EXIT_PLAN_MODE;
    const TITLE: Option<&'static str> = Some("Plan ready for review");
    type Args = ExitPlanArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: EXIT_PLAN_MODE.into(),
            description: "Use the exit_plan_mode tool when you have created a plan and want \
                the user to review and approve it before implementing. The user may accept \
                the plan (plan mode ends and you start implementing) or ask for changes (you \
                get their feedback and stay in plan mode). Do not use it for research tasks \
                that plan no implementation."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "description": "A short summary of the plan."},
                    "actions": {
                        "type": "array",
                        "items": {"type": "string", "enum": DEFAULT_ACTIONS},
                        "description": "How the user may go on once the plan is approved."
                    },
                    "recommendedAction": {
                        "type": "string",
                        "enum": DEFAULT_ACTIONS,
                        "description": "The action you recommend."
                    }
                },
                "required": ["summary"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<ExitPlanArgs, ToolFailure> {
        let summary = args::required_str(args, "summary")?.to_owned();
        let actions = args::string_list(args, "actions")?
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| DEFAULT_ACTIONS.map(str::to_owned).to_vec());
        let recommended_action = args::optional_str(args, "recommendedAction")?
            .map(str::to_owned)
            .or_else(|| actions.iter().find(|a| *a == "interactive").cloned())
            .unwrap_or_else(|| actions[0].clone());
        Ok(ExitPlanArgs {
            summary,
            actions,
            recommended_action,
        })
    }

    async fn act(&self, args: ExitPlanArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let review = PlanReview {
            summary: args.summary,
            plan_content: self.reviewer.plan_content(),
            actions: args.actions,
            recommended_action: args.recommended_action,
        };
        let request_id = turnstile_journal::Uuid::new_v4().to_string();
        ctx.notify(ToolEvent::PlanReviewRequested {
            request_id: request_id.clone(),
            tool_call_id: ctx.tool_call_id.clone(),
            review: review.clone(),
        });
        let decision = tokio::select! {
            decision = self.reviewer.review(review) => decision,
            _ = ctx.cancel.cancelled() => return Err(ToolFailure::cancelled()),
        };
        let decision = decision.map_err(|e| ToolFailure::new(e.to_string(), "failure"))?;
        ctx.notify(ToolEvent::PlanReviewCompleted {
            request_id,
            decision: decision.clone(),
        });
        Ok(ToolOutput::text(decision_text(&decision)))
    }

    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        args.get("summary")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

/// What the model reads: the runtime's words for an approval (by the way to go on) and for a
/// plan sent back.
pub fn decision_text(decision: &PlanDecision) -> String {
    if !decision.approved {
        let feedback = decision
            .feedback
            .as_deref()
            .filter(|f| !f.trim().is_empty())
            .unwrap_or("User requested changes but did not provide specific feedback.");
        return format!(
            "Plan not approved. User feedback:\n{feedback}\n\nPlease update the plan based on this feedback and try again."
        );
    }
    let (mode, next) = match decision.selected_action.as_deref() {
        Some("autopilot") => (
            "autopilot mode (edits may be auto-approved)",
            "Start implementing the plan now, in this same response. Approving the plan is your go-signal, so do not stop to ask whether to proceed or wait for another message.",
        ),
        Some("exit_only") => (
            "interactive mode without automatic execution (wait for the user's next prompt)",
            "Wait for the user to prompt you before taking any action.",
        ),
        _ => (
            "interactive mode",
            "Start implementing the plan now, in this same response. Approving the plan is your go-signal, so do not stop to ask whether to proceed or wait for another message.",
        ),
    };
    format!("Plan approved! Exited plan mode.\n\nYou are now in {mode}. {next}")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{BoxFuture, Tool};

    #[derive(Default)]
    struct Reviewer {
        asked: Mutex<Vec<PlanReview>>,
    }

    impl PlanReviewer for Reviewer {
        fn plan_content(&self) -> String {
            "# Plan".into()
        }

        fn review(
            &self,
            review: PlanReview,
        ) -> BoxFuture<'static, Result<PlanDecision, PlanReviewError>> {
            self.asked.lock().unwrap().push(review);
            Box::pin(async {
                Ok(PlanDecision {
                    approved: true,
                    selected_action: Some("interactive".into()),
                    feedback: Some("fine".into()),
                })
            })
        }
    }

    #[tokio::test]
    async fn an_approval_reads_as_the_runtime_words_it_and_the_review_is_announced() {
        let reviewer = Arc::new(Reviewer::default());
        let tool = ExitPlanModeTool::new(reviewer.clone());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut ctx = ToolContext::new("/");
        ctx.events = Some(tx);
        let out = tool
            .run(json!({"summary": "Add a file"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "Plan approved! Exited plan mode.\n\nYou are now in interactive mode. Start implementing the plan now, in this same response. Approving the plan is your go-signal, so do not stop to ask whether to proceed or wait for another message."
        );
        let asked = reviewer.asked.lock().unwrap().clone();
        assert_eq!(asked[0].actions, DEFAULT_ACTIONS);
        assert_eq!(asked[0].recommended_action, "interactive");
        assert_eq!(asked[0].plan_content, "# Plan");
        let requested = rx.try_recv().unwrap();
        let ToolEvent::PlanReviewRequested { request_id, .. } = requested else {
            panic!("{requested:?}")
        };
        let completed = rx.try_recv().unwrap();
        assert!(
            matches!(&completed, ToolEvent::PlanReviewCompleted { request_id: id, decision } if *id == request_id && decision.approved)
        );
    }

    #[test]
    fn a_plan_sent_back_carries_the_feedback() {
        let back = decision_text(&PlanDecision {
            approved: false,
            selected_action: None,
            feedback: Some("smaller steps".into()),
        });
        assert!(back.starts_with("Plan not approved. User feedback:\nsmaller steps\n"));
    }
}
