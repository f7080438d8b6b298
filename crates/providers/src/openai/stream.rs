//! A streamed answer: SSE events in, deltas out as they arrive, the whole answer at the end.

use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::super::http::wire::{WireUsage, error_message};
use super::super::http::{AnswerBudget, Answered, Assembly, ResponseLimits, malformed};
use super::super::{ModelError, ModelErrorKind, ModelEvent, ModelResponse, ToolCall};
use super::choices::{ChoiceAnswer, fallback_id, merge};
use super::wire::{AnswerToolCall, Chunk};

impl Assembly for StreamState {
    fn on_event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<bool, ModelError> {
        self.event(data, events)?;
        Ok(self.done)
    }

    fn progress(&self) -> usize {
        self.budget.progress()
    }

    /// Complete at `[DONE]`, or at the end of the body after a `finish_reason`.
    fn answer(
        self,
        complete: bool,
        model: String,
        started: Instant,
    ) -> Result<Answered, ModelError> {
        if complete || self.done || self.choices.iter().any(|c| c.finish_reason.is_some()) {
            Ok((self.finish(model, started), Vec::new()))
        } else {
            Err(ModelError::new(
                ModelErrorKind::Stream,
                "the stream ended before the answer was complete (no finish_reason, no [DONE])",
            ))
        }
    }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// What one choice of the stream has said so far.
#[derive(Debug, Default)]
struct PartialChoice {
    index: u64,
    content: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
}

/// What a stream has said so far.
#[derive(Debug, Default)]
pub(super) struct StreamState {
    /// Choices in the order they first appeared.
    choices: Vec<PartialChoice>,
    /// Bytes of text, tool arguments and calls so far (all choices), and the calls.
    budget: AnswerBudget,
    usage: Option<WireUsage>,
    api_call_id: Option<String>,
    model: Option<String>,
    done: bool,
}

impl StreamState {
    pub(super) fn new(limits: &ResponseLimits) -> Self {
        StreamState {
            budget: AnswerBudget::new(limits),
            ..Default::default()
        }
    }

    /// Handles the data of one SSE event.
    fn event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(), ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        match serde_json::from_str::<Chunk>(data) {
            Ok(chunk) => self.chunk(chunk, events),
            // Some servers put several `data:` lines in one event: try them one by one.
            Err(_) if data.contains('\n') => {
                for line in data.lines().filter(|l| !l.trim().is_empty()) {
                    self.event(line, events)?;
                    if self.done {
                        break;
                    }
                }
                Ok(())
            }
            Err(e) => Err(malformed("a chunk of the stream", &e, data)),
        }
    }

    fn chunk(
        &mut self,
        chunk: Chunk,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(message) = error_message(chunk.error.as_ref()) {
            return Err(ModelError::new(ModelErrorKind::Stream, message));
        }
        if self.api_call_id.is_none() {
            self.api_call_id = chunk.id.filter(|s| !s.is_empty());
        }
        if self.model.is_none() {
            self.model = chunk.model.filter(|s| !s.is_empty());
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        for (position, choice) in chunk.choices.unwrap_or_default().into_iter().enumerate() {
            let index = choice.index.unwrap_or(position as u64);
            let slot = match self.choices.iter().position(|c| c.index == index) {
                Some(slot) => slot,
                None => {
                    // An empty choice costs as much as an empty call: endless new indexes
                    // end at the answer limit.
                    self.budget.open_part(None)?;
                    self.choices.push(PartialChoice {
                        index,
                        ..Default::default()
                    });
                    self.choices.len() - 1
                }
            };
            if let Some(reason) = choice.finish_reason {
                self.choices[slot].finish_reason = Some(reason);
                self.budget.finish();
            }
            let Some(delta) = choice.delta else {
                continue;
            };
            let text = delta.content.map(|c| c.text()).unwrap_or_default();
            if !text.is_empty() {
                self.budget.grow(text.len())?;
                self.choices[slot].content.push_str(&text);
                let _ = events.send(ModelEvent::TextDelta(text));
            }
            for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                self.tool_call_delta(slot, position, call, events)?;
            }
        }
        Ok(())
    }

    fn tool_call_delta(
        &mut self,
        slot: usize,
        position: usize,
        call: AnswerToolCall,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(), ModelError> {
        let id = call.id.filter(|s| !s.is_empty());
        let function = call.function.unwrap_or_default();
        let name = function.name.clone().filter(|s| !s.is_empty());
        let arguments_delta = function.arguments_text();
        self.budget.grow(arguments_delta.len())?;
        let calls = &mut self.choices[slot].calls;
        let index = match call.index {
            Some(index) => index,
            // No index: a new id starts a new call, anything else continues the last one.
            None => match (&id, calls.last()) {
                (Some(id), Some(last)) if last.id != *id => last.index + 1,
                (_, Some(last)) => last.index,
                (_, None) => position as u64,
            },
        };
        let at = match calls.iter().position(|c| c.index == index) {
            Some(at) => at,
            None => {
                // A new index is a new call, with or without arguments: it is counted.
                let named =
                    id.as_ref().map_or(0, String::len) + name.as_ref().map_or(0, String::len);
                self.budget.open_call(named)?;
                let calls = &mut self.choices[slot].calls;
                calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                calls.len() - 1
            }
        };
        let calls = &mut self.choices[slot].calls;
        let partial = &mut calls[at];
        if let Some(id) = id
            && partial.id.is_empty()
        {
            partial.id = id;
        }
        if let Some(name) = name
            && partial.name.is_empty()
        {
            partial.name = name;
        }
        partial.arguments.push_str(&arguments_delta);
        let _ = events.send(ModelEvent::ToolCallDelta {
            id: partial.id.clone(),
            name: partial.name.clone(),
            arguments_delta,
        });
        Ok(())
    }

    fn finish(self, model: String, started: Instant) -> ModelResponse {
        let duration_ms = started.elapsed().as_millis() as u64;
        let choices = self
            .choices
            .into_iter()
            .map(|mut choice| {
                choice.calls.sort_by_key(|c| c.index);
                let tool_calls = choice
                    .calls
                    .into_iter()
                    .map(|c| ToolCall {
                        id: if c.id.is_empty() {
                            fallback_id(choice.index, c.index)
                        } else {
                            c.id
                        },
                        name: c.name,
                        arguments: c.arguments,
                    })
                    .collect();
                ChoiceAnswer {
                    index: choice.index,
                    content: choice.content,
                    tool_calls,
                    finish_reason: choice.finish_reason,
                }
            })
            .collect();
        let (content, tool_calls, finish_reason) = merge(choices);
        ModelResponse {
            content,
            tool_calls,
            usage: self.usage.as_ref().map(|u| u.to_usage(duration_ms)),
            api_call_id: self.api_call_id,
            model: self.model.unwrap_or(model),
            finish_reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Feeds `chunks` (then `[DONE]`) as the data of SSE events, and returns the answer and the
    /// live events sent.
    fn assemble(chunks: &[serde_json::Value]) -> (ModelResponse, Vec<ModelEvent>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut state = StreamState::new(&ResponseLimits {
            max_answer_bytes: 1 << 20,
            ..ResponseLimits::default()
        });
        for chunk in chunks {
            state.event(&chunk.to_string(), &tx).unwrap();
        }
        state.event("[DONE]", &tx).unwrap();
        assert!(state.done);
        drop(tx);
        let mut seen = Vec::new();
        while let Ok(e) = rx.try_recv() {
            seen.push(e);
        }
        (state.finish("asked".into(), Instant::now()), seen)
    }

    #[test]
    fn the_published_stream_with_a_tool_call_assembles() {
        // The Chat Completions API's streaming example of a function call, with
        // `stream_options.include_usage` (its last chunk has no choices and the usage).
        let head = json!({"id": "chatcmpl-9lIVq0gt0BHNdbF8gRSlgK0bzoHvK", "object": "chat.completion.chunk", "created": 1721077506, "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_8b761cb050"});
        let with = |choices: serde_json::Value, usage: serde_json::Value| {
            let mut chunk = head.clone();
            chunk["choices"] = choices;
            chunk["usage"] = usage;
            chunk
        };
        let delta = |d: serde_json::Value, finish: serde_json::Value| json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]);
        let (answer, seen) = assemble(&[
            with(
                delta(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_tJ6LgrKwJ9LAKl5OMv6wGw4X", "type": "function", "function": {"name": "get_current_weather", "arguments": ""}}], "refusal": null}),
                    json!(null),
                ),
                json!(null),
            ),
            with(
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"lo"}}]}),
                    json!(null),
                ),
                json!(null),
            ),
            with(
                delta(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": "cation\": \"Boston, MA\"}"}}]}),
                    json!(null),
                ),
                json!(null),
            ),
            with(delta(json!({}), json!("tool_calls")), json!(null)),
            with(
                json!([]),
                json!({"prompt_tokens": 82, "completion_tokens": 18, "total_tokens": 100, "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}),
            ),
        ]);
        assert_eq!(answer.content, "");
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(answer.tool_calls[0].id, "call_tJ6LgrKwJ9LAKl5OMv6wGw4X");
        assert_eq!(answer.tool_calls[0].name, "get_current_weather");
        assert_eq!(
            answer.tool_calls[0].arguments,
            r#"{"location": "Boston, MA"}"#
        );
        assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(answer.model, "gpt-4o-mini-2024-07-18");
        assert_eq!(
            answer.api_call_id.as_deref(),
            Some("chatcmpl-9lIVq0gt0BHNdbF8gRSlgK0bzoHvK")
        );
        let usage = answer.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (82, 18));
        assert!(
            seen.iter()
                .all(|e| matches!(e, ModelEvent::ToolCallDelta { .. }))
        );
        assert_eq!(seen.len(), 3);
    }

    #[test]
    fn the_published_text_stream_assembles() {
        // The streaming example of a plain answer: role first, then content pieces, then the
        // finish reason in a chunk with an empty delta.
        let chunk = |d: serde_json::Value, finish: serde_json::Value| json!({"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190, "model": "gpt-4o-mini", "system_fingerprint": "fp_44709d6fcb", "choices": [{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]});
        let (answer, seen) = assemble(&[
            chunk(json!({"role": "assistant", "content": ""}), json!(null)),
            chunk(json!({"content": "Hello"}), json!(null)),
            chunk(json!({"content": "!"}), json!(null)),
            chunk(json!({}), json!("stop")),
        ]);
        assert_eq!(answer.content, "Hello!");
        assert!(answer.tool_calls.is_empty());
        assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
        assert!(answer.usage.is_none(), "no include_usage chunk");
        assert_eq!(
            seen,
            [
                ModelEvent::TextDelta("Hello".into()),
                ModelEvent::TextDelta("!".into())
            ]
        );
    }
}
