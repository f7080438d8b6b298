//! A streamed message: `message_start`, then per block `content_block_start`,
//! `content_block_delta`s (`text_delta`, `input_json_delta`, `thinking_delta`,
//! `signature_delta`) and `content_block_stop`, then `message_delta` (stop reason, usage) and
//! `message_stop`; `ping`s anywhere, an `error` event on failure.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::super::http::wire::WireUsage;
use super::super::http::wire::error_message;
use super::super::http::{AnswerBudget, Answered, Assembly, ResponseLimits, malformed};
use super::super::{ModelError, ModelErrorKind, ModelEvent};
use super::answer::answer_of;
use super::wire::{AnswerMessage, StreamEvent};

impl StreamState {
    pub(super) fn new(limits: &ResponseLimits) -> Self {
        StreamState {
            budget: AnswerBudget::new(limits),
            ..StreamState::default()
        }
    }
}

impl Assembly for StreamState {
    fn on_event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<bool, ModelError> {
        self.event(data, events)
    }

    fn progress(&self) -> usize {
        self.budget.progress()
    }

    /// Complete at `message_stop`.
    fn answer(
        self,
        complete: bool,
        model: String,
        started: Instant,
    ) -> Result<Answered, ModelError> {
        if !complete {
            return Err(ModelError::new(
                ModelErrorKind::Stream,
                "the stream ended before the message was complete (no message_stop)",
            ));
        }
        let max_answer = self.budget.max_answer();
        answer_of(self.finish(), model, started, max_answer)
    }
}

/// A content block being assembled.
#[derive(Debug, Default)]
struct PartialBlock {
    /// The block as `content_block_start` gave it.
    raw: Value,
    text: String,
    /// The `input` of a `tool_use` block, as JSON text in pieces.
    json: String,
    thinking: String,
    signature: String,
}

impl PartialBlock {
    fn kind(&self) -> &str {
        self.raw.get("type").and_then(Value::as_str).unwrap_or("")
    }

    /// The block whole.
    fn into_block(self) -> Value {
        let mut raw = self.raw;
        match raw.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => raw["text"] = Value::String(self.text),
            // `input` arrives as JSON text; kept as text when it is not JSON (the tool then
            // sees the raw arguments, as with Chat Completions).
            "tool_use" if !self.json.is_empty() => {
                raw["input"] = serde_json::from_str(&self.json).unwrap_or(Value::String(self.json))
            }
            "thinking" => {
                raw["thinking"] = Value::String(self.thinking);
                if !self.signature.is_empty() {
                    raw["signature"] = Value::String(self.signature);
                }
            }
            _ => {}
        }
        raw
    }
}

/// What a stream has said so far.
#[derive(Debug, Default)]
pub(super) struct StreamState {
    message: AnswerMessage,
    blocks: BTreeMap<u64, PartialBlock>,
    /// Bytes of text, arguments, thinking and blocks so far, and the calls.
    budget: AnswerBudget,
}

impl StreamState {
    /// Handles one event; true once the message is complete.
    fn event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<bool, ModelError> {
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|e| malformed("an event of the stream", &e, data))?;
        let index = event.index.unwrap_or(0);
        match event.kind.as_deref().unwrap_or_default() {
            "message_start" => {
                if let Some(message) = event.message {
                    self.message = message;
                }
            }
            "content_block_start" => {
                let raw = event.content_block.unwrap_or_else(|| json!({}));
                let block = PartialBlock {
                    raw,
                    ..PartialBlock::default()
                };
                // Every block is held until the end: an empty one costs as much as an empty
                // call, and a call counts against the calls of the answer.
                let call = (block.kind() == "tool_use").then(|| {
                    str_field(&block.raw, "id").len() + str_field(&block.raw, "name").len()
                });
                self.budget.open_part(call)?;
                if call.is_some() {
                    let _ = events.send(ModelEvent::ToolCallDelta {
                        id: str_field(&block.raw, "id"),
                        name: str_field(&block.raw, "name"),
                        arguments_delta: String::new(),
                    });
                }
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let delta = event.delta.unwrap_or_default();
                let block = self.blocks.entry(index).or_default();
                match delta.kind.as_deref().unwrap_or_default() {
                    "text_delta" => {
                        let text = delta.text.unwrap_or_default();
                        block.text.push_str(&text);
                        self.budget.grow(text.len())?;
                        let _ = events.send(ModelEvent::TextDelta(text));
                    }
                    "input_json_delta" => {
                        let piece = delta.partial_json.unwrap_or_default();
                        block.json.push_str(&piece);
                        let (id, name) =
                            (str_field(&block.raw, "id"), str_field(&block.raw, "name"));
                        self.budget.grow(piece.len())?;
                        let _ = events.send(ModelEvent::ToolCallDelta {
                            id,
                            name,
                            arguments_delta: piece,
                        });
                    }
                    "thinking_delta" => {
                        let piece = delta.thinking.unwrap_or_default();
                        block.thinking.push_str(&piece);
                        self.budget.grow(piece.len())?;
                    }
                    "signature_delta" => block
                        .signature
                        .push_str(&delta.signature.unwrap_or_default()),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.message.stop_reason = Some(reason);
                }
                self.message.usage = merge_usage(self.message.usage.take(), event.usage);
            }
            "message_stop" => {
                self.budget.finish();
                return Ok(true);
            }
            "error" => {
                let message = error_message(event.error.as_ref())
                    .unwrap_or_else(|| "the stream reported an error".into());
                return Err(ModelError::new(ModelErrorKind::Stream, message));
            }
            // `ping`, `content_block_stop` and events of later API versions.
            _ => {}
        }
        Ok(false)
    }

    fn finish(mut self) -> AnswerMessage {
        let blocks = std::mem::take(&mut self.blocks);
        self.message.content = Some(blocks.into_values().map(PartialBlock::into_block).collect());
        self.message
    }
}

/// Usage of a stream: `message_start`'s, with the counts `message_delta` updates.
fn merge_usage(start: Option<WireUsage>, delta: Option<WireUsage>) -> Option<WireUsage> {
    match (start, delta) {
        (Some(mut start), Some(delta)) => {
            start.output_tokens = delta.output_tokens.or(start.output_tokens);
            start.input_tokens = delta.input_tokens.or(start.input_tokens);
            start.cache_read_input_tokens = delta
                .cache_read_input_tokens
                .or(start.cache_read_input_tokens);
            start.cache_creation_input_tokens = delta
                .cache_creation_input_tokens
                .or(start.cache_creation_input_tokens);
            Some(start)
        }
        (start, delta) => start.or(delta),
    }
}

fn str_field(value: &Value, name: &str) -> String {
    value
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_stream_assembles() {
        // The event sequence of the Messages API's streaming example with a tool use.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut state = StreamState::new(&ResponseLimits {
            max_answer_bytes: 1 << 20,
            ..ResponseLimits::default()
        });
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 472, "output_tokens": 2}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Okay"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ", checking."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"location\":"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " \"San Francisco, CA\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 89}}),
        ];
        for e in &events {
            assert!(!state.event(&e.to_string(), &tx).unwrap());
        }
        assert!(state.event(r#"{"type": "message_stop"}"#, &tx).unwrap());
        let message = state.finish();
        let (answer, _) = super::super::answer::answer_of(
            message,
            "m".into(),
            std::time::Instant::now(),
            1 << 20,
        )
        .unwrap();
        assert_eq!(answer.content, "Okay, checking.");
        assert_eq!(
            answer.tool_calls[0].arguments,
            r#"{"location":"San Francisco, CA"}"#
        );
        assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
        let usage = answer.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (472, 89));
        drop(tx);
        let first = rx.try_recv().unwrap();
        assert_eq!(first, ModelEvent::TextDelta("Okay".into()));
    }

    #[test]
    fn an_error_event_fails_the_call() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let e = StreamState::default()
            .event(
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
                &tx,
            )
            .unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ModelErrorKind::Stream, "Overloaded")
        );
    }
}
