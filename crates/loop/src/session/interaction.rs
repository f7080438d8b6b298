//! The actor and the agent loop of one message: turns of exactly one LLM call each, tool
//! calls between them, autopilot nudges, abort and errors.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    Abort, AssistantMessage, AssistantMessageDelta, AssistantTurnEnd, AssistantTurnRetry,
    AssistantTurnStart, AssistantUsage, ExternalToolCompleted, ExternalToolRequested, HookEnd,
    HookError, HookStart, PermissionCompleted, PermissionRequested, SessionError, SessionIdle,
    SessionTaskComplete, SessionWarning, SystemMessage, ToolError, ToolExecutionComplete,
    ToolExecutionPartialResult, ToolExecutionStart, ToolRequest, ToolResult, UserMessage,
};
use turnstile_replay::resume_plan::{INTERRUPTED_CODE, INTERRUPTED_MESSAGE};

use super::emitter::Emitter;
use super::history::{chat_messages, default_system_prompt};
use super::{
    Command, LoopError, Outcome, SendOptions, SessionParts, Shared, lock, shutdown_payload,
};
use crate::autopilot::{AgentMode, NUDGE};
use crate::client::ExternalToolCall;
use crate::model::{ChatRequest, ModelError, ModelEvent, ModelResponse, ToolCall, ToolSchema};
use crate::permissions::Decision;
use crate::tools::{PermissionAsk, ToolContext, ToolFailure, ToolOutput};

/// Text the model sees when the policy denies a call and nobody can be asked (runtime wording).
const DENIED_NO_RULE: &str = "Permission denied and could not request permission from user";
/// Bytes of growth after which going idle refreshes the checkpoint.
const CHECKPOINT_EVERY_BYTES: u64 = 1 << 20;

pub(super) struct Actor {
    id: Uuid,
    emitter: Emitter,
    parts: SessionParts,
    needs_system: bool,
    checkpoint_at: u64,
}

/// How a turn ended.
enum TurnEnd {
    /// The model called tools: another turn follows.
    Tools,
    /// The model answered without tools.
    Answered,
    /// Cancelled (the turn is already closed).
    Aborted,
    /// The model call failed (the turn is already closed).
    Failed(ModelError),
}

/// Per-message facts the turns need.
struct Message<'a> {
    interaction_id: String,
    message_id: String,
    mode: AgentMode,
    cancel: &'a CancellationToken,
    task_completed: bool,
}

impl Actor {
    pub(super) fn new(id: Uuid, emitter: Emitter, parts: SessionParts, needs_system: bool) -> Self {
        let checkpoint_at = emitter.state().byte_size;
        Actor {
            id,
            emitter,
            parts,
            needs_system,
            checkpoint_at,
        }
    }

    pub(super) async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Command>,
        shared: Arc<Shared>,
    ) {
        // A resumed session starts with its `session.resume` already appended.
        let source = if self.emitter.state().counts.resumes > 0 {
            "resume"
        } else {
            "new"
        };
        self.hook_notify("sessionStart", json!({"source": source}))
            .await;
        let mut shutdown_reply = None;
        while let Some(cmd) = rx.recv().await {
            match cmd {
                Command::Send {
                    prompt,
                    options,
                    message_id,
                    done,
                } => {
                    let cancel = CancellationToken::new();
                    *lock(&shared.running) = Some(cancel.clone());
                    let outcome = match self.message(prompt, options, message_id, &cancel).await {
                        Ok(outcome) => outcome,
                        Err(e) => {
                            tracing::error!(session = %self.id, error = %e, "journal failure; the session stops");
                            *lock(&shared.running) = None;
                            let _ = done.send(Outcome::Failed {
                                error_type: "journal".into(),
                                status_code: None,
                                message: e.to_string(),
                            });
                            return;
                        }
                    };
                    *lock(&shared.running) = None;
                    let _ = done.send(outcome);
                }
                Command::Shutdown { done } => {
                    shutdown_reply = Some(done);
                    break;
                }
            }
        }
        let result = self.shutdown().await.map_err(|e| e.to_string());
        if let Some(done) = shutdown_reply {
            let _ = done.send(result);
        }
    }

    async fn shutdown(mut self) -> Result<(), LoopError> {
        self.hook_notify("sessionEnd", json!({"reason": "complete"}))
            .await;
        let payload = shutdown_payload(self.emitter.state(), &self.parts.config.model);
        self.emitter.emit(&payload)?;
        self.emitter.boundary().await?;
        let dir = self.emitter.writer().paths().dir.clone();
        self.emitter.into_writer().close()?;
        // The checkpoint is an optimisation: failing to write it loses nothing.
        if let Err(e) = turnstile_replay::write_checkpoint(&dir) {
            tracing::warn!(session = %self.id, error = %e, "could not write the checkpoint");
        }
        Ok(())
    }

    /// Runs one message to idle.
    async fn message(
        &mut self,
        prompt: String,
        options: SendOptions,
        message_id: String,
        cancel: &CancellationToken,
    ) -> Result<Outcome, LoopError> {
        let mode = options.mode.unwrap_or(self.parts.config.mode);
        let mut msg = Message {
            interaction_id: Uuid::new_v4().to_string(),
            message_id,
            mode,
            cancel,
            task_completed: false,
        };
        let transformed = self.prompt_hook(&prompt).await?;
        self.emitter.emit(&UserMessage {
            content: prompt,
            transformed_content: Some(transformed),
            message_id: Some(msg.message_id.clone()),
            agent_mode: (mode == AgentMode::Autopilot).then(|| mode.as_str().to_owned()),
            interaction_id: Some(msg.interaction_id.clone()),
            ..Default::default()
        })?;
        if self.needs_system {
            let content = self
                .parts
                .config
                .system_prompt
                .clone()
                .unwrap_or_else(default_system_prompt);
            self.emitter.emit(&SystemMessage {
                role: "system".into(),
                content,
                interaction_id: Some(msg.interaction_id.clone()),
                ..Default::default()
            })?;
            self.needs_system = false;
        }
        let mut continues = 0u32;
        let mut turn = 0u64;
        loop {
            match self.turn(turn, &mut msg).await? {
                // After `task_complete` the loop ends, as the runtime's does: no further call.
                TurnEnd::Tools if !msg.task_completed => {
                    turn += 1;
                    continue;
                }
                TurnEnd::Tools | TurnEnd::Answered => {}
                TurnEnd::Aborted => return self.idle(mode, true).await.map(|_| Outcome::Aborted),
                TurnEnd::Failed(e) => {
                    self.emitter.emit(&SessionError {
                        error_type: e.error_type.clone(),
                        message: e.message.clone(),
                        status_code: e.status_code,
                        ..Default::default()
                    })?;
                    self.hook_notify(
                        "errorOccurred",
                        json!({"error": {"name": e.error_type, "message": e.message}}),
                    )
                    .await;
                    self.idle(mode, false).await?;
                    return Ok(Outcome::Failed {
                        error_type: e.error_type,
                        status_code: e.status_code,
                        message: e.message,
                    });
                }
            }
            if mode != AgentMode::Autopilot || msg.task_completed {
                break;
            }
            if continues >= self.parts.config.max_autopilot_continues {
                self.emitter.emit(&SessionWarning {
                    warning_type: "autopilot".into(),
                    message: format!(
                        "autopilot stopped after {continues} continuations without task_complete"
                    ),
                    ..Default::default()
                })?;
                break;
            }
            continues += 1;
            // The runtime restarts turn ids after a nudge within the same interaction.
            turn = 0;
            self.emitter.emit(&UserMessage {
                content: String::new(),
                transformed_content: Some(NUDGE.to_owned()),
                source: Some("system".into()),
                message_id: Some(Uuid::new_v4().to_string()),
                agent_mode: Some(AgentMode::Autopilot.as_str().into()),
                is_autopilot_continuation: Some(true),
                interaction_id: Some(msg.interaction_id.clone()),
                ..Default::default()
            })?;
        }
        self.idle(mode, false).await?;
        Ok(Outcome::Idle)
    }

    /// Durability, then `session.idle` (always last, ephemeral), then maybe a checkpoint.
    async fn idle(&mut self, mode: AgentMode, aborted: bool) -> Result<(), LoopError> {
        self.emitter.boundary().await?;
        self.emitter.emit(&SessionIdle {
            aborted: aborted.then_some(true),
            // `mode: "autopilot"` on an idle marks a continuation boundary (the agent keeps
            // working); the SDK clients' sendAndWait ignores such idles. This idle ends the
            // message, so an autopilot run reports no mode here.
            mode: (mode != AgentMode::Autopilot).then(|| mode.as_str().into()),
        })?;
        let size = self.emitter.writer().byte_len();
        if size - self.checkpoint_at >= CHECKPOINT_EVERY_BYTES {
            // Runs after idle is announced: never on the path a client waits for.
            match turnstile_replay::write_checkpoint(&self.emitter.writer().paths().dir) {
                Ok(info) => self.checkpoint_at = info.offset,
                Err(e) => {
                    tracing::warn!(session = %self.id, error = %e, "could not write the checkpoint")
                }
            }
        }
        Ok(())
    }

    /// One turn: exactly one LLM call, then the tools it asked for.
    async fn turn(&mut self, turn: u64, msg: &mut Message<'_>) -> Result<TurnEnd, LoopError> {
        let turn_id = turn.to_string();
        if msg.cancel.is_cancelled() {
            return Ok(TurnEnd::Aborted).and_then(|t| self.abort_event().map(|_| t));
        }
        self.emitter.emit(&AssistantTurnStart {
            turn_id: turn_id.clone(),
            interaction_id: Some(msg.interaction_id.clone()),
            ..Default::default()
        })?;
        let request = self.request(msg.mode);
        let assistant_message_id = Uuid::new_v4().to_string();
        let response = match self
            .call_model(&request, &turn_id, &assistant_message_id, msg.cancel)
            .await?
        {
            Ok(r) => r,
            Err(e) if msg.cancel.is_cancelled() || e.error_type == "cancelled" => {
                self.abort_event()?;
                self.end_turn(&turn_id).await?;
                return Ok(TurnEnd::Aborted);
            }
            Err(e) => {
                self.end_turn(&turn_id).await?;
                return Ok(TurnEnd::Failed(e));
            }
        };
        let model = if response.model.is_empty() {
            self.parts.config.model.clone()
        } else {
            response.model.clone()
        };
        let requests: Vec<ToolRequest> = response
            .tool_calls
            .iter()
            .map(|c| {
                let args = c.arguments_value();
                let ctx = self.tool_context(msg.cancel);
                ToolRequest {
                    tool_call_id: c.id.clone(),
                    name: c.name.clone(),
                    intention_summary: self
                        .parts
                        .tools
                        .get(&c.name)
                        .map(|t| t.intention_summary(&args, &ctx)),
                    arguments: Some(args),
                    kind: Some("function".into()),
                    ..Default::default()
                }
            })
            .collect();
        self.emitter.emit(&AssistantMessage {
            message_id: assistant_message_id,
            originating_message_id: Some(msg.message_id.clone()),
            model: Some(model.clone()),
            content: response.content.clone(),
            tool_requests: Some(requests),
            interaction_id: Some(msg.interaction_id.clone()),
            turn_id: Some(turn_id.clone()),
            api_call_id: response.api_call_id.clone(),
            ..Default::default()
        })?;
        if let Some(usage) = &response.usage {
            self.emitter.emit(&AssistantUsage {
                model: model.clone(),
                input_tokens: Some(usage.input_tokens),
                output_tokens: Some(usage.output_tokens),
                cache_read_tokens: Some(usage.cache_read_tokens),
                cache_write_tokens: Some(usage.cache_write_tokens),
                reasoning_tokens: Some(usage.reasoning_tokens),
                duration: Some(usage.duration_ms),
                api_call_id: response.api_call_id.clone(),
                finish_reason: response.finish_reason.clone(),
                ..Default::default()
            })?;
        }
        let mut aborted = false;
        for call in &response.tool_calls {
            if aborted || msg.cancel.is_cancelled() {
                if !aborted {
                    self.abort_event()?;
                    aborted = true;
                }
                // Every requested call gets a result so the history stays valid.
                self.complete_tool(call, &turn_id, msg, Err(interrupted()), &model)?;
                continue;
            }
            aborted = self.tool(call, &turn_id, msg, &model).await?;
        }
        self.end_turn(&turn_id).await?;
        Ok(if aborted {
            TurnEnd::Aborted
        } else if response.tool_calls.is_empty() {
            TurnEnd::Answered
        } else {
            TurnEnd::Tools
        })
    }

    async fn end_turn(&mut self, turn_id: &str) -> Result<(), LoopError> {
        self.emitter.emit(&AssistantTurnEnd {
            turn_id: turn_id.to_owned(),
            ..Default::default()
        })?;
        self.emitter.boundary().await
    }

    fn abort_event(&mut self) -> Result<(), LoopError> {
        self.emitter.emit(&Abort {
            reason: "user_initiated".into(),
        })?;
        Ok(())
    }

    fn request(&self, mode: AgentMode) -> ChatRequest {
        let tools = self
            .tool_specs(mode)
            .into_iter()
            .map(|t| ToolSchema {
                name: t.name,
                description: t.description,
                parameters: t.parameters,
            })
            .collect();
        ChatRequest {
            model: self.parts.config.model.clone(),
            messages: chat_messages(
                &self.emitter.state().conversation,
                &self.emitter.state().assets,
            ),
            reasoning_effort: None,
            tools,
            stream: self.parts.config.streaming,
        }
    }

    /// The tools offered to the model: built-ins (task_complete only in autopilot), with a
    /// client's tools added or replacing built-ins of the same name.
    fn tool_specs(&self, mode: AgentMode) -> Vec<crate::tools::ToolSpec> {
        let external = self
            .parts
            .external_tools
            .as_ref()
            .map(|x| x.specs())
            .unwrap_or_default();
        let mut specs: Vec<_> = self
            .parts
            .tools
            .specs()
            .into_iter()
            .filter(|t| mode == AgentMode::Autopilot || t.name != "task_complete")
            .filter(|t| !external.iter().any(|x| x.name == t.name))
            .collect();
        specs.extend(external);
        specs
    }

    /// Whether a client implements the tool `name`.
    fn is_external(&self, name: &str) -> bool {
        self.parts
            .external_tools
            .as_ref()
            .is_some_and(|x| x.specs().iter().any(|s| s.name == name))
    }

    /// The one LLM call of a turn, forwarding deltas and retries as ephemeral events.
    async fn call_model(
        &mut self,
        request: &ChatRequest,
        turn_id: &str,
        message_id: &str,
        cancel: &CancellationToken,
    ) -> Result<Result<ModelResponse, ModelError>, LoopError> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let provider = Arc::clone(&self.parts.provider);
        let started = Instant::now();
        let call = provider.complete(request, tx, cancel.child_token());
        tokio::pin!(call);
        let result = loop {
            tokio::select! {
                biased;
                Some(event) = rx.recv() => self.model_event(event, turn_id, message_id)?,
                result = &mut call => break result,
            }
        };
        while let Ok(event) = rx.try_recv() {
            self.model_event(event, turn_id, message_id)?;
        }
        Ok(result.map(|mut r| {
            if let Some(u) = r.usage.as_mut().filter(|u| u.duration_ms == 0) {
                u.duration_ms = started.elapsed().as_millis() as u64;
            }
            r
        }))
    }

    fn model_event(
        &mut self,
        event: ModelEvent,
        turn_id: &str,
        message_id: &str,
    ) -> Result<(), LoopError> {
        match event {
            ModelEvent::TextDelta(text) => {
                self.emitter.emit(&AssistantMessageDelta {
                    message_id: message_id.to_owned(),
                    delta_content: text,
                    ..Default::default()
                })?;
            }
            ModelEvent::Retry { reason, .. } => {
                self.emitter.emit(&AssistantTurnRetry {
                    turn_id: turn_id.to_owned(),
                    model: Some(self.parts.config.model.clone()),
                    reason: Some(reason),
                })?;
            }
            ModelEvent::ToolCallDelta { .. } => {}
        }
        Ok(())
    }

    fn tool_context(&self, cancel: &CancellationToken) -> ToolContext {
        let mut ctx = ToolContext::new(self.parts.config.cwd.clone());
        ctx.allow_outside_cwd = self.parts.config.allow_outside_cwd;
        ctx.cancel = cancel.child_token();
        ctx
    }

    /// Runs one tool call with hooks and permissions; returns true when it was aborted.
    async fn tool(
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
    async fn permit(
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
    async fn external_tool(
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

    fn complete_tool(
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

    async fn prompt_hook(&mut self, prompt: &str) -> Result<String, LoopError> {
        let out = self
            .hook("userPromptSubmitted", json!({"prompt": prompt}), None)
            .await?;
        Ok(out
            .as_ref()
            .and_then(|o| o.get("modifiedPrompt"))
            .and_then(Value::as_str)
            .map_or_else(|| prompt.to_owned(), str::to_owned))
    }

    async fn hook_notify(&mut self, hook_type: &str, input: Value) {
        if let Err(e) = self.hook(hook_type, input, None).await {
            tracing::warn!(session = %self.id, error = %e, hook_type, "could not record a hook run");
        }
    }

    /// Runs the hooks of a kind, recorded as `hook.start`/`hook.end`. A failing hook is an
    /// error in `hook.end` and yields no output; only a journal failure is an `Err`.
    async fn hook(
        &mut self,
        hook_type: &str,
        mut input: Value,
        tool_call_id: Option<&str>,
    ) -> Result<Option<Value>, LoopError> {
        let Some(hooks) = self.parts.hooks.clone().filter(|h| h.handles(hook_type)) else {
            return Ok(None);
        };
        if let Some(obj) = input.as_object_mut() {
            obj.insert(
                "timestamp".into(),
                json!(turnstile_journal::Timestamp::now().millis()),
            );
            obj.entry("cwd")
                .or_insert_with(|| json!(self.parts.config.cwd));
            obj.insert("sessionId".into(), json!(self.id.to_string()));
        }
        let invocation = Uuid::new_v4().to_string();
        self.emitter.emit(&HookStart {
            hook_invocation_id: invocation.clone(),
            hook_type: hook_type.to_owned(),
            input: Some(input.clone()),
            parent_tool_call_id: tool_call_id.map(str::to_owned),
        })?;
        let result = hooks.invoke(hook_type, input).await;
        let (output, error) = match result {
            Ok(out) => (out, None),
            Err(message) => (None, Some(message)),
        };
        self.emitter.emit(&HookEnd {
            hook_invocation_id: invocation,
            hook_type: hook_type.to_owned(),
            output: output.clone(),
            success: error.is_none(),
            error: error.map(|message| HookError {
                message,
                ..Default::default()
            }),
            parent_tool_call_id: tool_call_id.map(str::to_owned),
        })?;
        Ok(output)
    }
}

fn interrupted() -> ToolFailure {
    ToolFailure::new(INTERRUPTED_MESSAGE, INTERRUPTED_CODE)
}
