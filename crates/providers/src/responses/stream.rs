//! A streamed response: typed SSE events in (`response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.output_item.done`,
//! `response.completed`, ...), deltas out as they arrive, the output at the end.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::super::http::{AnswerBudget, Answered, Assembly, ResponseLimits, malformed};
use super::super::{ModelError, ModelErrorKind, ModelEvent};
use super::output::{Output, failure};
use super::wire::{OutputItem, StreamEvent};

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
        self.output = self.event(data, events)?;
        if self.output.is_some() {
            self.budget.finish();
        }
        Ok(self.output.is_some())
    }

    fn progress(&self) -> usize {
        self.budget.progress()
    }

    /// Complete at `response.completed` (or `response.incomplete`).
    fn answer(
        self,
        _complete: bool,
        model: String,
        started: Instant,
    ) -> Result<Answered, ModelError> {
        match self.output {
            Some(output) => output.into_answer(model, started, self.budget.max_answer()),
            None => Err(ModelError::new(
                ModelErrorKind::Stream,
                "the stream ended before the response was complete (no response.completed)",
            )),
        }
    }
}

/// An output item being assembled from events.
#[derive(Debug, Default)]
struct PartialItem {
    /// The item as `response.output_item.added` (then `done`) gave it.
    raw: Value,
    /// The call id and tool name of a `function_call` item, read once when it is added so
    /// that each argument delta costs no parse of the item.
    call: Option<(String, String)>,
    text: String,
    arguments: String,
    done: bool,
}

impl PartialItem {
    /// The item: as `done` gave it, else as its deltas built it.
    fn into_item(self) -> Value {
        if self.done {
            return self.raw;
        }
        let mut raw = self.raw;
        match raw.get("type").and_then(Value::as_str) {
            Some("function_call") => raw["arguments"] = Value::String(self.arguments),
            Some("message") | None => {
                raw["type"] = "message".into();
                raw["content"] = json!([{"type": "output_text", "text": self.text}]);
            }
            Some(_) => {}
        }
        raw
    }
}

/// What a stream has said so far.
#[derive(Debug, Default)]
pub(super) struct StreamState {
    items: BTreeMap<u64, PartialItem>,
    /// Bytes of text, arguments and items so far, and the calls.
    budget: AnswerBudget,
    id: Option<String>,
    model: Option<String>,
    /// The output, once the response is complete.
    output: Option<Output>,
}

impl StreamState {
    /// Handles one event; returns the output once the response is complete.
    fn event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<Option<Output>, ModelError> {
        if data.trim() == "[DONE]" {
            return Ok(None);
        }
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|e| malformed("an event of the stream", &e, data))?;
        let index = event.output_index.unwrap_or(0);
        match event.kind.as_deref().unwrap_or_default() {
            "response.created" | "response.in_progress" => {
                if let Some(response) = &event.response {
                    self.id = self.id.take().or_else(|| response.id.clone());
                    self.model = self.model.take().or_else(|| response.model.clone());
                }
            }
            "response.output_item.added" => {
                let raw = event.item.unwrap_or_else(|| json!({}));
                let item: OutputItem = serde_json::from_value(raw.clone()).unwrap_or_default();
                // Every item is held until the end: an empty one costs as much as an empty
                // call, and a call counts against the calls of the answer.
                let named = (item.kind.as_deref() == Some("function_call")).then(|| {
                    item.call_id.as_ref().map_or(0, String::len)
                        + item.name.as_ref().map_or(0, String::len)
                });
                self.budget.open_part(named)?;
                let call = (item.kind.as_deref() == Some("function_call")).then(|| {
                    let call = (
                        item.call_id.unwrap_or_default(),
                        item.name.unwrap_or_default(),
                    );
                    let _ = events.send(ModelEvent::ToolCallDelta {
                        id: call.0.clone(),
                        name: call.1.clone(),
                        arguments_delta: String::new(),
                    });
                    call
                });
                self.items.insert(
                    index,
                    PartialItem {
                        raw,
                        call,
                        ..PartialItem::default()
                    },
                );
            }
            "response.output_text.delta" => {
                let delta = event.delta.unwrap_or_default();
                self.budget.grow(delta.len())?;
                self.items.entry(index).or_default().text.push_str(&delta);
                let _ = events.send(ModelEvent::TextDelta(delta));
            }
            "response.function_call_arguments.delta" => {
                let delta = event.delta.unwrap_or_default();
                self.budget.grow(delta.len())?;
                let partial = self.items.entry(index).or_default();
                partial.arguments.push_str(&delta);
                let (id, name) = partial.call.clone().unwrap_or_default();
                let _ = events.send(ModelEvent::ToolCallDelta {
                    id,
                    name,
                    arguments_delta: delta,
                });
            }
            "response.output_item.done" => {
                if let Some(raw) = event.item {
                    let partial = self.items.entry(index).or_default();
                    partial.raw = raw;
                    partial.done = true;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or_default();
                if let Some(error) = failure(&response, ModelErrorKind::Stream) {
                    return Err(error);
                }
                let streamed: Vec<Value> = std::mem::take(&mut self.items)
                    .into_values()
                    .map(PartialItem::into_item)
                    .collect();
                // The final response's output is the whole truth when it carries one.
                let items = match response.output {
                    Some(output) if !output.is_empty() => output,
                    _ => streamed,
                };
                return Ok(Some(Output {
                    id: response.id.or(self.id.take()).filter(|s| !s.is_empty()),
                    model: response
                        .model
                        .or(self.model.take())
                        .filter(|s| !s.is_empty()),
                    items,
                    usage: response.usage,
                    status: response.status,
                    incomplete_reason: response.incomplete_details.and_then(|d| d.reason),
                }));
            }
            "response.failed" => {
                let response = event.response.unwrap_or_default();
                return Err(
                    failure(&response, ModelErrorKind::Stream).unwrap_or_else(|| {
                        ModelError::new(ModelErrorKind::Stream, "the response failed")
                    }),
                );
            }
            "error" => {
                let message = event
                    .message
                    .unwrap_or_else(|| "the stream reported an error".into());
                let message = match event.code {
                    Some(code) => format!("{message} ({code})"),
                    None => message,
                };
                return Err(ModelError::new(ModelErrorKind::Stream, message));
            }
            // Content parts, `.done` events of texts and arguments, reasoning summaries, ...:
            // the items' `done` events carry what they say.
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[Value]) -> (Result<Option<Output>, ModelError>, Vec<ModelEvent>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut state = StreamState::new(&ResponseLimits {
            max_answer_bytes: 1 << 20,
            ..ResponseLimits::default()
        });
        let mut result = Ok(None);
        for event in events {
            result = state.event(&event.to_string(), &tx);
            if !matches!(result, Ok(None)) {
                break;
            }
        }
        drop(tx);
        let mut seen = Vec::new();
        while let Ok(e) = rx.try_recv() {
            seen.push(e);
        }
        (result, seen)
    }

    #[test]
    fn deltas_stream_and_items_assemble() {
        let (result, seen) = run(&[
            json!({"type": "response.created", "response": {"id": "resp_9", "model": "gpt-5", "status": "in_progress", "output": []}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": "Hel"}),
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": "lo"}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "glob", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{\"pattern\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "\"*\"}"}),
            json!({"type": "response.completed", "response": {"id": "resp_9", "status": "completed", "usage": {"input_tokens": 3, "output_tokens": 4}}}),
        ]);
        let output = result.unwrap().unwrap();
        assert_eq!(output.id.as_deref(), Some("resp_9"));
        assert_eq!(output.model.as_deref(), Some("gpt-5"));
        let (answer, _) = output
            .into_answer("m".into(), std::time::Instant::now(), 1 << 20)
            .unwrap();
        assert_eq!(answer.content, "Hello");
        assert_eq!(answer.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(answer.tool_calls[0].id, "call_1");
        assert_eq!(seen[0], ModelEvent::TextDelta("Hel".into()));
        assert!(seen.contains(&ModelEvent::ToolCallDelta {
            id: "call_1".into(),
            name: "glob".into(),
            arguments_delta: "\"*\"}".into()
        }));
    }

    #[test]
    fn errors_in_the_stream() {
        let (result, _) =
            run(&[json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"})]);
        let e = result.unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::Stream);
        assert_eq!(e.message, "slow down (rate_limit_exceeded)");
        let (result, _) = run(&[
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"message": "overloaded"}}}),
        ]);
        assert_eq!(result.unwrap_err().message, "overloaded");
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let e = StreamState::default().event("{not json", &tx).unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::MalformedResponse);
    }

    #[test]
    fn the_published_stream_with_a_function_call_assembles() {
        // The Responses API's streaming events as its reference lists them: the response
        // object first, a message item with its content part, a function call item with its
        // argument deltas, every item closed, then the completed response with the usage.
        let response = |status: &str, output: Value, usage: Value| json!({"id": "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654", "object": "response", "created_at": 1741290958, "status": status, "error": null, "incomplete_details": null, "instructions": "You are a helpful assistant.", "max_output_tokens": null, "model": "gpt-4.1-2025-04-14", "output": output, "parallel_tool_calls": true, "previous_response_id": null, "reasoning": {"effort": null, "summary": null}, "store": true, "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": null, "metadata": {}});
        let message = json!({"id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "type": "message", "status": "in_progress", "role": "assistant", "content": []});
        let call = json!({"type": "function_call", "id": "fc_12345xyz", "call_id": "call_12345xyz", "name": "get_weather", "arguments": ""});
        let mut done_call = call.clone();
        done_call["arguments"] = json!("{\"location\":\"Paris, France\"}");
        done_call["status"] = json!("completed");
        let text = "Hi there!";
        let (result, seen) = run(&[
            json!({"type": "response.created", "sequence_number": 0, "response": response("in_progress", json!([]), json!(null))}),
            json!({"type": "response.in_progress", "sequence_number": 1, "response": response("in_progress", json!([]), json!(null))}),
            json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": message}),
            json!({"type": "response.content_part.added", "sequence_number": 3, "item_id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
            json!({"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "output_index": 0, "content_index": 0, "delta": "Hi"}),
            json!({"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "output_index": 0, "content_index": 0, "delta": " there!"}),
            json!({"type": "response.output_text.done", "sequence_number": 6, "item_id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "output_index": 0, "content_index": 0, "text": text}),
            json!({"type": "response.content_part.done", "sequence_number": 7, "item_id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}),
            json!({"type": "response.output_item.done", "sequence_number": 8, "output_index": 0, "item": {"id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
            json!({"type": "response.output_item.added", "sequence_number": 9, "output_index": 1, "item": call}),
            json!({"type": "response.function_call_arguments.delta", "sequence_number": 10, "item_id": "fc_12345xyz", "output_index": 1, "delta": "{\"location\":"}),
            json!({"type": "response.function_call_arguments.delta", "sequence_number": 11, "item_id": "fc_12345xyz", "output_index": 1, "delta": "\"Paris, France\"}"}),
            json!({"type": "response.function_call_arguments.done", "sequence_number": 12, "item_id": "fc_12345xyz", "output_index": 1, "arguments": "{\"location\":\"Paris, France\"}"}),
            json!({"type": "response.output_item.done", "sequence_number": 13, "output_index": 1, "item": done_call}),
            json!({"type": "response.completed", "sequence_number": 14, "response": response("completed", json!([{"id": "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}, done_call]), json!({"input_tokens": 37, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 11, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 48}))}),
        ]);
        let output = result
            .unwrap()
            .expect("the completed event ends the stream");
        assert_eq!(
            output.id.as_deref(),
            Some("resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654")
        );
        assert_eq!(output.model.as_deref(), Some("gpt-4.1-2025-04-14"));
        let (answer, _) = output
            .into_answer("m".into(), std::time::Instant::now(), 1 << 20)
            .unwrap();
        assert_eq!(answer.content, text);
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(answer.tool_calls[0].id, "call_12345xyz");
        assert_eq!(answer.tool_calls[0].name, "get_weather");
        assert_eq!(
            answer.tool_calls[0].arguments,
            r#"{"location":"Paris, France"}"#
        );
        let usage = answer.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (37, 11));
        let texts: Vec<&ModelEvent> = seen
            .iter()
            .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
            .collect();
        assert_eq!(
            texts,
            [
                &ModelEvent::TextDelta("Hi".into()),
                &ModelEvent::TextDelta(" there!".into())
            ],
            "the done events repeat the text and are not streamed again"
        );
    }
}
