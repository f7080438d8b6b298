//! Journal records into GenAI spans, one record at a time (`docs/otel.md` has the table).
//!
//! An interaction (a prompt of the user until the next one, or the session's end) is an
//! `invoke_agent` span and the root of its own trace; a model call (a turn) is a `chat` span, a
//! tool call an `execute_tool` span, both children of their agent's `invoke_agent`; a sub-agent
//! is an `invoke_agent` span of its own under the tool call that started it. A span is handed
//! out when the event that ends it is read, so memory follows the spans open at once (capped
//! at [`MAX_OPEN_SPANS`]), never the journal. A span still open at the end (a crashed session,
//! a torn tail) or before a `session.resume` (the process that wrote it died) is ended at the
//! last time the journal shows, with an error status and [`crate::UNFINISHED`] set.

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind};
use turnstile_journal::payload::{self, TypedEvent};
use turnstile_journal::{Event, ReadError, Record};

use crate::attrs;
use crate::ids;
use crate::open::OpenSpan;

mod agents;
mod chat;
mod state;

use agents::user_messages;
use chat::{apply_usage, open_chat};
use state::{Agent, Tool};
pub use state::{Counts, MAX_AGENT_NAMES, MAX_OPEN_SPANS, MapOptions, Mapper};

impl Mapper {
    /// A mapping with `options`; `session` names the session until the journal's
    /// `session.start` does (ids derive from it).
    pub fn new(session: &str, options: MapOptions) -> Self {
        Mapper {
            options,
            session: session.to_owned(),
            provider: "github",
            model: None,
            agent_name: "GitHub Copilot".to_owned(),
            main: None,
            subagents: HashMap::new(),
            names: HashMap::new(),
            tools: HashMap::new(),
            last_ms: 0,
            counts: Counts::default(),
            usage_inputs_only: false,
        }
    }

    /// Maps a running session's stream, where `assistant.usage` comes beside the answer's
    /// `assistant.message`: only its input and cache counts are taken, so the output tokens
    /// and the finish are the journal's (an export of it gives the same).
    pub fn usage_beside_messages(mut self) -> Self {
        self.usage_inputs_only = true;
        self
    }

    /// The endpoint in effect, as its `session.info` entry words it, for a stream that starts
    /// after the entry (a resumed session's): the provider of the spans to come.
    pub fn endpoint_in_effect(&mut self, message: &str) {
        if let Some(provider) = provider_named(message) {
            self.provider = provider;
        }
    }

    /// What was seen so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Maps one result of the journal reader; finished spans go to `out`.
    pub fn push(&mut self, record: Result<Record, ReadError>, out: &mut Vec<Span>) {
        match record {
            Ok(record) => self.push_event(&record.event, out),
            Err(ReadError::TornTail { .. }) => self.counts.torn_tail = true,
            Err(_) => self.counts.unreadable += 1,
        }
    }

    /// Ends every span still open as unfinished (the journal ends here).
    pub fn finish(&mut self, out: &mut Vec<Span>) {
        self.end_all("the journal ends before this span ended", out);
    }

    fn open_count(&self) -> usize {
        let chats = self.main.iter().filter(|a| a.chat.is_some()).count()
            + self.subagents.values().filter(|a| a.chat.is_some()).count();
        self.tools.len() + self.subagents.len() + chats + usize::from(self.main.is_some())
    }

    fn room(&mut self) -> bool {
        if self.open_count() < MAX_OPEN_SPANS {
            true
        } else {
            self.counts.dropped += 1;
            false
        }
    }

    fn emit(&mut self, span: Span, out: &mut Vec<Span>) {
        self.counts.spans += 1;
        out.push(span);
    }

    /// Maps one event, as a running session emits it (`crate::live`) or the journal holds
    /// it; finished spans go to `out`.
    pub fn push_event(&mut self, event: &Event, out: &mut Vec<Span>) {
        let ms = event.timestamp.millis();
        let typed = match payload::typed(event) {
            Ok(t) => t,
            Err(_) => {
                self.counts.unreadable += 1;
                return;
            }
        };
        let id = event.id.to_string();
        let agent = event.agent_id.clone();
        // An event is part of the open interaction (and of its sub-agent), except the ones
        // that end it: a new prompt, a resume, a shutdown.
        let ends_main = match &typed {
            TypedEvent::UserMessage(m) => {
                agent.is_none() && m.is_autopilot_continuation != Some(true)
            }
            TypedEvent::SessionStart(_)
            | TypedEvent::SessionResume(_)
            | TypedEvent::SessionShutdown(_) => true,
            // The interaction ended at its last event before the idle notice, as it does in a
            // journal that holds no notice (it is not persisted): a live trace and an export
            // of the same journal end it at the same time.
            TypedEvent::SessionIdle(_) => agent.is_none(),
            _ => false,
        };
        // The system prompt of the main agent is recorded just before the prompt it goes
        // with: it belongs to the interaction that prompt opens, not to the one before.
        let before_prompt = matches!(typed, TypedEvent::SystemMessage(_)) && agent.is_none();
        if !ends_main
            && !before_prompt
            && let Some(main) = self.main.as_mut()
        {
            main.span.touch(ms);
        }
        if let Some(key) = &agent
            && let Some(sub) = self.subagents.get_mut(key)
        {
            sub.span.touch(ms);
        }
        self.apply(typed, agent, &id, ms, event, out);
        // After the event: what it ends, ends at the journal's time before it.
        self.last_ms = self.last_ms.max(ms);
    }

    fn apply(
        &mut self,
        typed: TypedEvent,
        agent: Option<String>,
        id: &str,
        ms: i64,
        event: &Event,
        out: &mut Vec<Span>,
    ) {
        let id = id.to_owned();
        match typed {
            TypedEvent::SessionStart(start) => {
                self.session = start.session_id;
                self.model = start.selected_model;
            }
            TypedEvent::SessionModelChange(change) if agent.is_none() => {
                self.model = Some(change.new_model);
            }
            TypedEvent::SessionResume(resume) => {
                self.end_all("the process that wrote this span ended before it did", out);
                // The model the resumed process goes on with: also all a live stream that
                // starts at the resume knows of it.
                if resume.selected_model.is_some() {
                    self.model = resume.selected_model;
                }
            }
            TypedEvent::SessionShutdown(_) => self.end_all("open at the session's shutdown", out),
            TypedEvent::SessionIdle(_) if agent.is_none() => self.close_main(out),
            TypedEvent::UserMessage(msg) => match agent {
                Some(agent) => {
                    let capture = self.options.capture_content;
                    let a = self.agent(Some(&agent), &id, ms);
                    if let Some(a) = a {
                        a.last_ms = ms;
                        if capture {
                            a.span.set(attrs::string(
                                "gen_ai.input.messages",
                                user_messages(&msg.content),
                            ));
                        }
                    }
                }
                None if msg.is_autopilot_continuation == Some(true) && self.main.is_some() => {
                    if let Some(main) = self.main.as_mut() {
                        main.last_ms = ms;
                    }
                }
                None => {
                    self.close_main(out);
                    self.open_main(&id, ms, Some(&msg.content));
                }
            },
            TypedEvent::AssistantTurnStart(start) => {
                let model = start.model.clone();
                self.close_chat(agent.as_deref(), out);
                if !self.room() {
                    return;
                }
                let session = self.session.clone();
                let Some(a) = self.agent(agent.as_deref(), &id, ms) else {
                    return;
                };
                a.turns = true;
                let model = model.or_else(|| a.model.clone());
                a.chat = Some(open_chat(&session, &id, a, model, ms));
                if let Some(chat) = a.chat.as_mut() {
                    chat.span
                        .set(attrs::string("github.copilot.turn_id", start.turn_id));
                }
            }
            TypedEvent::AssistantMessage(msg) => {
                self.on_message(agent.as_deref(), &id, ms, msg, out)
            }
            TypedEvent::AssistantUsage(usage) => {
                let inputs_only = self.usage_inputs_only;
                if let Some(a) = self.agent_of(agent.as_deref()) {
                    if let Some(n) = usage.input_tokens {
                        a.input_tokens = Some(a.input_tokens.unwrap_or(0).saturating_add(n));
                    }
                    if let Some(chat) = a.chat.as_mut() {
                        apply_usage(&mut chat.span, &usage, inputs_only);
                    }
                }
            }
            TypedEvent::AssistantTurnEnd(_) => self.close_chat(agent.as_deref(), out),
            TypedEvent::ToolExecutionStart(start) => {
                self.close_chat(agent.as_deref(), out);
                if !self.room() {
                    return;
                }
                let capture = self.options.capture_content;
                let session = self.session.clone();
                let Some(a) = self.agent(agent.as_deref(), &id, ms) else {
                    return;
                };
                a.last_ms = ms;
                let mut span = OpenSpan::new(
                    a.span.trace(),
                    ids::span_id(&session, &id),
                    Some(a.span.id()),
                    format!("execute_tool {}", start.tool_name),
                    SpanKind::Internal,
                    ms,
                );
                span.set(attrs::string("gen_ai.operation.name", "execute_tool"));
                span.set(attrs::string("gen_ai.tool.name", start.tool_name.clone()));
                span.set(attrs::string(
                    "gen_ai.tool.call.id",
                    start.tool_call_id.clone(),
                ));
                span.set(attrs::string("gen_ai.tool.type", tool_type(&start)));
                span.set(attrs::string("gen_ai.conversation.id", session));
                if capture && let Some(arguments) = &start.arguments {
                    span.set(attrs::text(
                        "gen_ai.tool.call.arguments",
                        &arguments.to_string(),
                    ));
                }
                self.tools.insert(start.tool_call_id, Tool { span });
            }
            TypedEvent::ToolExecutionComplete(done) => {
                if let Some(a) = self.agent_of(agent.as_deref()) {
                    a.last_ms = ms;
                }
                if let Some(mut tool) = self.tools.remove(&done.tool_call_id) {
                    tool.span.touch(ms);
                    if !done.success {
                        let (kind, message) = match &done.error {
                            Some(e) => (e.code.as_deref().unwrap_or("failure"), e.message.as_str()),
                            None => ("failure", "the tool call failed"),
                        };
                        tool.span.fail(Some(kind), message);
                    }
                    if self.options.capture_content
                        && let Some(result) = &done.result
                    {
                        tool.span
                            .set(attrs::text("gen_ai.tool.call.result", &result.content));
                    }
                    let span = tool.span.end();
                    self.emit(span, out);
                }
            }
            TypedEvent::SubagentStarted(s) => {
                if !self.room() {
                    return;
                }
                let session = self.session.clone();
                let key = agent.unwrap_or_else(|| s.tool_call_id.clone());
                let parent = match self.tools.get(&s.tool_call_id) {
                    Some(tool) => Some((tool.span.trace(), tool.span.id())),
                    None => self.main.as_ref().map(|m| (m.span.trace(), m.span.id())),
                };
                let (trace, parent) = match parent {
                    Some((trace, id)) => (trace, Some(id)),
                    None => (ids::trace_id(&session, &id), None),
                };
                let mut span = OpenSpan::new(
                    trace,
                    ids::span_id(&session, &id),
                    parent,
                    format!("invoke_agent {}", s.agent_name),
                    SpanKind::Internal,
                    ms,
                );
                self.agent_attributes(&mut span, &s.agent_name);
                span.set(attrs::string("gen_ai.agent.id", key.clone()));
                span.set(attrs::text(
                    "gen_ai.agent.description",
                    &s.agent_description,
                ));
                if let Some(model) = &s.model {
                    span.set(attrs::string("gen_ai.request.model", model.clone()));
                }
                if self.names.len() < MAX_AGENT_NAMES {
                    self.names.insert(key.clone(), s.agent_name.clone());
                }
                let sub = Agent::new(span, s.model.clone(), ms);
                if let Some(old) = self.subagents.insert(key, sub) {
                    self.close_agent(old, None, out);
                }
            }
            TypedEvent::SubagentCompleted(s) => {
                let key = agent.unwrap_or(s.tool_call_id);
                if let Some(sub) = self.subagents.remove(&key) {
                    self.close_agent(sub, None, out);
                }
            }
            TypedEvent::SubagentFailed(s) => {
                let key = agent.unwrap_or(s.tool_call_id);
                if let Some(sub) = self.subagents.remove(&key) {
                    self.close_agent(sub, Some(("subagent_failed", s.error.as_str())), out);
                }
            }
            TypedEvent::SessionError(e) => {
                let kind = e
                    .status_code
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| e.error_type.clone());
                let Some(a) = self.agent_of(agent.as_deref()) else {
                    return;
                };
                if let Some(chat) = a.chat.as_mut() {
                    chat.span.touch(ms);
                    chat.span.fail(Some(&kind), &e.message);
                    chat.answered = true;
                }
                a.span.fail(Some(&kind), &e.message);
                self.close_chat(agent.as_deref(), out);
            }
            TypedEvent::Abort(abort) => {
                if let Some(a) = self.agent_of(agent.as_deref()) {
                    a.span
                        .fail(Some("aborted"), &format!("aborted: {}", abort.reason));
                }
            }
            TypedEvent::Other(t) if t.as_str() == "session.info" => {
                if let Some(provider) = provider_of(event) {
                    self.provider = provider;
                }
            }
            _ => {}
        }
    }
}

/// The provider a `session.info` of the `model` category names (turnstile records the
/// endpoint it reached there), as the conventions name it.
fn provider_of(event: &Event) -> Option<&'static str> {
    let data: serde_json::Value = serde_json::from_str(event.data.get()).ok()?;
    if data["infoType"] != "model" {
        return None;
    }
    provider_named(data["message"].as_str()?)
}

/// The provider an endpoint entry's message names (`model server: provider openai, …`).
fn provider_named(message: &str) -> Option<&'static str> {
    let rest = message.strip_prefix("model server: provider ")?;
    match rest.split([',', ' ']).next()? {
        "openai" => Some("openai"),
        "azure" => Some("azure.ai.openai"),
        "anthropic" => Some("anthropic"),
        _ => None,
    }
}

/// `function`, or `extension` for a tool of an MCP server (the conventions' values).
fn tool_type(start: &turnstile_journal::payload::ToolExecutionStart) -> &'static str {
    if start.mcp_server_name.is_some() {
        "extension"
    } else {
        "function"
    }
}
