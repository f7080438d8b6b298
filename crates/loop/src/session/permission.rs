//! The permission decision of one tool call: the start-up policy with the client's live rules
//! on top, settled silently when the live rules decide (the Copilot CLI records nothing then),
//! else recorded as `permission.requested`/`permission.completed` around the policy's or the
//! client's answer. The texts the model reads on a denial are the runtime's (`denials.rs`).

use serde_json::{Value, json};
use turnstile_journal::Uuid;
use turnstile_journal::payload::{PermissionCompleted, PermissionRequested};

use super::LoopError;
use super::actor::Actor;
use super::denials::{denied, denied_by_live_rules, denied_by_rules, rejected_by_user};
use super::message::Message;
use crate::client::AskError;
use turnstile_permissions::{
    Decision, LiveDecision, PermissionPolicy, prompt_request, with_tool_call_id,
};
use turnstile_providers::ToolCall;
use turnstile_tools::{PermissionAsk, ToolFailure};

/// Text the model sees when the policy denies a call and nobody can be asked (runtime wording).
use turnstile_tools::asks::NOBODY_TO_ASK as DENIED_NO_RULE;

impl Actor {
    /// Decides a call that asks permission. What the client's live rules decide (approve-all,
    /// a session or location approval, a configured deny) is settled without a
    /// `permission.requested`, as the Copilot CLI records none for it; otherwise records
    /// `permission.requested`, decides (policy, else the client), records
    /// `permission.completed`. Returns the failure the model reads when the call is denied.
    pub(super) async fn permit(
        &self,
        call: &ToolCall,
        ask: &PermissionAsk,
        msg: &Message<'_>,
    ) -> Result<Option<ToolFailure>, LoopError> {
        let asker = self.parts.permission_asker.clone();
        let (decision, settled) = self.decide_permission(&call.name, ask, asker.is_some());
        if settled {
            return Ok(match decision {
                Decision::Approved => None,
                Decision::DeniedByRules(rules) => Some(denied(denied_by_live_rules(&rules))),
                _ => Some(denied(DENIED_NO_RULE)),
            });
        }
        let request_id = Uuid::new_v4().to_string();
        let request = with_tool_call_id(&ask.request, &call.id);
        self.emitter.emit(&PermissionRequested {
            request_id: request_id.clone(),
            prompt_request: prompt_request(&request),
            permission_request: request.clone(),
            agent_mode: Some(msg.mode.as_str().into()),
            ..Default::default()
        })?;
        self.answer_permission(call, request_id, request, Some(decision), msg)
            .await
    }

    /// The start-up policy's decision with the client's live rules on top: a deny of the
    /// policy wins, then what the live rules say (a deny, then an approval), then the policy.
    /// The client's approve-all setting replaces `--allow-all-tools`; a client that said it
    /// shows no prompts (`setRequired(false)`) is not asked. The flag is true when the live
    /// rules settled it (nothing is recorded then, as in the Copilot CLI).
    fn decide_permission(
        &self,
        tool: &str,
        ask: &PermissionAsk,
        can_ask: bool,
    ) -> (Decision, bool) {
        let config = &self.parts.config;
        let live = &config.live_permissions;
        let overridden;
        let policy = match live.approve_all() {
            Some(all) if all != config.permissions.allow_all => {
                overridden = PermissionPolicy {
                    allow_all: all,
                    ..config.permissions.clone()
                };
                &overridden
            }
            _ => &config.permissions,
        };
        let denied = policy.denied_by(tool, ask, &config.cwd);
        if !denied.is_empty() {
            return (Decision::DeniedByRules(denied), false);
        }
        match live.decide(ask) {
            Some(LiveDecision::Denied(rules)) => (Decision::DeniedByRules(rules), true),
            Some(LiveDecision::Approved) => (Decision::Approved, true),
            None => {
                // A client that shows no prompts: what no rule decides is denied unasked.
                let muted = live.prompts_wanted() == Some(false);
                let decision = policy.decide(tool, ask, &config.cwd, can_ask && !muted);
                let settled = muted && matches!(decision, Decision::NoApprovalRule { .. });
                (decision, settled)
            }
        }
    }

    /// Decides a recorded permission request (`decision` from the policy; `None`: ask the
    /// client, as a request left pending by a previous engine was) and records
    /// `permission.completed`; returns the failure the model reads when the call is denied.
    pub(super) async fn answer_permission(
        &self,
        call: &ToolCall,
        request_id: String,
        request: Value,
        decision: Option<Decision>,
        msg: &Message<'_>,
    ) -> Result<Option<ToolFailure>, LoopError> {
        let asker = self.parts.permission_asker.clone();
        let decision = decision.unwrap_or(Decision::Ask);
        let mut source = "host_policy";
        let (result, denial) = match (decision, asker) {
            (Decision::Approved, _) => (json!({"kind": "approved"}), None),
            (Decision::DeniedByRules(rules), _) => {
                let denial = denied(denied_by_rules(&rules));
                (
                    json!({"kind": "denied-by-rules", "rules": rules}),
                    Some(denial),
                )
            }
            (Decision::Ask, Some(asker)) => {
                source = "human_response";
                let answer = tokio::select! {
                    r = asker.ask(request_id.clone(), request) => r,
                    _ = msg.cancel.cancelled() => Err(AskError::Aborted),
                };
                match answer {
                    Ok(result)
                        if result["kind"]
                            .as_str()
                            .is_some_and(|k| k.starts_with("approved")) =>
                    {
                        // A session- or location-scoped answer also decides later requests.
                        self.parts.config.live_permissions.remember(&result);
                        (result, None)
                    }
                    // A client that cannot ask anyone (`user-not-available`, also what the
                    // official clients answer when their handler fails): the runtime's
                    // "could not request" wording, and the model goes on.
                    Ok(result)
                        if result["kind"]
                            == "denied-no-approval-rule-and-could-not-request-from-user" =>
                    {
                        (result, Some(denied(DENIED_NO_RULE)))
                    }
                    Ok(result) => {
                        let feedback = result["feedback"].as_str().filter(|f| !f.is_empty());
                        let denial = rejected_by_user(feedback);
                        (result, Some(denial))
                    }
                    Err(reason) => (
                        json!({"kind": "cancelled", "reason": reason.to_string()}),
                        Some(denied(DENIED_NO_RULE)),
                    ),
                }
            }
            (decision @ (Decision::NoApprovalRule { .. } | Decision::Ask), _) => {
                // The model reads the runtime's wording; the person running the engine is told
                // which flag would have allowed the call.
                let hint = decision.hint();
                match &self.parts.config.refusal_notice {
                    Some(notice) => notice.refused(&call.name, &request, &hint),
                    None if !hint.is_empty() => {
                        tracing::warn!(session = %self.id, tool = %call.name, "permission denied{hint}");
                    }
                    None => {}
                }
                (
                    json!({"kind": "denied-no-approval-rule-and-could-not-request-from-user"}),
                    Some(denied(DENIED_NO_RULE)),
                )
            }
        };
        self.emitter.emit(&PermissionCompleted {
            request_id,
            tool_call_id: Some(call.id.clone()),
            result,
            decision_source: Some(source.into()),
        })?;
        Ok(denial)
    }
}
