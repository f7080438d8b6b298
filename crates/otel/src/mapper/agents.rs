//! Agents: the main agent's interaction and the sub-agents, each an `invoke_agent` span, made
//! when an event needs one, ended with their model call, or all at once when the journal
//! shows the process went away.

use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind};
use serde_json::json;

use super::chat::end_chat;
use super::state::{Agent, Mapper};
use crate::attrs;
use crate::ids;
use crate::open::OpenSpan;

impl Mapper {
    /// The agent an event belongs to, made when there is none yet: an interaction the
    /// journal shows no prompt for (a turn after a resume), a sub-agent with no start.
    pub(super) fn agent(&mut self, agent: Option<&str>, id: &str, ms: i64) -> Option<&mut Agent> {
        match agent {
            None => {
                if self.main.is_none() {
                    if !self.room() {
                        return None;
                    }
                    // Not the event's own id: the span it opens (a model call) takes that.
                    self.open_main(&format!("interaction {id}"), ms, None);
                }
                self.main.as_mut()
            }
            Some(key) => {
                if !self.subagents.contains_key(key) {
                    if !self.room() {
                        return None;
                    }
                    let session = self.session.clone();
                    let parent = self
                        .agent(None, id, ms)
                        .map(|m| (m.span.trace(), m.span.id()));
                    let (trace, parent) = match parent {
                        Some((t, p)) => (t, Some(p)),
                        None => (ids::trace_id(&session, id), None),
                    };
                    // A sub-agent seen again after it completed (a follow-up message to it),
                    // or one whose start the journal lacks.
                    let name = self.names.get(key).cloned().unwrap_or_default();
                    let mut span = OpenSpan::new(
                        trace,
                        ids::span_id(&session, &format!("agent {id}")),
                        parent,
                        if name.is_empty() {
                            "invoke_agent".to_owned()
                        } else {
                            format!("invoke_agent {name}")
                        },
                        SpanKind::Internal,
                        ms,
                    );
                    self.agent_attributes(&mut span, &name);
                    span.set(attrs::string("gen_ai.agent.id", key.to_owned()));
                    self.subagents
                        .insert(key.to_owned(), Agent::new(span, self.model.clone(), ms));
                }
                self.subagents.get_mut(key)
            }
        }
    }

    pub(super) fn agent_of(&mut self, agent: Option<&str>) -> Option<&mut Agent> {
        match agent {
            None => self.main.as_mut(),
            Some(key) => self.subagents.get_mut(key),
        }
    }

    pub(super) fn agent_attributes(&self, span: &mut OpenSpan, name: &str) {
        span.set(attrs::string("gen_ai.operation.name", "invoke_agent"));
        span.set(attrs::string("gen_ai.provider.name", self.provider));
        if !name.is_empty() {
            span.set(attrs::string("gen_ai.agent.name", name.to_owned()));
        }
        span.set(attrs::string(
            "gen_ai.conversation.id",
            self.session.clone(),
        ));
    }

    pub(super) fn open_main(&mut self, id: &str, ms: i64, prompt: Option<&str>) {
        let mut span = OpenSpan::new(
            ids::trace_id(&self.session, id),
            ids::span_id(&self.session, id),
            None,
            format!("invoke_agent {}", self.agent_name),
            SpanKind::Internal,
            ms,
        );
        let name = self.agent_name.clone();
        self.agent_attributes(&mut span, &name);
        if let Some(model) = &self.model {
            span.set(attrs::string("gen_ai.request.model", model.clone()));
        }
        if self.options.capture_content
            && let Some(prompt) = prompt
        {
            span.set(attrs::string(
                "gen_ai.input.messages",
                user_messages(prompt),
            ));
        }
        self.main = Some(Agent::new(span, self.model.clone(), ms));
    }

    pub(super) fn close_main(&mut self, out: &mut Vec<Span>) {
        if let Some(main) = self.main.take() {
            self.close_agent(main, None, out);
        }
    }

    /// Ends an agent's span (and its model call) normally, or failed with `(type, message)`.
    pub(super) fn close_agent(
        &mut self,
        mut agent: Agent,
        failed: Option<(&str, &str)>,
        out: &mut Vec<Span>,
    ) {
        if let Some(chat) = agent.chat.take() {
            let span = end_chat(chat);
            self.emit(span, out);
        }
        agent.finish_attributes(self.options.capture_content);
        if let Some((kind, message)) = failed {
            agent.span.fail(Some(kind), message);
        }
        let span = agent.span.end();
        self.emit(span, out);
    }

    /// Ends every open span as unfinished, at the journal's last time so far.
    pub(super) fn end_all(&mut self, why: &str, out: &mut Vec<Span>) {
        let at = self.last_ms;
        let mut ended = Vec::new();
        let mut tools: Vec<_> = self.tools.drain().map(|(_, t)| t.span).collect();
        tools.sort_by_key(|s| s.span.start_time_unix_nano);
        ended.extend(tools);
        let mut subs: Vec<_> = self.subagents.drain().map(|(_, a)| a).collect();
        subs.sort_by_key(|a| a.span.span.start_time_unix_nano);
        let capture = self.options.capture_content;
        let mut agents = subs;
        agents.extend(self.main.take());
        for mut agent in agents {
            // An agent whose last model call was answered and whose tools all ended finished
            // its work: the process went away after it (a shutdown, a resume of a finished
            // session), which is not a failure of the span.
            let chat_open = agent.chat.as_ref().is_some_and(|c| !c.answered);
            if let Some(chat) = agent.chat.take() {
                if chat.answered {
                    out.push(end_chat(chat));
                    self.counts.spans += 1;
                } else {
                    ended.push(chat.span);
                }
            }
            agent.finish_attributes(capture);
            if chat_open || !ended.is_empty() {
                ended.push(agent.span);
            } else {
                out.push(agent.span.end());
                self.counts.spans += 1;
            }
        }
        for span in ended {
            self.counts.unfinished += 1;
            let span = span.end_unfinished(at, why);
            self.emit(span, out);
        }
    }
}

impl Agent {
    pub(super) fn new(span: OpenSpan, model: Option<String>, ms: i64) -> Self {
        Agent {
            span,
            chat: None,
            turns: false,
            last_ms: ms,
            output_tokens: 0,
            input_tokens: None,
            model,
            last_answer: None,
        }
    }

    /// The sums an agent's span carries once it ends.
    pub(super) fn finish_attributes(&mut self, capture: bool) {
        if self.output_tokens > 0 {
            self.span
                .set(attrs::int("gen_ai.usage.output_tokens", self.output_tokens));
        }
        if let Some(input) = self.input_tokens {
            self.span
                .set(attrs::int("gen_ai.usage.input_tokens", input));
        }
        if capture && let Some(answer) = &self.last_answer {
            let message =
                json!([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]);
            self.span
                .set(attrs::string("gen_ai.output.messages", message.to_string()));
        }
    }
}

/// A prompt as `gen_ai.input.messages` (the conventions' JSON shape).
pub(super) fn user_messages(prompt: &str) -> String {
    json!([{"role": "user", "parts": [{"type": "text", "content": attrs::clip(prompt)}]}])
        .to_string()
}
