//! One turn: exactly one LLM call between `assistant.turn_start` and `assistant.turn_end`,
//! its streamed deltas and retries, then the tools it asked for.

use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    Abort, AssistantMessage, AssistantTurnEnd, AssistantTurnStart, SessionWarning, ToolRequest,
};

use super::LoopError;
use super::actor::Actor;
use super::history::request_messages;
use super::message::Message;
use crate::autopilot::AgentMode;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelError, ModelErrorKind, ToolCall, ToolSchema,
};

/// How a turn ended.
pub(super) enum TurnEnd {
    /// The model called tools: another turn follows.
    Tools,
    /// The model answered without tools.
    Answered,
    /// A client rejected a tool call (`resultType: "rejected"`): the message ends without
    /// another LLM call, as in the runtime.
    Rejected,
    /// Cancelled (the turn is already closed).
    Aborted,
    /// The model call failed (the turn is already closed).
    Failed(ModelError),
}

impl Actor {
    /// One turn: exactly one LLM call, then the tools it asked for. `initial`: the first
    /// call of the message in this process (`session.usage_info`'s `isInitial`).
    pub(super) async fn turn(
        &self,
        turn: u64,
        initial: bool,
        msg: &mut Message<'_>,
    ) -> Result<TurnEnd, LoopError> {
        let turn_id = turn.to_string();
        // The request offers the MCP tools as they are now (a server's list may have changed).
        self.refresh_mcp_tools().await?;
        let measured = self
            .request_in_window(msg.mode, &msg.headers, msg.cancel)
            .await?;
        let mut request = measured.request;
        request.headers = msg.headers.clone();
        // As the Copilot CLI marks its calls: the prompt's first call is the user's, the
        // calls after tool results (or after an agent woke the main agent) the agent's. A client's own header of that name wins.
        if !request
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("x-initiator"))
        {
            let initiator = if turn == 0 && !msg.woken {
                "user"
            } else {
                "agent"
            };
            request
                .headers
                .push(("x-initiator".into(), initiator.into()));
        }
        // `assistant.turn_start` counts an LLM call: it is recorded only when nothing stands
        // between it and sending the request (an aborted message sends nothing).
        if msg.cancel.is_cancelled() {
            self.abort_event()?;
            return Ok(TurnEnd::Aborted);
        }
        let started = self.emitter.emit(&AssistantTurnStart {
            turn_id: turn_id.clone(),
            interaction_id: Some(msg.interaction_id.clone()),
            ..Default::default()
        })?;
        // Shells that ended with no call waiting for them (`ended_shells.rs`): the runtime
        // records their notices right after the turn starts, before the call's usage, which
        // it measured without them and chains to the turn's start.
        let mut notices = self.announce_ended_shells()?;
        let (estimated, announced) =
            self.announce_call(&measured.estimate, &turn_id, initial, started.id)?;
        let exact = measured.exact;
        // Background agents that ended since the last call: the runtime tells the model after
        // the turn starts and its usage is announced, and the model reads it after the history.
        notices.extend(self.announce_ended_agents()?);
        // Shells a crash took that the model has not heard of, said once (`lost_shells.rs`).
        notices.extend(self.announce_lost_shells()?);
        for text in notices {
            request.messages.push(ChatMessage::User {
                content: text,
                parts: Vec::new(),
            });
        }
        let assistant_message_id = Uuid::new_v4().to_string();
        let response = match self
            .call_model(&request, &turn_id, &assistant_message_id, msg.cancel)
            .await?
        {
            Ok(r) => r,
            Err(e) if msg.cancel.is_cancelled() || e.kind == ModelErrorKind::Cancelled => {
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
        let (calls, renamed) = unique_ids(&response.tool_calls);
        let requests: Vec<ToolRequest> = calls
            .iter()
            .map(|c| {
                let args = c.arguments_value();
                let ctx = self.tool_context(msg.cancel);
                let tools = self.live_tools();
                let tool = tools.get(&c.name);
                ToolRequest {
                    tool_call_id: c.id.clone(),
                    name: c.name.clone(),
                    // The runtime's titled tools leave out a summary they do not have.
                    intention_summary: tool.and_then(|t| {
                        let summary = t.intention_summary(&args, &ctx);
                        (summary.is_some() || t.tool_title().is_none()).then_some(summary)
                    }),
                    tool_title: tool.and_then(|t| t.tool_title()).map(str::to_owned),
                    mcp_server_name: tool.and_then(|t| t.mcp_origin()).map(|o| o.0.to_owned()),
                    mcp_tool_name: tool.and_then(|t| t.mcp_origin()).map(|o| o.1.to_owned()),
                    arguments: Some(args),
                    kind: Some("function".into()),
                    ..Default::default()
                }
            })
            .collect();
        // As the runtime: the call's usage is announced before its message.
        if let Some(usage) = &response.usage {
            if exact {
                super::lock::lock(&self.calibration).observe(estimated, usage.input_tokens);
            }
            let call = super::usage::Call {
                response: &response,
                usage,
                model: &model,
                calls: &calls,
                offered_tools: request.tools.len(),
                tool_tokens: announced.tool_definitions_tokens,
                api_endpoint: self.parts.provider.api_endpoint(),
            };
            self.emitter.emit(&call.event())?;
            super::lock::lock(&self.process_usage).add_call(&model, usage);
        }
        self.emitter.emit(&AssistantMessage {
            message_id: assistant_message_id,
            originating_message_id: Some(msg.message_id.clone()),
            model: Some(model.clone()),
            content: response.content.clone(),
            tool_requests: Some(requests),
            interaction_id: Some(msg.interaction_id.clone()),
            turn_id: Some(turn_id.clone()),
            output_tokens: response.usage.as_ref().map(|u| u.output_tokens),
            // No call runs tools remotely here.
            rte: Some(false),
            api_call_id: response.api_call_id.clone(),
            ..Default::default()
        })?;
        if !renamed.is_empty() {
            let renames: Vec<String> = renamed
                .iter()
                .map(|(from, to)| format!("{from:?} -> {to:?}"))
                .collect();
            self.emitter.emit(&SessionWarning {
                warning_type: "tool_call_id".into(),
                message: format!(
                    "the model gave several tool calls of turn {turn_id} the same id; renamed so each result answers one call: {}",
                    renames.join(", ")
                ),
                ..Default::default()
            })?;
        }
        // Every requested call gets a result (an aborted one its interrupted result), so the
        // history stays valid.
        let tools = self.tools(&calls, &turn_id, msg, &model).await?;
        self.end_turn(&turn_id).await?;
        msg.task_completed |= tools.task_completed;
        Ok(if tools.aborted {
            TurnEnd::Aborted
        } else if calls.is_empty() {
            TurnEnd::Answered
        } else if tools.rejected {
            TurnEnd::Rejected
        } else {
            TurnEnd::Tools
        })
    }

    pub(super) async fn end_turn(&self, turn_id: &str) -> Result<(), LoopError> {
        self.emitter.emit(&AssistantTurnEnd {
            turn_id: turn_id.to_owned(),
            ..Default::default()
        })?;
        self.emitter.boundary().await
    }

    pub(super) fn abort_event(&self) -> Result<(), LoopError> {
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
            messages: request_messages(&self.emitter.state()),
            reasoning_effort: self.parts.config.reasoning_effort.clone(),
            tools,
            stream: self.parts.config.streaming,
            ..Default::default()
        }
    }

    /// The tools offered to the model: built-ins (task_complete only in autopilot), with a
    /// client's tools added or replacing built-ins of the same name.
    pub(super) fn tool_specs(&self, mode: AgentMode) -> Vec<turnstile_tools::ToolSpec> {
        let external = self
            .parts
            .external_tools
            .as_ref()
            .map(|x| x.specs())
            .unwrap_or_default();
        let mut specs: Vec<_> = self
            .live_tools()
            .specs()
            .into_iter()
            .filter(|t| mode == AgentMode::Autopilot || t.name != "task_complete")
            .filter(|t| !external.iter().any(|x| x.name == t.name))
            .collect();
        specs.extend(external);
        specs.retain(|t| !self.is_excluded(&t.name));
        specs
    }

    /// Whether the session keeps the tool `name` from the model (`excludedTools`).
    pub(super) fn is_excluded(&self, name: &str) -> bool {
        self.parts.config.excluded_tools.iter().any(|t| t == name)
    }
}

/// The calls with every id unique within the turn: a repeated (or empty) id becomes
/// `<id>_<n>`, the first free n from 2. Returns the renames too. The real runtime runs calls
/// that share an id and answers the id twice; a history where one id has two results is
/// ambiguous to the model and to the audit, so turnstile records the renamed ids everywhere
/// (`assistant.message` included) and runs every call.
pub(super) fn unique_ids(calls: &[ToolCall]) -> (Vec<ToolCall>, Vec<(String, String)>) {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(calls.len());
    let mut renamed = Vec::new();
    // The original ids are reserved first, so a rename never takes an id a later call has.
    let originals: std::collections::HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    for call in calls {
        let mut call = call.clone();
        if call.id.is_empty() || !seen.insert(call.id.clone()) {
            let base = if call.id.is_empty() {
                "call"
            } else {
                call.id.as_str()
            };
            let fresh = (2u64..)
                .map(|n| format!("{base}_{n}"))
                .find(|id| !seen.contains(id) && !originals.contains(id.as_str()))
                .unwrap_or_default();
            seen.insert(fresh.clone());
            renamed.push((std::mem::replace(&mut call.id, fresh.clone()), fresh));
        }
        out.push(call);
    }
    (out, renamed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn repeated_and_empty_ids_are_renamed_without_taking_a_later_id() {
        let (calls, renamed) =
            unique_ids(&[call("c1"), call("c2"), call("c1"), call("c1_2"), call("")]);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c2", "c1_3", "c1_2", "call_2"]);
        assert_eq!(
            renamed,
            [
                ("c1".to_owned(), "c1_3".to_owned()),
                (String::new(), "call_2".to_owned())
            ]
        );
    }

    #[test]
    fn unique_ids_are_kept() {
        let (calls, renamed) = unique_ids(&[call("a"), call("b")]);
        assert_eq!(calls, [call("a"), call("b")]);
        assert!(renamed.is_empty());
    }
}
