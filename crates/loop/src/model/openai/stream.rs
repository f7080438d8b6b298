//! A streamed answer: SSE events in, deltas out as they arrive, the whole answer at the end.

use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::super::sse::SseParser;
use super::super::{ModelError, ModelErrorKind, ModelEvent, ModelResponse, ToolCall};
use super::wire::{AnswerToolCall, Chunk, WireUsage, error_message};
use super::{OpenAiProvider, quote};

impl OpenAiProvider {
    /// Reads a streamed answer to its end (`[DONE]`, or the end of the body after a
    /// `finish_reason`).
    pub(super) async fn read_stream(
        &self,
        mut response: reqwest::Response,
        events: &UnboundedSender<ModelEvent>,
        model: String,
        started: Instant,
    ) -> Result<ModelResponse, ModelError> {
        let mut parser = SseParser::default();
        let mut state = StreamState::default();
        let bad_sse = |msg: String| ModelError::new(ModelErrorKind::MalformedResponse, msg);
        while let Some(bytes) = self.next_chunk(&mut response).await? {
            for data in parser.push(&bytes).map_err(bad_sse)? {
                state.event(&data, events)?;
                if state.done {
                    return Ok(state.finish(model, started));
                }
            }
        }
        for data in parser.finish().map_err(bad_sse)? {
            state.event(&data, events)?;
        }
        if state.done || state.finish_reason.is_some() {
            Ok(state.finish(model, started))
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

/// What a stream has said so far.
#[derive(Debug, Default)]
struct StreamState {
    content: String,
    calls: Vec<PartialCall>,
    usage: Option<WireUsage>,
    api_call_id: Option<String>,
    model: Option<String>,
    finish_reason: Option<String>,
    done: bool,
}

impl StreamState {
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
            Err(e) => Err(ModelError::new(
                ModelErrorKind::MalformedResponse,
                format!(
                    "the stream sent a chunk that is not a JSON object ({e}): {}",
                    quote(data)
                ),
            )),
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
        let Some(choices) = chunk.choices else {
            return Ok(());
        };
        // Only the first choice (`n` is never asked for).
        let Some(choice) = choices.into_iter().find(|c| c.index.unwrap_or(0) == 0) else {
            return Ok(());
        };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason);
        }
        let Some(delta) = choice.delta else {
            return Ok(());
        };
        let text = delta.content.map(|c| c.text()).unwrap_or_default();
        if !text.is_empty() {
            self.content.push_str(&text);
            let _ = events.send(ModelEvent::TextDelta(text));
        }
        if let Some(calls) = delta.tool_calls {
            for (position, call) in calls.into_iter().enumerate() {
                self.tool_call_delta(position, call, events);
            }
        }
        Ok(())
    }

    fn tool_call_delta(
        &mut self,
        position: usize,
        call: AnswerToolCall,
        events: &UnboundedSender<ModelEvent>,
    ) {
        let id = call.id.filter(|s| !s.is_empty());
        let function = call.function.unwrap_or_default();
        let name = function.name.clone().filter(|s| !s.is_empty());
        let index = match call.index {
            Some(index) => index,
            // No index: a new id starts a new call, anything else continues the last one.
            None => match (&id, self.calls.last()) {
                (Some(id), Some(last)) if last.id != *id => last.index + 1,
                (_, Some(last)) => last.index,
                (_, None) => position as u64,
            },
        };
        let slot = match self.calls.iter().position(|c| c.index == index) {
            Some(slot) => slot,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let partial = &mut self.calls[slot];
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
        let arguments_delta = function.arguments_text();
        partial.arguments.push_str(&arguments_delta);
        let _ = events.send(ModelEvent::ToolCallDelta {
            id: partial.id.clone(),
            name: partial.name.clone(),
            arguments_delta,
        });
    }

    fn finish(mut self, model: String, started: Instant) -> ModelResponse {
        let duration_ms = started.elapsed().as_millis() as u64;
        self.calls.sort_by_key(|c| c.index);
        let tool_calls = self
            .calls
            .into_iter()
            .map(|c| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{}", c.index)
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        ModelResponse {
            content: self.content,
            tool_calls,
            usage: self.usage.as_ref().map(|u| u.to_usage(duration_ms)),
            api_call_id: self.api_call_id,
            model: self.model.unwrap_or(model),
            finish_reason: self.finish_reason,
        }
    }
}
