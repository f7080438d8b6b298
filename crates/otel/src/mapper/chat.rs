//! Model calls: a `chat` span opened by a turn start (or, for an agent whose journal records
//! none, by its answer), filled in by the answer and its usage, ended by the turn's end.

use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind};
use serde_json::json;

use super::state::{Agent, Chat, Mapper};
use crate::attrs;
use crate::ids;
use crate::open::OpenSpan;

impl Mapper {
    pub(super) fn on_message(
        &mut self,
        agent: Option<&str>,
        id: &str,
        ms: i64,
        msg: turnstile_journal::payload::AssistantMessage,
        out: &mut Vec<Span>,
    ) {
        let capture = self.options.capture_content;
        let session = self.session.clone();
        let unframed = match self.agent(agent, id, ms) {
            Some(a) => !a.turns || a.chat.is_none(),
            None => return,
        };
        if unframed && !self.room() {
            return;
        }
        let Some(a) = self.agent(agent, id, ms) else {
            return;
        };
        if unframed {
            // The runtime's sub-agents record no turn start: the call began when the agent
            // last did something (its prompt, or its last tool result).
            let model = msg.model.clone().or_else(|| a.model.clone());
            let start = a.last_ms;
            a.chat = Some(open_chat(&session, id, a, model, start));
        }
        a.last_ms = ms;
        let Some(chat) = a.chat.as_mut() else {
            return;
        };
        chat.span.touch(ms);
        chat.answered = true;
        let calls = msg.tool_requests.as_deref().unwrap_or_default();
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        chat.span
            .set(attrs::strings("gen_ai.response.finish_reasons", &[finish]));
        if let Some(model) = &msg.model {
            chat.span
                .set(attrs::string("gen_ai.response.model", model.clone()));
        }
        if let Some(api) = &msg.api_call_id {
            chat.span
                .set(attrs::string("gen_ai.response.id", api.clone()));
        }
        if let Some(tokens) = msg.output_tokens {
            let before = attrs::get_int(&chat.span.span.attributes, "gen_ai.usage.output_tokens")
                .unwrap_or(0);
            let total = u64::try_from(before).unwrap_or(0).saturating_add(tokens);
            chat.span
                .set(attrs::int("gen_ai.usage.output_tokens", total));
            a.output_tokens = a.output_tokens.saturating_add(tokens);
        }
        if !msg.content.is_empty() {
            a.last_answer = Some(attrs::clip(&msg.content));
        }
        if capture {
            let mut parts = Vec::new();
            if !msg.content.is_empty() {
                parts.push(json!({"type": "text", "content": attrs::clip(&msg.content)}));
            }
            for call in calls {
                parts.push(json!({
                    "type": "tool_call",
                    "id": call.tool_call_id,
                    "name": call.name,
                    "arguments": call.arguments.as_ref().map(|a| attrs::clip(&a.to_string())),
                }));
            }
            let message = json!([{"role": "assistant", "parts": parts, "finish_reason": finish}]);
            chat.span
                .set(attrs::string("gen_ai.output.messages", message.to_string()));
        }
        if unframed {
            self.close_chat(agent, out);
        }
    }

    /// Ends `agent`'s model call, if one is open.
    pub(super) fn close_chat(&mut self, agent: Option<&str>, out: &mut Vec<Span>) {
        let chat = self.agent_of(agent).and_then(|a| a.chat.take());
        if let Some(chat) = chat {
            let span = end_chat(chat);
            self.emit(span, out);
        }
    }
}

pub(super) fn open_chat(
    session: &str,
    id: &str,
    agent: &Agent,
    model: Option<String>,
    ms: i64,
) -> Chat {
    let name = match &model {
        Some(m) => format!("chat {m}"),
        None => "chat".to_owned(),
    };
    let mut span = OpenSpan::new(
        agent.span.trace(),
        ids::span_id(session, id),
        Some(agent.span.id()),
        name,
        SpanKind::Client,
        ms,
    );
    span.set(attrs::string("gen_ai.operation.name", "chat"));
    if let Some(provider) = attrs::get_str(&agent.span.span.attributes, "gen_ai.provider.name") {
        span.set(attrs::string("gen_ai.provider.name", provider.to_owned()));
    }
    if let Some(model) = model {
        span.set(attrs::string("gen_ai.request.model", model));
    }
    span.set(attrs::string("gen_ai.conversation.id", session.to_owned()));
    Chat {
        span,
        answered: false,
    }
}

/// A model call that ended: one with no answer failed (the turn ended without one).
pub(super) fn end_chat(mut chat: Chat) -> Span {
    if !chat.answered && !chat.span.failed() {
        chat.span.fail(
            Some("no_answer"),
            "the turn ended without an answer from the model",
        );
    }
    chat.span.end()
}

pub(super) fn apply_usage(
    span: &mut OpenSpan,
    usage: &turnstile_journal::payload::AssistantUsage,
    inputs_only: bool,
) {
    if let Some(n) = usage.input_tokens {
        span.set(attrs::int("gen_ai.usage.input_tokens", n));
    }
    if let Some(n) = usage.cache_read_tokens {
        span.set(attrs::int("gen_ai.usage.cache_read.input_tokens", n));
    }
    if let Some(n) = usage.cache_write_tokens {
        span.set(attrs::int("gen_ai.usage.cache_creation.input_tokens", n));
    }
    if inputs_only {
        return;
    }
    if let Some(n) = usage.output_tokens {
        span.set(attrs::int("gen_ai.usage.output_tokens", n));
    }
    if let Some(reason) = &usage.finish_reason {
        span.set(attrs::strings(
            "gen_ai.response.finish_reasons",
            &[reason.as_str()],
        ));
    }
}
