//! A sub-agent started by `task`: its own conversation (system prompt, the task as its user
//! message, its model calls and tool results), run to its final answer inside the parent's
//! tool call (sync mode) or beside the parent's turns (background mode, `background.rs`),
//! then continued by a round per `write_agent` message. Its events go to the session's
//! journal with the envelope's `agentId` (the
//! parent's tool call id, as the runtime records it), so the fold keeps them out of the main
//! agent's conversation and the audit counts its model calls.
//!
//! Unlike the runtime, which sends a sub-agent's `assistant.turn_start`/`turn_end` live only,
//! they are persisted: every LLM call of the session stays visible in the journal.

use std::time::Instant;

use turnstile_journal::payload::{
    SessionBackgroundTasksChanged, SubagentCompleted, SubagentFailed, SubagentStarted,
    SystemMessage, ToolExecutionStart, UserMessage,
};
use turnstile_journal::{Timestamp, Uuid};

use super::LoopError;
use super::actor::Actor;
use super::conversation::Conversation;
use super::message::Message;
use super::tool_call::{Finished, ToolsEnd, Turn, completion, interrupted};
use super::turn::TurnEnd;
use super::turn_spec::{Child, Spent, SubTurn, TurnSpec};
use crate::prompt::wrap_prompt;
use turnstile_providers::{CallOrigin, ChatMessage, ChatRequest, ToolCall, ToolSchema};
use turnstile_tools::task::TaskArgs;
use turnstile_tools::{ToolFailure, ToolOutput};

/// Model calls one sub-agent may make before it is stopped without an answer.
pub(super) const MAX_SUBAGENT_TURNS: u64 = 40;

impl Actor {
    /// Runs the sub-agent of the `task` call `call_id` to its answer: `Ok(Err(..))` is a
    /// failure the parent's model reads; `Err` only a session failure (the journal).
    pub(super) async fn subagent(
        &self,
        call_id: &str,
        args: TaskArgs,
        msg: &Message<'_>,
    ) -> Result<Result<ToolOutput, ToolFailure>, LoopError> {
        let child = Child {
            id: call_id,
            kind: args.agent_type,
            model: args
                .model
                .clone()
                .unwrap_or_else(|| self.parts.config.model.clone()),
            interaction_id: Uuid::new_v4().to_string(),
            msg,
        };
        let agent = Some(child.id);
        self.emitter.emit_as(
            agent,
            &SubagentStarted {
                tool_call_id: call_id.to_owned(),
                agent_name: child.kind.name().into(),
                agent_display_name: child.kind.display_name().into(),
                agent_description: child.kind.description().into(),
                model: Some(child.model.clone()),
                ..Default::default()
            },
        )?;
        // A sub-agent is background work to the runtime's clients while it runs.
        self.emitter.emit(&SessionBackgroundTasksChanged {})?;
        let system = child.kind.system_prompt(&self.parts.config.cwd);
        self.emitter.emit_as(
            agent,
            &SystemMessage {
                role: "system".into(),
                content: system.clone(),
                interaction_id: Some(child.interaction_id.clone()),
                ..Default::default()
            },
        )?;
        // The runtime adds no reminders to a sub-agent's task, only the time.
        let transformed = wrap_prompt(&args.prompt, &Timestamp::now(), [], true);
        self.emitter.emit_as(
            agent,
            &UserMessage {
                content: args.prompt.clone(),
                transformed_content: Some(transformed.clone()),
                source: Some(format!("agent-{}", self.id)),
                attachments: Some(Vec::new()),
                supported_native_document_mime_types: Some(Vec::new()),
                delivery: Some("idle".into()),
                interaction_id: Some(child.interaction_id.clone()),
                ..Default::default()
            },
        )?;
        let mut history = vec![
            ChatMessage::System {
                content: system.clone(),
            },
            ChatMessage::User {
                content: transformed,
                parts: Vec::new(),
            },
        ];
        let mut spent = Spent {
            started: Instant::now(),
            tool_calls: 0,
            tokens: 0,
        };
        let step = self.agent_round(&child, &mut history, &mut spent).await?;
        // Kept for the rounds `write_agent` may start (a background agent's).
        super::lock::lock(&self.conversations).insert(
            call_id.to_owned(),
            Conversation {
                kind: child.kind,
                model: child.model.clone(),
                system,
                history,
            },
        );
        match step {
            RoundEnd::Answer(text) => {
                self.emitter.emit_as(
                    agent,
                    &SubagentCompleted {
                        tool_call_id: call_id.to_owned(),
                        agent_name: child.kind.name().into(),
                        agent_display_name: child.kind.display_name().into(),
                        model: Some(child.model.clone()),
                        total_tool_calls: Some(spent.tool_calls),
                        total_tokens: Some(spent.tokens),
                        duration_ms: Some(spent.started.elapsed().as_millis() as u64),
                        ..Default::default()
                    },
                )?;
                self.emitter.emit(&SessionBackgroundTasksChanged {})?;
                Ok(Ok(ToolOutput {
                    content: text.clone(),
                    detailed_content: Some(text),
                    ..Default::default()
                }))
            }
            RoundEnd::Failed(failure) => self.child_failed(&child, &spent, failure),
        }
    }

    /// A later round of the agent of the `task` call `call_id`: its system prompt again, the
    /// message as a new user turn (`delivery` `idle` when it woke the agent, `queued` when it
    /// waited for the round before), and its turns to an answer, as the runtime records a
    /// round (no `subagent.started`/`completed` around it). `Ok(Err(..))`: the round ended
    /// without an answer.
    pub(super) async fn continue_agent(
        &self,
        call_id: &str,
        message: String,
        delivery: &str,
        msg: &Message<'_>,
    ) -> Result<Result<String, String>, LoopError> {
        let Some(mut conversation) = super::lock::lock(&self.conversations).remove(call_id) else {
            return Ok(Err(format!(
                "the conversation of the agent of {call_id} is not known to this process"
            )));
        };
        let child = Child {
            id: call_id,
            kind: conversation.kind,
            model: conversation.model.clone(),
            interaction_id: Uuid::new_v4().to_string(),
            msg,
        };
        let agent = Some(child.id);
        self.emitter.emit(&SessionBackgroundTasksChanged {})?;
        self.emitter.emit_as(
            agent,
            &SystemMessage {
                role: "system".into(),
                content: conversation.system.clone(),
                interaction_id: Some(child.interaction_id.clone()),
                ..Default::default()
            },
        )?;
        let transformed = wrap_prompt(&message, &Timestamp::now(), [], true);
        self.emitter.emit_as(
            agent,
            &UserMessage {
                content: message,
                transformed_content: Some(transformed.clone()),
                source: Some(format!("agent-{}", self.id)),
                attachments: Some(Vec::new()),
                supported_native_document_mime_types: Some(Vec::new()),
                delivery: Some(delivery.into()),
                interaction_id: Some(child.interaction_id.clone()),
                ..Default::default()
            },
        )?;
        conversation.history.push(ChatMessage::User {
            content: transformed,
            parts: Vec::new(),
        });
        let mut spent = Spent {
            started: Instant::now(),
            tool_calls: 0,
            tokens: 0,
        };
        let step = self
            .agent_round(&child, &mut conversation.history, &mut spent)
            .await;
        super::lock::lock(&self.conversations).insert(call_id.to_owned(), conversation);
        self.emitter.emit(&SessionBackgroundTasksChanged {})?;
        Ok(match step? {
            RoundEnd::Answer(text) => Ok(text),
            RoundEnd::Failed(failure) => Err(failure.message),
        })
    }

    /// The turns of one round of a sub-agent, to its answer, a failure, or the turn limit.
    async fn agent_round(
        &self,
        child: &Child<'_, '_>,
        history: &mut Vec<ChatMessage>,
        spent: &mut Spent,
    ) -> Result<RoundEnd, LoopError> {
        // Past the session's bound the agent waits for a place before its first call.
        let Some(_slot) = super::slots::take(&self.agent_slots, child.msg.cancel).await else {
            return Ok(RoundEnd::Failed(interrupted()));
        };
        for turn in 0..MAX_SUBAGENT_TURNS {
            let mut spec = TurnSpec::sub(child, history, spent);
            match self.run_turn(&mut spec, turn).await? {
                // Its tools answer a rejection like any failure (`tools_one_by_one`).
                TurnEnd::Tools | TurnEnd::Rejected => {}
                TurnEnd::Answered => return Ok(RoundEnd::Answer(spec.into_answer())),
                TurnEnd::Aborted => return Ok(RoundEnd::Failed(interrupted())),
                TurnEnd::Failed(e) => {
                    let failure = ToolFailure::new(
                        format!("The sub-agent's model call failed: {e}"),
                        "failure",
                    );
                    return Ok(RoundEnd::Failed(failure));
                }
            }
        }
        Ok(RoundEnd::Failed(ToolFailure::new(
            format!(
                "The sub-agent made {MAX_SUBAGENT_TURNS} model calls without giving an answer and was stopped."
            ),
            "failure",
        )))
    }

    /// Records how the sub-agent failed and gives the parent's model the failure.
    fn child_failed(
        &self,
        child: &Child<'_, '_>,
        spent: &Spent,
        failure: ToolFailure,
    ) -> Result<Result<ToolOutput, ToolFailure>, LoopError> {
        self.emitter.emit_as(
            Some(child.id),
            &SubagentFailed {
                tool_call_id: child.id.to_owned(),
                agent_name: child.kind.name().into(),
                agent_display_name: child.kind.display_name().into(),
                error: failure.message.clone(),
                model: Some(child.model.clone()),
                total_tool_calls: Some(spent.tool_calls),
                total_tokens: Some(spent.tokens),
                duration_ms: Some(spent.started.elapsed().as_millis() as u64),
                ..Default::default()
            },
        )?;
        self.emitter.emit(&SessionBackgroundTasksChanged {})?;
        Ok(Err(failure))
    }

    /// A sub-agent's request: its conversation, the tools its kind is offered, its model;
    /// the tool definitions' tokens kept for its usage.
    pub(super) fn sub_request(&self, sub: &mut SubTurn<'_, '_>) -> ChatRequest {
        let child = sub.child;
        let tools: Vec<ToolSchema> = self
            .tool_specs(child.msg.mode)
            .into_iter()
            .filter(|t| child.kind.offers(&t.name))
            .map(|t| ToolSchema {
                name: t.name,
                description: t.description,
                parameters: t.parameters,
            })
            .collect();
        let request = ChatRequest {
            model: child.model.clone(),
            messages: sub.history.clone(),
            tools,
            stream: self.parts.config.streaming,
            reasoning_effort: self.parts.config.reasoning_effort.clone(),
            // The turn loop adds the message's headers and the `x-initiator`.
            headers: Vec::new(),
            no_tool_calls: false,
            origin: CallOrigin::Agent(child.id.to_owned()),
            citations: self.parts.config.enable_citations,
        };
        // Only the usage event reads this figure: it never waits for the vocabulary, which
        // would hold the session's task (the main agent and every other agent) meanwhile.
        sub.tool_tokens = crate::prompt::tokens::Measure::new(&child.model)
            .unless_loading(&request, u64::MAX)
            .usage_info(&request, self.token_limit(), false)
            .tool_definitions_tokens;
        request
    }

    /// Runs a sub-agent's tool calls one after the other, each started, run and completed
    /// before the next starts (the main agent's run together, `tool_call.rs::tools`); each
    /// result goes into its conversation. A call after an abort gets its interrupted result.
    pub(super) async fn tools_one_by_one(
        &self,
        sub: &mut SubTurn<'_, '_>,
        calls: &[ToolCall],
        turn_id: &str,
        model: &str,
    ) -> Result<ToolsEnd, LoopError> {
        let child = sub.child;
        let agent = Some(child.id);
        let msg = child.msg;
        // Sub-agents do not start agents of their own (`task` is not theirs). Their calls run
        // one by one, so the bound is never reached.
        let slots = super::slots::slots(1);
        let shared = Turn {
            turn_id,
            msg,
            model,
            background: None,
            slots: &slots,
        };
        let mut cut_short = false;
        for call in calls {
            let arguments = call.arguments_value();
            let shell_tool_info = self
                .live_tools()
                .get(&call.name)
                .and_then(|t| t.shell_tool_info(&arguments));
            self.emitter.emit_as(
                agent,
                &ToolExecutionStart {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    arguments: Some(arguments),
                    turn_id: Some(turn_id.to_owned()),
                    model: Some(model.to_owned()),
                    rte: Some(false),
                    shell_tool_info,
                    parent_tool_call_id: Some(child.id.to_owned()),
                    ..Default::default()
                },
            )?;
            let finished = if cut_short || msg.cancel.is_cancelled() {
                Finished::of(Err(interrupted()))
            } else if child.kind.offers(&call.name) && self.live_tools().get(&call.name).is_some() {
                Box::pin(self.tool(call, &shared)).await?
            } else {
                Finished::of(Err(self.unknown_to_child(child, &call.name)))
            };
            cut_short |= finished.interrupted;
            sub.spent.tool_calls += 1;
            let text = match &finished.result {
                Ok(out) => out.content.clone(),
                Err(f) => f.message.clone(),
            };
            let mut done = completion(call, &shared, finished.result);
            done.event.interaction_id = Some(child.interaction_id.clone());
            done.event.parent_tool_call_id = Some(child.id.to_owned());
            self.emitter
                .emit_as_with_live(agent, &done.event, done.live().as_ref())?;
            sub.history.push(ChatMessage::Tool {
                tool_call_id: call.id.clone(),
                content: text,
            });
        }
        Ok(ToolsEnd {
            aborted: cut_short || msg.cancel.is_cancelled(),
            ..Default::default()
        })
    }

    /// The answer to a sub-agent's call of a tool it was not given.
    fn unknown_to_child(&self, child: &Child<'_, '_>, name: &str) -> ToolFailure {
        let names: Vec<String> = self
            .tool_specs(child.msg.mode)
            .into_iter()
            .map(|t| t.name)
            .filter(|n| child.kind.offers(n))
            .collect();
        ToolFailure::new(
            format!(
                "Tool '{name}' does not exist. Available tools that can be called are {}.",
                names.join(", ")
            ),
            "unknown_tool",
        )
    }
}

/// How one round of a sub-agent ended.
enum RoundEnd {
    /// It answered (the text the parent's model reads).
    Answer(String),
    /// It ended without an answer.
    Failed(ToolFailure),
}
