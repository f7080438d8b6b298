//! One turn: exactly one LLM call between `assistant.turn_start` and `assistant.turn_end`,
//! its streamed deltas and retries, then the tools it asked for.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    Abort, AssistantMessage, AssistantMessageDelta, AssistantTurnEnd, AssistantTurnRetry,
    AssistantTurnStart, AssistantUsage, ToolRequest,
};

use super::LoopError;
use super::actor::Actor;
use super::history::chat_messages;
use super::message::Message;
use super::tool_call::interrupted;
use crate::autopilot::AgentMode;
use crate::model::{ChatRequest, ModelError, ModelEvent, ModelResponse, ToolSchema};

/// How a turn ended.
pub(super) enum TurnEnd {
    /// The model called tools: another turn follows.
    Tools,
    /// The model answered without tools.
    Answered,
    /// Cancelled (the turn is already closed).
    Aborted,
    /// The model call failed (the turn is already closed).
    Failed(ModelError),
}

impl Actor {
    /// One turn: exactly one LLM call, then the tools it asked for.
    pub(super) async fn turn(
        &mut self,
        turn: u64,
        msg: &mut Message<'_>,
    ) -> Result<TurnEnd, LoopError> {
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

    pub(super) async fn end_turn(&mut self, turn_id: &str) -> Result<(), LoopError> {
        self.emitter.emit(&AssistantTurnEnd {
            turn_id: turn_id.to_owned(),
            ..Default::default()
        })?;
        self.emitter.boundary().await
    }

    pub(super) fn abort_event(&mut self) -> Result<(), LoopError> {
        self.emitter.emit(&Abort {
            reason: "user_initiated".into(),
        })?;
        Ok(())
    }

    pub(super) fn request(&self, mode: AgentMode) -> ChatRequest {
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
    pub(super) fn tool_specs(&self, mode: AgentMode) -> Vec<crate::tools::ToolSpec> {
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
    pub(super) fn is_external(&self, name: &str) -> bool {
        self.parts
            .external_tools
            .as_ref()
            .is_some_and(|x| x.specs().iter().any(|s| s.name == name))
    }

    /// The one LLM call of a turn, forwarding deltas and retries as ephemeral events.
    pub(super) async fn call_model(
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

    pub(super) fn model_event(
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
}
