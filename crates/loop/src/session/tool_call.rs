//! Running the tool calls of a turn, the way the runtime does: every `tool.execution_start`
//! first (request order), then all calls at once: hooks around each, its permission decision,
//! built-in or client (external) execution; at most `max_parallel_tools` built-in tools run
//! at a time, the others waiting in request order (`slots.rs`). Each call gets one `tool.execution_complete`,
//! recorded in request order as soon as it and the calls before it have finished (the runtime
//! records them in completion order; request order keeps a journal, and so a replayed fixture,
//! independent of which command happened to finish first).

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    ExternalToolCompleted, ExternalToolRequested, SKILL_SOURCE_PREFIX, SessionTaskComplete,
    SkillInvoked, ToolError, ToolExecutionComplete, ToolExecutionStart, ToolResult, UserMessage,
};
use turnstile_replay::resume_plan::{INTERRUPTED_CODE, INTERRUPTED_MESSAGE};

use super::LoopError;
use super::actor::Actor;
use super::denials::{REJECTED_CODE, custom_tool_ask, denied_by_rules, denied_without_asking};
use super::message::Message;
use super::pending::{PendingCall, Waiting};
use crate::client::ExternalToolCall;
use turnstile_permissions::Unasked;
use turnstile_providers::ToolCall;
use turnstile_tools::skills::{CUSTOM_SOURCE, Skill};
use turnstile_tools::{ToolContext, ToolFailure, ToolOutput, ToolSpec};

/// What the tool calls of one turn came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct ToolsEnd {
    /// The message was aborted while they ran (every call got its interrupted result).
    pub(super) aborted: bool,
    /// `task_complete` succeeded.
    pub(super) task_completed: bool,
    /// A client tool's result was `rejected`: no further LLM call for this message.
    pub(super) rejected: bool,
}

/// The facts every call of one turn shares.
pub(super) struct Turn<'a, 'm> {
    pub(super) turn_id: &'a str,
    pub(super) msg: &'a Message<'m>,
    pub(super) model: &'a str,
    /// Where a background `task` or a `write_agent` call hands its agent's work to run beside
    /// the main agent (`None`: no runner, so the agent runs inside the call,
    /// `session/background.rs`).
    pub(super) background: Option<&'a super::agent_jobs::BackgroundSender>,
    /// The bound on the turn's built-in tools running at once.
    pub(super) slots: &'a tokio::sync::Semaphore,
}

/// How one call finished, before its completion is recorded.
pub(super) struct Finished {
    pub(super) result: Result<ToolOutput, ToolFailure>,
    /// Cut short by an abort (`result` is the interrupted failure).
    pub(super) interrupted: bool,
    /// The summary of a successful `task_complete`.
    pub(super) task_summary: Option<String>,
    /// The skills a successful `skill` call loaded (recorded after its completion).
    pub(super) skills: Vec<Skill>,
}

impl Finished {
    pub(super) fn of(result: Result<ToolOutput, ToolFailure>) -> Self {
        Finished {
            result,
            interrupted: false,
            task_summary: None,
            skills: Vec::new(),
        }
    }

    pub(super) fn interrupted() -> Self {
        Finished {
            result: Err(interrupted()),
            interrupted: true,
            task_summary: None,
            skills: Vec::new(),
        }
    }
}

impl Actor {
    pub(super) fn tool_context(&self, cancel: &CancellationToken) -> ToolContext {
        let mut ctx = ToolContext::new(self.parts.config.cwd.clone());
        ctx.allow_outside_cwd = self.parts.config.allow_outside_cwd;
        ctx.ask_reads_in_cwd = self.parts.config.ask_reads_in_cwd;
        ctx.cancel = cancel.child_token();
        ctx.processes = Some(std::sync::Arc::clone(&self.processes));
        ctx.shells = std::sync::Arc::clone(&self.shells);
        ctx.database = std::sync::Arc::clone(&self.database);
        ctx.urls = std::sync::Arc::clone(&self.urls);
        ctx.sandbox = self.sandbox.clone();
        ctx.engine_dirs = std::sync::Arc::clone(&self.engine_dirs);
        ctx.agents = std::sync::Arc::clone(&self.agents);
        ctx
    }

    /// Runs the turn's tool calls concurrently (their ids are already unique, `turn.rs`).
    pub(super) async fn tools(
        &self,
        calls: &[ToolCall],
        turn_id: &str,
        msg: &Message<'_>,
        model: &str,
    ) -> Result<ToolsEnd, LoopError> {
        let tools = self.live_tools();
        for call in calls {
            let origin = tools.get(&call.name).and_then(|t| t.mcp_origin());
            let arguments = call.arguments_value();
            let shell_tool_info = tools
                .get(&call.name)
                .and_then(|t| t.shell_tool_info(&arguments));
            self.emitter.emit(&ToolExecutionStart {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                arguments: Some(arguments),
                turn_id: Some(turn_id.to_owned()),
                model: Some(model.to_owned()),
                mcp_server_name: origin.map(|o| o.0.to_owned()),
                mcp_tool_name: origin.map(|o| o.1.to_owned()),
                rte: Some(false),
                shell_tool_info,
                ..Default::default()
            })?;
        }
        let slots = super::slots::slots(self.parts.config.max_parallel_tools);
        let turn = Turn {
            turn_id,
            msg,
            model,
            background: msg.agents.as_ref(),
            slots: &slots,
        };
        // One task polls them all: each call runs until it waits (a hook, a permission, the
        // tool itself), so every external_tool.requested is out before any answer is awaited.
        let running: FuturesOrdered<_> = calls.iter().map(|call| self.tool(call, &turn)).collect();
        self.complete_in_order(calls.iter(), running, &turn).await
    }

    /// Continues calls a resume left open: each request is announced again (same id, same
    /// data) and answered; then the calls go on as new ones would (`continue_pending.rs`).
    pub(super) async fn resume_calls(
        &self,
        calls: &[PendingCall],
        turn_id: &str,
        msg: &Message<'_>,
        model: &str,
    ) -> Result<ToolsEnd, LoopError> {
        let slots = super::slots::slots(self.parts.config.max_parallel_tools);
        let turn = Turn {
            turn_id,
            msg,
            model,
            background: None,
            slots: &slots,
        };
        let running: FuturesOrdered<_> = calls.iter().map(|p| self.resume_call(p, &turn)).collect();
        self.complete_in_order(calls.iter().map(|p| &p.call), running, &turn)
            .await
    }

    /// Records each call's completion in request order as the calls finish.
    async fn complete_in_order<'c, F>(
        &self,
        mut calls: impl Iterator<Item = &'c ToolCall>,
        mut running: FuturesOrdered<F>,
        turn: &Turn<'_, '_>,
    ) -> Result<ToolsEnd, LoopError>
    where
        F: std::future::Future<Output = Result<Finished, LoopError>>,
    {
        let mut end = ToolsEnd::default();
        while let Some(finished) = running.next().await {
            let (Some(call), finished) = (calls.next(), finished?) else {
                break;
            };
            if finished.interrupted && !end.aborted {
                self.abort_event()?;
                end.aborted = true;
            }
            let succeeded = finished.result.is_ok();
            let one = self.complete_tool(call, turn, finished.result)?;
            end.rejected |= one.rejected;
            if succeeded {
                for skill in finished.skills {
                    self.skill_invoked(&skill, turn)?;
                }
            }
            if let Some(summary) = finished.task_summary {
                self.emitter.emit(&SessionTaskComplete {
                    summary: Some(summary),
                    success: Some(true),
                    ..Default::default()
                })?;
                end.task_completed = true;
            }
        }
        Ok(end)
    }

    /// One continued call: the recorded request again, then the rest of the call.
    async fn resume_call(
        &self,
        pending: &PendingCall,
        turn: &Turn<'_, '_>,
    ) -> Result<Finished, LoopError> {
        let call = &pending.call;
        let msg = turn.msg;
        if msg.cancel.is_cancelled() {
            return Ok(Finished::interrupted());
        }
        let args = call.arguments_value();
        match &pending.waiting {
            Waiting::External(request) => {
                self.emitter.emit(request)?;
                self.await_external(call, turn, request.request_id.clone(), args)
                    .await
            }
            Waiting::Permission(request) => {
                self.emitter.emit(request)?;
                let denial = self
                    .answer_permission(
                        call,
                        request.request_id.clone(),
                        request.permission_request.clone(),
                        None,
                        msg,
                    )
                    .await?;
                if msg.cancel.is_cancelled() {
                    return Ok(Finished::interrupted());
                }
                if let Some(denial) = denial {
                    return Ok(Finished::of(Err(denial)));
                }
                if self.external_spec(&call.name).is_some() {
                    return self.external_tool(call, turn, args).await;
                }
                let tools = self.live_tools();
                let Some(tool) = tools.get(&call.name) else {
                    let failure = ToolFailure::new(
                        format!("Tool '{}' does not exist.", call.name),
                        "unknown_tool",
                    );
                    return Ok(Finished::of(Err(failure)));
                };
                let mut ctx = self.tool_context(msg.cancel);
                ctx.tool_call_id = Some(call.id.clone());
                self.run_builtin(call, tool, args, ctx, turn).await
            }
        }
    }

    /// Runs one tool call with hooks and permissions.
    pub(super) async fn tool(
        &self,
        call: &ToolCall,
        turn: &Turn<'_, '_>,
    ) -> Result<Finished, LoopError> {
        let msg = turn.msg;
        if msg.cancel.is_cancelled() {
            return Ok(Finished::interrupted());
        }
        let mut args = call.arguments_value();
        // An excluded tool does not exist as far as the model is concerned.
        let excluded = self.is_excluded(&call.name);
        let tools = self.live_tools();
        let external = self.external_spec(&call.name).filter(|_| !excluded);
        let builtin = match external {
            Some(_) => None,
            None if excluded => None,
            None => tools.get(&call.name),
        };
        // A tool that does not exist is still put to the preToolUse hook first, as the
        // runtime does: a hook's deny is what the model reads then.
        let unknown = external.is_none() && builtin.is_none();
        if !unknown && !args.is_object() {
            let failure = ToolFailure::invalid(format!(
                "the arguments of {} must be a JSON object, got: {}",
                call.name, call.arguments
            ));
            return Ok(Finished::of(Err(failure)));
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
                    return Ok(Finished::of(Err(failure)));
                }
                Some("allow") => hook_allowed = true,
                _ => {}
            }
            if let Some(modified) = out.get("modifiedArgs").filter(|v| v.is_object()) {
                args = modified.clone();
            }
        }
        if unknown {
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
            let failure = ToolFailure::new(message, "unknown_tool");
            return Ok(Finished::of(Err(failure)));
        }
        let mut ctx = self.tool_context(msg.cancel);
        ctx.tool_call_id = Some(call.id.clone());
        let ask = match (&external, builtin) {
            (Some(spec), _) => (!spec.skip_permission).then(|| custom_tool_ask(spec, &args)),
            (None, Some(tool)) => match tool.permission(&args, &ctx) {
                Ok(ask) => ask,
                Err(failure) => return Ok(Finished::of(Err(failure))),
            },
            (None, None) => None,
        };
        // Deny rules hold whatever a hook said and whether or not the call asks.
        let denied = match builtin {
            Some(_) if external.is_none() => denied_without_asking(
                &self.parts.config.permissions,
                &call.name,
                ask.as_ref(),
                &args,
                &self.parts.config.cwd,
            ),
            _ => self.parts.config.permissions.denied_unasked(
                &call.name,
                Unasked::Client,
                &self.parts.config.cwd,
            ),
        };
        if !denied.is_empty() {
            // Only a request the policy's deny rules refuse is recorded: a read refused for
            // what lies under the directory it searches is refused before anyone is asked.
            let recorded = ask.as_ref().filter(|a| {
                !hook_allowed
                    && !self
                        .parts
                        .config
                        .permissions
                        .denied_by(&call.name, a, &self.parts.config.cwd)
                        .is_empty()
            });
            if let Some(ask) = recorded {
                // Recorded as a request denied by rules, as the policy would.
                let denial = self.permit(call, ask, msg).await?;
                if msg.cancel.is_cancelled() {
                    return Ok(Finished::interrupted());
                }
                if let Some(denial) = denial {
                    return Ok(Finished::of(Err(denial)));
                }
            }
            let failure = ToolFailure::new(denied_by_rules(&denied), "denied");
            return Ok(Finished::of(Err(failure)));
        }
        if let Some(ask) = ask.filter(|_| !hook_allowed) {
            let denial = self.permit(call, &ask, msg).await?;
            if msg.cancel.is_cancelled() {
                return Ok(Finished::interrupted());
            }
            if let Some(denial) = denial {
                return Ok(Finished::of(Err(denial)));
            }
        }
        let Some(tool) = builtin else {
            return self.external_tool(call, turn, args).await;
        };
        if let Some((server, name)) = tool.mcp_origin() {
            ctx.mcp_meta = self.pre_mcp_meta(call, server, name, &args).await?;
        }
        self.run_builtin(call, tool, args, ctx, turn).await
    }

    /// Records a loaded skill the runtime's way: `skill.invoked`, then its context as a
    /// `user.message` from `skill-<name>` that the model reads after the tool results.
    fn skill_invoked(&self, skill: &Skill, turn: &Turn<'_, '_>) -> Result<(), LoopError> {
        self.emitter.emit(&SkillInvoked {
            name: skill.name.clone(),
            path: skill.path.display().to_string(),
            content: skill.body.clone(),
            source: Some(CUSTOM_SOURCE.into()),
            description: Some(skill.description.clone()),
            trigger: Some("agent-invoked".into()),
            model: Some(turn.model.to_owned()),
            ..Default::default()
        })?;
        self.emitter.emit(&UserMessage {
            content: skill.context(),
            source: Some(format!("{SKILL_SOURCE_PREFIX}{}", skill.name)),
            interaction_id: Some(turn.msg.interaction_id.clone()),
            ..Default::default()
        })?;
        Ok(())
    }

    /// Runs a client-implemented tool: recorded as `external_tool.requested`, answered by the
    /// client, closed by `external_tool.completed` (ephemeral) and `tool.execution_complete`.
    async fn external_tool(
        &self,
        call: &ToolCall,
        turn: &Turn<'_, '_>,
        args: Value,
    ) -> Result<Finished, LoopError> {
        if self.parts.external_tools.is_none() {
            return Err(LoopError::Closed(self.id));
        }
        let request_id = Uuid::new_v4().to_string();
        self.emitter.emit(&ExternalToolRequested {
            request_id: request_id.clone(),
            session_id: self.id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments: Some(args.clone()),
            working_directory: Some(self.parts.config.cwd.display().to_string()),
            ..Default::default()
        })?;
        self.await_external(call, turn, request_id, args).await
    }

    /// Waits for the client's answer to an announced client tool call.
    async fn await_external(
        &self,
        call: &ToolCall,
        turn: &Turn<'_, '_>,
        request_id: String,
        arguments: Value,
    ) -> Result<Finished, LoopError> {
        let Some(handler) = self.parts.external_tools.clone() else {
            return Err(LoopError::Closed(self.id));
        };
        let request = ExternalToolCall {
            request_id: request_id.clone(),
            session_id: self.id.to_string(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments,
        };
        let answer = tokio::select! {
            r = handler.call(request) => Some(r),
            _ = turn.msg.cancel.cancelled() => None,
        };
        self.emitter.emit(&ExternalToolCompleted { request_id })?;
        match answer {
            Some(result) => Ok(Finished::of(result)),
            None => Ok(Finished::interrupted()),
        }
    }

    /// Records the call's one `tool.execution_complete`.
    fn complete_tool(
        &self,
        call: &ToolCall,
        turn: &Turn<'_, '_>,
        result: Result<ToolOutput, ToolFailure>,
    ) -> Result<ToolsEnd, LoopError> {
        let done = completion(call, turn, result);
        let rejected = done.rejected;
        // Only the file tools change code; other calls' arguments are not parsed again.
        if done.event.success && matches!(call.name.as_str(), "create" | "edit") {
            super::lock::lock(&self.process_usage).add_file_change(
                &call.name,
                &call.arguments_value(),
                &self.parts.config.cwd,
            );
        }
        self.emitter
            .emit_as_with_live(None, &done.event, done.live().as_ref())?;
        Ok(ToolsEnd {
            rejected,
            ..Default::default()
        })
    }

    /// The spec of the client tool `name`, if a client implements it.
    fn external_spec(&self, name: &str) -> Option<ToolSpec> {
        self.parts
            .external_tools
            .as_ref()?
            .specs()
            .into_iter()
            .find(|s| s.name == name)
    }
}

/// The result of a call cut short by an abort (the resume plan's wording).
pub(super) fn interrupted() -> ToolFailure {
    ToolFailure::new(INTERRUPTED_MESSAGE, INTERRUPTED_CODE)
}

/// A call's `tool.execution_complete` as the journal records it, and what goes with it.
pub(super) struct Completion {
    /// The event the journal records.
    pub(super) event: ToolExecutionComplete,
    /// A client rejected the call.
    pub(super) rejected: bool,
    /// The result's content blocks for live subscribers only (`result.contents`).
    pub(super) live_contents: Option<Vec<serde_json::Value>>,
}

impl Completion {
    /// The event as live subscribers get it: the journal's, with the live-only blocks.
    pub(super) fn live(&self) -> Option<ToolExecutionComplete> {
        let contents = self.live_contents.clone()?;
        let mut live = self.event.clone();
        live.result.as_mut()?.contents = Some(contents);
        Some(live)
    }
}

/// The `tool.execution_complete` of a call, and whether a client rejected it.
pub(super) fn completion(
    call: &ToolCall,
    turn: &Turn<'_, '_>,
    result: Result<ToolOutput, ToolFailure>,
) -> Completion {
    let mut live_contents = None;
    let (success, result, error, rejected) = match result {
        Ok(out) => {
            live_contents = out.live_contents;
            // The runtime records the model's text as the detailed text when a tool has no
            // text of its own for people.
            let detailed = out.detailed_content.unwrap_or_else(|| out.content.clone());
            let binary = (!out.binary_results.is_empty())
                .then(|| out.binary_results.iter().map(|b| b.to_value()).collect());
            (
                true,
                Some(ToolResult {
                    content: out.content,
                    detailed_content: Some(detailed),
                    binary_results_for_llm: binary,
                    ..Default::default()
                }),
                None,
                false,
            )
        }
        Err(f) => {
            let rejected = f.code.as_deref() == Some(REJECTED_CODE);
            let error = ToolError {
                message: f.message,
                code: f.code,
                ..Default::default()
            };
            (false, None, Some(error), rejected)
        }
    };
    let event = ToolExecutionComplete {
        tool_call_id: call.id.clone(),
        model: Some(turn.model.to_owned()),
        interaction_id: Some(turn.msg.interaction_id.clone()),
        turn_id: Some(turn.turn_id.to_owned()),
        rte: Some(false),
        success,
        result,
        error,
        ..Default::default()
    };
    Completion {
        event,
        rejected,
        live_contents,
    }
}
