//! One turn, of the main agent or of a sub-agent (`turn_spec.rs`: what differs): exactly one
//! LLM call between `assistant.turn_start` and `assistant.turn_end`, its streamed deltas and
//! retries when its stream is announced, then the tools it asked for.

use tokio::sync::mpsc;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    Abort, AssistantMessage, AssistantTurnEnd, AssistantTurnStart, ModelCallStart, SessionWarning,
    ToolRequest,
};

use super::LoopError;
use super::actor::Actor;
use super::history::{request_messages, request_messages_without_images};
use super::message::Message;
use super::tool_call::ToolsEnd;
use super::totals::CallAgent;
use super::turn_spec::{Kind, MainTurn, TurnSpec};
use crate::autopilot::AgentMode;
use turnstile_providers::{
    ChatMessage, ChatRequest, ModelError, ModelErrorKind, ModelResponse, ToolCall, ToolSchema,
    Usage,
};
use turnstile_tools::exit_plan_mode::EXIT_PLAN_MODE;

/// How a turn ended (a sub-agent's never ends `Rejected`: its tools take a rejection as a
/// failure, `subagent.rs::tools_one_by_one`).
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
    /// One turn of the main agent: exactly one LLM call, then the tools it asked for.
    /// `initial`: the first call of the message in this process (`session.usage_info`'s
    /// `isInitial`).
    pub(super) async fn turn(
        &self,
        turn: u64,
        initial: bool,
        msg: &mut Message<'_>,
    ) -> Result<TurnEnd, LoopError> {
        let mut spec = TurnSpec::main(msg, initial);
        let end = self.run_turn(&mut spec, turn).await?;
        let task_completed = matches!(
            spec.kind,
            Kind::Main(MainTurn {
                task_completed: true,
                ..
            })
        );
        msg.task_completed |= task_completed;
        Ok(end)
    }

    /// One turn of either kind of agent (`turn_spec.rs` says what differs): exactly one LLM
    /// call between `assistant.turn_start` and `assistant.turn_end`, then the tools it asked
    /// for.
    pub(super) async fn run_turn(
        &self,
        spec: &mut TurnSpec<'_, '_>,
        turn: u64,
    ) -> Result<TurnEnd, LoopError> {
        let turn_id = turn.to_string();
        let (agent, msg) = (spec.agent, spec.msg);
        // A client's own header of that name wins.
        let mut headers = msg.headers.clone();
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("x-initiator"))
        {
            headers.push(("x-initiator".into(), spec.initiator(turn).into()));
        }
        let mut request = match &mut spec.kind {
            Kind::Main(main) => self.main_request(main, msg).await?,
            Kind::Sub(sub) => self.sub_request(sub),
        };
        request.headers = headers;
        // `assistant.turn_start` counts an LLM call: it is recorded only when nothing stands
        // between it and sending the request (an aborted message sends nothing).
        if msg.cancel.is_cancelled() {
            if spec.records_abort() {
                self.abort_event()?;
            }
            return Ok(TurnEnd::Aborted);
        }
        let started = self.emitter.emit_as(
            agent,
            &AssistantTurnStart {
                turn_id: turn_id.clone(),
                interaction_id: Some(spec.interaction_id.to_owned()),
                ..Default::default()
            },
        )?;
        match &mut spec.kind {
            Kind::Main(main) => {
                self.announce_main_call(main, &mut request, &turn_id, started.id)?
            }
            // The call is announced under the agent's id, as the runtime announces it.
            Kind::Sub(_) => {
                self.emitter.emit_as(
                    agent,
                    &ModelCallStart {
                        turn_id: turn_id.clone(),
                        model: Some(request.model.clone()),
                        ..Default::default()
                    },
                )?;
            }
        }
        let assistant_message_id = Uuid::new_v4().to_string();
        let answer = if spec.stream {
            self.call_model(&request, &turn_id, &assistant_message_id, msg.cancel)
                .await?
        } else {
            // The receiver of the unannounced pieces only has to outlive the call.
            let (deltas, _unread) = mpsc::unbounded_channel();
            self.parts
                .provider
                .complete(&request, deltas, msg.cancel.child_token())
                .await
        };
        let response = match self.answered(spec, answer)? {
            Ok(response) => response,
            Err(end) => {
                // The call was made (its turn started): a request all the same.
                self.count_call(spec, &request.model, None);
                self.close_turn(spec, &turn_id).await?;
                return Ok(end);
            }
        };
        let model = if response.model.is_empty() {
            request.model.clone()
        } else {
            response.model.clone()
        };
        self.count_call(spec, &model, response.usage.as_ref());
        let (calls, renamed) = unique_ids(&response.tool_calls);
        let requests = self.tool_requests(spec, &calls);
        // As the runtime: the call's usage is announced before its message.
        if let Some(usage) = &response.usage {
            self.record_usage(spec, &response, usage, &model, &calls, request.tools.len())?;
        }
        self.emitter.emit_as(
            agent,
            &AssistantMessage {
                message_id: assistant_message_id,
                // A sub-agent's message answers its task, not the user's message.
                originating_message_id: matches!(spec.kind, Kind::Main(_))
                    .then(|| msg.message_id.clone()),
                model: Some(model.clone()),
                content: response.content.clone(),
                tool_requests: Some(requests),
                interaction_id: Some(spec.interaction_id.to_owned()),
                turn_id: Some(turn_id.clone()),
                output_tokens: response.usage.as_ref().map(|u| u.output_tokens),
                // No call runs tools remotely here.
                rte: Some(false),
                api_call_id: response.api_call_id.clone(),
                parent_tool_call_id: agent.map(str::to_owned),
                ..Default::default()
            },
        )?;
        match &mut spec.kind {
            Kind::Main(_) => self.warn_renamed(&renamed, &turn_id)?,
            // Its conversation is its own, not the fold's: the answer goes into it here.
            Kind::Sub(sub) => {
                sub.history.push(ChatMessage::Assistant {
                    content: (!response.content.is_empty()).then(|| response.content.clone()),
                    tool_calls: calls.clone(),
                });
                sub.answer = response.content.clone();
            }
        }
        // Every requested call gets a result (an aborted one its interrupted result), so the
        // history stays valid.
        let tools = match &mut spec.kind {
            _ if calls.is_empty() => ToolsEnd::default(),
            Kind::Main(main) => {
                let tools = self.tools(&calls, &turn_id, msg, &model).await?;
                main.task_completed |= tools.task_completed;
                tools
            }
            Kind::Sub(sub) => self.tools_one_by_one(sub, &calls, &turn_id, &model).await?,
        };
        self.close_turn(spec, &turn_id).await?;
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

    /// The main agent's request: the MCP tools as they are now (a server's list may have
    /// changed), the history kept in the window; its estimate kept for the announcement.
    async fn main_request(
        &self,
        main: &mut MainTurn,
        msg: &Message<'_>,
    ) -> Result<ChatRequest, LoopError> {
        self.refresh_mcp_tools().await?;
        let measured = self
            .request_in_window(msg.mode, &msg.headers, msg.cancel)
            .await?;
        main.estimate = measured.estimate;
        main.exact = measured.exact;
        Ok(measured.request)
    }

    /// What the main agent's call is announced with, once its turn started: the notices of
    /// what ended meanwhile (added to the request) around `session.usage_info` and
    /// `model.call_start`.
    fn announce_main_call(
        &self,
        main: &mut MainTurn,
        request: &mut ChatRequest,
        turn_id: &str,
        started: Uuid,
    ) -> Result<(), LoopError> {
        // Shells that ended with no call waiting for them (`ended_shells.rs`): the runtime
        // records their notices right after the turn starts, before the call's usage, which
        // it measured without them and chains to the turn's start.
        let mut notices = self.announce_ended_shells()?;
        let (estimated, announced) =
            self.announce_call(&main.estimate, turn_id, main.initial, started)?;
        main.estimated = estimated;
        main.tool_tokens = announced.tool_definitions_tokens;
        // Background agents that ended since the last call: the runtime tells the model after
        // the turn starts and its usage is announced, and the model reads it after the history.
        notices.extend(self.announce_ended_agents()?);
        // Shells a crash took that the model has not heard of, said once (`lost_shells.rs`).
        notices.extend(self.announce_lost_shells()?);
        // The session's limits close the request, as the runtime sends them. No provider
        // reports a call's AI credits here (the shutdown's `totalNanoAiu` is 0 too), so none
        // are counted as used (docs/decisions.md).
        notices.extend(super::session_limits::status_message(
            self.parts.config.session_limits.as_ref(),
            0.0,
        ));
        for text in notices {
            request.messages.push(ChatMessage::User {
                content: text,
                parts: Vec::new(),
            });
        }
        Ok(())
    }

    /// The model's answer, or how the turn ends without one. The main agent records its
    /// abort and keeps an answer that arrived before the abort was seen (its tools are then
    /// interrupted); a sub-agent drops such an answer, its parent's call being interrupted.
    fn answered(
        &self,
        spec: &TurnSpec<'_, '_>,
        answer: Result<ModelResponse, ModelError>,
    ) -> Result<Result<ModelResponse, TurnEnd>, LoopError> {
        let cancelled = spec.msg.cancel.is_cancelled();
        let main = spec.records_abort();
        Ok(match answer {
            Ok(_) if cancelled && !main => Err(TurnEnd::Aborted),
            Ok(response) => Ok(response),
            Err(e) if cancelled || (main && e.kind == ModelErrorKind::Cancelled) => {
                if main {
                    self.abort_event()?;
                }
                Err(TurnEnd::Aborted)
            }
            Err(e) => Err(TurnEnd::Failed(e)),
        })
    }

    /// The call's `assistant.usage`: a sub-agent's names its parent call and kind; the main
    /// agent's teaches the calibration (when its estimate was exact).
    fn record_usage(
        &self,
        spec: &mut TurnSpec<'_, '_>,
        response: &ModelResponse,
        usage: &Usage,
        model: &str,
        calls: &[ToolCall],
        offered_tools: usize,
    ) -> Result<(), LoopError> {
        let call = super::usage::Call {
            response,
            usage,
            model,
            calls,
            offered_tools,
            tool_tokens: match &spec.kind {
                Kind::Main(main) => main.tool_tokens,
                Kind::Sub(sub) => sub.tool_tokens,
            },
            api_endpoint: self.parts.provider.api_endpoint(),
        };
        let mut event = call.event();
        match &mut spec.kind {
            Kind::Main(main) => {
                if main.exact {
                    super::lock::lock(&self.calibration)
                        .observe(main.estimated, usage.input_tokens);
                }
            }
            Kind::Sub(sub) => {
                sub.spent.tokens += usage.input_tokens + usage.output_tokens;
                event.parent_tool_call_id = spec.agent.map(str::to_owned);
                event.interaction_type = Some("conversation-subagent".into());
                event.initiator = Some("sub-agent".into());
            }
        }
        self.emitter.emit_as(spec.agent, &event)?;
        Ok(())
    }

    /// Counts one call of the turn's agent in this process's totals (`totals.rs`).
    fn count_call(&self, spec: &TurnSpec<'_, '_>, model: &str, usage: Option<&Usage>) {
        let agent = match &spec.kind {
            Kind::Main(_) => None,
            Kind::Sub(sub) => Some(CallAgent {
                id: sub.child.id,
                name: sub.child.kind.name(),
                display_name: sub.child.kind.display_name(),
            }),
        };
        super::lock::lock(&self.process_usage).add_call(agent, model, usage);
    }

    /// The `tool_requests` of the turn's `assistant.message`.
    fn tool_requests(&self, spec: &TurnSpec<'_, '_>, calls: &[ToolCall]) -> Vec<ToolRequest> {
        let ctx = self.tool_context(spec.msg.cancel);
        let tools = self.live_tools();
        calls
            .iter()
            .map(|c| {
                let args = c.arguments_value();
                let tool = tools.get(&c.name);
                let mut request = ToolRequest {
                    tool_call_id: c.id.clone(),
                    name: c.name.clone(),
                    intention_summary: tool.map(|t| t.intention_summary(&args, &ctx)),
                    arguments: Some(args),
                    kind: Some("function".into()),
                    ..Default::default()
                };
                // As the runtime records its sub-agents' requests: no title, no MCP origin.
                if let (Kind::Main(_), Some(tool)) = (&spec.kind, tool) {
                    // The runtime's titled tools leave out a summary they do not have.
                    if tool.tool_title().is_some()
                        && request
                            .intention_summary
                            .as_ref()
                            .is_some_and(Option::is_none)
                    {
                        request.intention_summary = None;
                    }
                    request.tool_title = tool.tool_title().map(str::to_owned);
                    request.mcp_server_name = tool.mcp_origin().map(|o| o.0.to_owned());
                    request.mcp_tool_name = tool.mcp_origin().map(|o| o.1.to_owned());
                }
                request
            })
            .collect()
    }

    /// The `session.warning` of the tool call ids `unique_ids` renamed.
    fn warn_renamed(&self, renamed: &[(String, String)], turn_id: &str) -> Result<(), LoopError> {
        if renamed.is_empty() {
            return Ok(());
        }
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
        Ok(())
    }

    /// `assistant.turn_end` of the turn. The main agent's turn end is a durability boundary
    /// (`Emitter::boundary`); a sub-agent's turns run inside its parent's turn, which ends
    /// with one.
    async fn close_turn(&self, spec: &TurnSpec<'_, '_>, turn_id: &str) -> Result<(), LoopError> {
        match spec.kind {
            Kind::Main(_) => self.end_turn(turn_id).await,
            Kind::Sub(_) => {
                self.emitter.emit_as(
                    spec.agent,
                    &AssistantTurnEnd {
                        turn_id: turn_id.to_owned(),
                        ..Default::default()
                    },
                )?;
                Ok(())
            }
        }
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
            messages: if self.parts.config.vision {
                request_messages(&self.emitter.state())
            } else {
                request_messages_without_images(&self.emitter.state())
            },
            reasoning_effort: self.parts.config.reasoning_effort.clone(),
            tools,
            stream: self.parts.config.streaming,
            citations: self.parts.config.enable_citations,
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
            .filter(|t| mode == AgentMode::Plan || t.name != EXIT_PLAN_MODE)
            .filter(|t| !external.iter().any(|x| x.name == t.name))
            // `skill` is offered while a skill is enabled; a client toggles them live.
            .filter(|t| t.name != "skill" || self.parts.config.skills.any_enabled())
            .collect();
        specs.extend(external);
        specs.retain(|t| !self.is_excluded(&t.name));
        specs
    }

    /// Whether the session keeps the tool `name` from the model (`excludedTools`,
    /// `askUserDisabled`).
    pub(super) fn is_excluded(&self, name: &str) -> bool {
        (self.parts.config.ask_user_disabled && name == turnstile_tools::ask_user::ASK_USER)
            || self.parts.config.excluded_tools.iter().any(|t| t == name)
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
