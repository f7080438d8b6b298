//! Running one built-in tool inside its call: its partial output streamed as
//! `tool.execution_partial_result`, the permissions it asks midway, the events it causes
//! (todos, plan reviews, skills) and the sub-agents it starts, all recorded while it runs and
//! before its completion; then the `postToolUse` hook. The call around it (hooks before,
//! the permission decision, the completion) is `tool_call.rs`.

use serde_json::{Value, json};
use tokio::sync::mpsc;
use turnstile_journal::payload::{
    ExitPlanModeCompleted, ExitPlanModeRequested, SessionTodosChanged, ToolExecutionPartialResult,
};
use turnstile_providers::ToolCall;
use turnstile_tools::asks::FurtherAsk;
use turnstile_tools::events::ToolEvent;
use turnstile_tools::skills::Skill;
use turnstile_tools::task::SubagentRequest;
use turnstile_tools::{Tool, ToolContext};

use super::LoopError;
use super::actor::Actor;
use super::tool_call::{Finished, Turn};

impl Actor {
    /// Runs a built-in tool (its partial output streamed), then the postToolUse hook.
    pub(super) async fn run_builtin(
        &self,
        call: &ToolCall,
        tool: &dyn Tool,
        args: Value,
        mut ctx: ToolContext,
        turn: &Turn<'_, '_>,
    ) -> Result<Finished, LoopError> {
        let msg = turn.msg;
        // Past the turn's bound the call waits for a place, in request order.
        let Some(_slot) = super::slots::take(turn.slots, msg.cancel).await else {
            return Ok(Finished::interrupted());
        };
        let (partial_tx, mut partial_rx) = mpsc::unbounded_channel();
        ctx.partial = Some(partial_tx);
        let (asks_tx, mut asks_rx) = mpsc::unbounded_channel::<FurtherAsk>();
        ctx.asks = Some(asks_tx);
        let (events_tx, mut events_rx) = mpsc::unbounded_channel();
        ctx.events = Some(events_tx);
        let (subagents_tx, mut subagents_rx) = mpsc::unbounded_channel();
        ctx.subagents = Some(subagents_tx);
        let mut skills = Vec::new();
        // The files the call may change keep their preimages for a rewind.
        let tracked = self
            .file_snapshots
            .as_ref()
            .map(|s| (s, s.stage(&call.name, &args)));
        let mut result = {
            let run = tool.run(args.clone(), &ctx);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    biased;
                    Some(chunk) = partial_rx.recv() => {
                        self.emitter.emit(&ToolExecutionPartialResult { tool_call_id: call.id.clone(), partial_output: chunk })?;
                    }
                    // A permission the call needs midway goes the way its first one went.
                    Some(further) = asks_rx.recv() => {
                        let denial = self.permit(call, &further.ask, msg).await?;
                        let answer = denial.map_or(Ok(()), Err);
                        let _ = further.reply.send(answer);
                    }
                    Some(event) = events_rx.recv() => skills.extend(self.tool_event(event)?.map(|s| *s)),
                    // `task`: the sub-agent's loop runs here, in the session (boxed: its
                    // own tool calls come back through this function); `write_agent`: the
                    // round an idle agent wakes for.
                    Some(request) = subagents_rx.recv() => match request {
                        SubagentRequest::Start { args, reply } => {
                            let outcome = Box::pin(self.start_subagent(call, args, turn)).await?;
                            let _ = reply.send(outcome);
                        }
                        SubagentRequest::Wake { tool_call_id, message, reply } => {
                            Box::pin(self.wake_agent(tool_call_id, message, turn)).await?;
                            let _ = reply.send(());
                        }
                    },
                    r = &mut run => break r,
                }
            }
        };
        // What the call sent just before it ended still precedes its completion: a tool may
        // send its last piece of output and return in one poll, which the select above never
        // sees, as the run's arm won.
        while let Ok(chunk) = partial_rx.try_recv() {
            self.emitter.emit(&ToolExecutionPartialResult {
                tool_call_id: call.id.clone(),
                partial_output: chunk,
            })?;
        }
        while let Ok(event) = events_rx.try_recv() {
            skills.extend(self.tool_event(event)?.map(|s| *s));
        }
        if let Some((snapshots, paths)) = &tracked {
            snapshots.record(paths);
        }
        if msg.cancel.is_cancelled() {
            return Ok(Finished::interrupted());
        }
        if let (Err(failure), Some((server, _))) = (&result, tool.mcp_origin()) {
            self.warn_server_gone(server, failure)?;
        }
        if let Ok(output) = &mut result {
            let input = json!({"toolName": call.name, "toolArgs": args.to_string(), "toolResult": {"resultType": "success", "textResultForLlm": output.content}});
            if let Some(out) = self.hook("postToolUse", input, Some(&call.id)).await?
                && let Some(text) = out
                    .pointer("/modifiedResult/textResultForLlm")
                    .and_then(Value::as_str)
            {
                output.content = text.to_owned();
            }
        }
        let task_summary = (call.name == "task_complete" && result.is_ok()).then(|| {
            args.get("summary")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        });
        Ok(Finished {
            result,
            interrupted: false,
            task_summary,
            skills,
        })
    }

    /// Records an event a running tool caused; a loaded skill is handed back, since its
    /// events follow the call's completion.
    fn tool_event(&self, event: ToolEvent) -> Result<Option<Box<Skill>>, LoopError> {
        match event {
            ToolEvent::TodosChanged => self.emitter.emit(&SessionTodosChanged {})?,
            ToolEvent::SkillInvoked(skill) => return Ok(Some(skill)),
            ToolEvent::PlanReviewRequested {
                request_id,
                tool_call_id,
                review,
            } => self.emitter.emit(&ExitPlanModeRequested {
                request_id,
                summary: review.summary,
                actions: review.actions,
                recommended_action: review.recommended_action,
                tool_call_id,
                plan_content: review.plan_content,
            })?,
            ToolEvent::PlanReviewCompleted {
                request_id,
                decision,
            } => self.emitter.emit(&ExitPlanModeCompleted {
                approved: Some(decision.approved),
                selected_action: decision.selected_action,
                feedback: decision.feedback,
                request_id,
            })?,
        };
        Ok(None)
    }
}
