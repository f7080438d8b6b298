//! Running the tool calls of a turn: `tool.execution_start`, the hooks around a call, the
//! permission decision, built-in or client (external) execution, and the one
//! `tool.execution_complete` every call gets.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    ExternalToolCompleted, ExternalToolRequested, PermissionCompleted, PermissionRequested,
    SessionTaskComplete, ToolError, ToolExecutionComplete, ToolExecutionPartialResult,
    ToolExecutionStart, ToolResult,
};
use turnstile_replay::resume_plan::{INTERRUPTED_CODE, INTERRUPTED_MESSAGE};

use super::LoopError;
use super::actor::Actor;
use super::message::Message;
use crate::client::ExternalToolCall;
use crate::model::ToolCall;
use crate::permissions::Decision;
use crate::tools::{PermissionAsk, ToolContext, ToolFailure, ToolOutput};

/// Text the model sees when the policy denies a call and nobody can be asked (runtime wording).
const DENIED_NO_RULE: &str = "Permission denied and could not request permission from user";

impl Actor {
    pub(super) fn tool_context(&self, cancel: &CancellationToken) -> ToolContext {
        let mut ctx = ToolContext::new(self.parts.config.cwd.clone());
        ctx.allow_outside_cwd = self.parts.config.allow_outside_cwd;
        ctx.cancel = cancel.child_token();
        ctx
    }

    /// Runs one tool call with hooks and permissions; returns true when it was aborted.
    pub(super) async fn tool(
        &mut self,
        call: &ToolCall,
        turn_id: &str,
        msg: &mut Message<'_>,
        model: &str,
    ) -> Result<bool, LoopError> {
        let mut args = call.arguments_value();
        self.emitter.emit(&ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: Some(args.clone()),
            turn_id: Some(turn_id.to_owned()),
            model: Some(model.to_owned()),
            ..Default::default()
        })?;
        let tools = Arc::clone(&self.parts.tools);
        let external = self.is_external(&call.name);
        let builtin = if external {
            None
        } else {
            tools.get(&call.name)
        };
        if !external && builtin.is_none() {
            let names: Vec<String> = self
                .tool_specs(msg.mode)
                .into_iter()
                .map(|t| t.name)
                .collect();
            let message = format!(
                "Tool '{}' does not exist. Available tools that can be called are {}.",
                call.name,
                names.join(", ")
            );
            self.complete_tool(
                call,
                turn_id,
                msg,
                Err(ToolFailure::new(message, "unknown_tool")),
                model,
            )?;
            return Ok(false);
        }
        if !args.is_object() {
            let failure = ToolFailure::invalid(format!(
                "the arguments of {} must be a JSON object, got: {}",
                call.name, call.arguments
            ));
            self.complete_tool(call, turn_id, msg, Err(failure), model)?;
            return Ok(false);
        }
        let mut hook_allowed = false;
        let hook_input = json!({"toolName": call.name, "toolArgs": args.to_string(), "cwd": self.parts.config.cwd});
        if let Some(out) = self.hook("preToolUse", hook_input, Some(&call.id)).await? {
            match out.get("permissionDecision").and_then(Value::as_str) {
                Some("deny") => {
                    let reason = out
                        .get("permissionDecisionReason")
                        .and_then(Value::as_str)
                        .unwrap_or("No reason provided");
                    let failure =
                        ToolFailure::new(format!("Denied by preToolUse hook: {reason}"), "denied");
                    self.complete_tool(call, turn_id, msg, Err(failure), model)?;
                    return Ok(false);
                }
                Some("allow") => hook_allowed = true,
                _ => {}
            }
            if let Some(modified) = out.get("modifiedArgs").filter(|v| v.is_object()) {
                args = modified.clone();
            }
        }
        let Some(tool) = builtin else {
            return self.external_tool(call, turn_id, msg, model, args).await;
        };
        let mut ctx = self.tool_context(msg.cancel);
        match tool.permission(&args, &ctx) {
            Err(failure) => {
                self.complete_tool(call, turn_id, msg, Err(failure), model)?;
                return Ok(false);
            }
            Ok(Some(ask)) if !hook_allowed => {
                if let Some(denial) = self.permit(call, &ask, msg).await? {
                    self.complete_tool(
                        call,
                        turn_id,
                        msg,
                        Err(ToolFailure::new(denial, "denied")),
                        model,
                    )?;
                    return Ok(false);
                }
            }
            Ok(_) => {}
        }
        let (partial_tx, mut partial_rx) = mpsc::unbounded_channel();
        ctx.partial = Some(partial_tx);
        let mut result = {
            let run = tool.run(args.clone(), &ctx);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    biased;
                    Some(chunk) = partial_rx.recv() => {
                        self.emitter.emit(&ToolExecutionPartialResult { tool_call_id: call.id.clone(), partial_output: chunk })?;
                    }
                    r = &mut run => break r,
                }
            }
        };
        let aborted = msg.cancel.is_cancelled();
        if aborted {
            self.abort_event()?;
            result = Err(interrupted());
        } else if let Ok(output) = &mut result {
            let input = json!({"toolName": call.name, "toolArgs": args.to_string(), "toolResult": {"resultType": "success", "textResultForLlm": output.content}});
            if let Some(out) = self.hook("postToolUse", input, Some(&call.id)).await?
                && let Some(text) = out
                    .pointer("/modifiedResult/textResultForLlm")
                    .and_then(Value::as_str)
            {
                output.content = text.to_owned();
            }
        }
        let completed_task = call.name == "task_complete" && result.is_ok();
        self.complete_tool(call, turn_id, msg, result, model)?;
        if completed_task {
            let summary = args
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            self.emitter.emit(&SessionTaskComplete {
                summary: Some(summary),
                success: Some(true),
                ..Default::default()
            })?;
            msg.task_completed = true;
        }
        Ok(aborted)
    }

    /// Records `permission.requested`, decides (policy, else the client), records
    /// `permission.completed`; returns the text the model sees when the call is denied.
    pub(super) async fn permit(
        &mut self,
        call: &ToolCall,
        ask: &PermissionAsk,
        msg: &Message<'_>,
    ) -> Result<Option<String>, LoopError> {
        let asker = self.parts.permission_asker.clone();
        let decision = self
            .parts
            .config
            .permissions
            .decide(&call.name, ask, asker.is_some());
        let request_id = Uuid::new_v4().to_string();
        let mut request = ask.request.clone();
        if let Some(obj) = request.as_object_mut() {
            obj.insert("toolCallId".into(), Value::String(call.id.clone()));
        }
        self.emitter.emit(&PermissionRequested {
            request_id: request_id.clone(),
            permission_request: request.clone(),
            agent_mode: Some(msg.mode.as_str().into()),
            ..Default::default()
        })?;
        let mut source = "host_policy";
        let (result, denial) = match (decision, asker) {
            (Decision::Approved, _) => (json!({"kind": "approved"}), None),
            (Decision::DeniedByRules(rules), _) => {
                let denial = format!("Permission denied by rule: {}", rules.join(", "));
                (
                    json!({"kind": "denied-by-rules", "rules": rules}),
                    Some(denial),
                )
            }
            (Decision::Ask, Some(asker)) => {
                source = "human_response";
                let answer = tokio::select! {
                    r = asker.ask(request_id.clone(), request) => r,
                    _ = msg.cancel.cancelled() => Err("the message was aborted".to_owned()),
                };
                match answer {
                    Ok(result)
                        if result["kind"]
                            .as_str()
                            .is_some_and(|k| k.starts_with("approved")) =>
                    {
                        (result, None)
                    }
                    Ok(result) => {
                        let feedback = result["feedback"]
                            .as_str()
                            .map(|f| format!(": {f}"))
                            .unwrap_or_default();
                        (
                            result,
                            Some(format!("Permission denied by the user{feedback}")),
                        )
                    }
                    Err(reason) => (
                        json!({"kind": "cancelled", "reason": reason}),
                        Some(DENIED_NO_RULE.to_owned()),
                    ),
                }
            }
            (Decision::NoApprovalRule | Decision::Ask, _) => (
                json!({"kind": "denied-no-approval-rule-and-could-not-request-from-user"}),
                Some(DENIED_NO_RULE.to_owned()),
            ),
        };
        self.emitter.emit(&PermissionCompleted {
            request_id,
            tool_call_id: Some(call.id.clone()),
            result,
            decision_source: Some(source.into()),
        })?;
        Ok(denial)
    }

    /// Runs a client-implemented tool: recorded as `external_tool.requested`, answered by the
    /// client, closed by `external_tool.completed` (ephemeral) and `tool.execution_complete`.
    pub(super) async fn external_tool(
        &mut self,
        call: &ToolCall,
        turn_id: &str,
        msg: &mut Message<'_>,
        model: &str,
        args: Value,
    ) -> Result<bool, LoopError> {
        let Some(handler) = self.parts.external_tools.clone() else {
            return Err(LoopError::Closed(self.id));
        };
        let request = ExternalToolCall {
            request_id: Uuid::new_v4().to_string(),
            session_id: self.id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: args.clone(),
        };
        self.emitter.emit(&ExternalToolRequested {
            request_id: request.request_id.clone(),
            session_id: request.session_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: Some(args),
            working_directory: Some(self.parts.config.cwd.display().to_string()),
            ..Default::default()
        })?;
        let request_id = request.request_id.clone();
        let answer = tokio::select! {
            r = handler.call(request) => Some(r),
            _ = msg.cancel.cancelled() => None,
        };
        let (result, aborted) = match answer {
            Some(result) => (result, false),
            None => {
                self.abort_event()?;
                (Err(interrupted()), true)
            }
        };
        self.emitter.emit(&ExternalToolCompleted { request_id })?;
        self.complete_tool(call, turn_id, msg, result, model)?;
        Ok(aborted)
    }

    pub(super) fn complete_tool(
        &mut self,
        call: &ToolCall,
        turn_id: &str,
        msg: &Message<'_>,
        result: Result<ToolOutput, ToolFailure>,
        model: &str,
    ) -> Result<(), LoopError> {
        let (success, result, error) = match result {
            Ok(out) => (
                true,
                Some(ToolResult {
                    content: out.content,
                    detailed_content: out.detailed_content,
                    ..Default::default()
                }),
                None,
            ),
            Err(f) => (
                false,
                None,
                Some(ToolError {
                    message: f.message,
                    code: f.code,
                    ..Default::default()
                }),
            ),
        };
        self.emitter.emit(&ToolExecutionComplete {
            tool_call_id: call.id.clone(),
            model: Some(model.to_owned()),
            interaction_id: Some(msg.interaction_id.clone()),
            turn_id: Some(turn_id.to_owned()),
            success,
            result,
            error,
            ..Default::default()
        })?;
        Ok(())
    }
}

/// The result of a call cut short by an abort (the resume plan's wording).
pub(super) fn interrupted() -> ToolFailure {
    ToolFailure::new(INTERRUPTED_MESSAGE, INTERRUPTED_CODE)
}
