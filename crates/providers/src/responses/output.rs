//! A finished response's output items as the engine's answer: message texts joined, function
//! calls in order, reasoning items set aside to be sent back.

use std::time::Instant;

use serde_json::Value;

use super::super::http::wire::{WireUsage, error_message};
use super::super::http::{Answered, check_answer_size};
use super::super::{ModelError, ModelErrorKind, ModelResponse, ToolCall};
use super::wire::{OutputItem, Response};

/// What a response said, whole or assembled from a stream.
#[derive(Debug, Default)]
pub(super) struct Output {
    pub id: Option<String>,
    pub model: Option<String>,
    pub items: Vec<Value>,
    pub usage: Option<WireUsage>,
    pub status: Option<String>,
    pub incomplete_reason: Option<String>,
}

impl Output {
    /// The output of a whole response; a failed one is an error.
    pub(super) fn of_response(response: Response) -> Result<Self, ModelError> {
        if let Some(error) = failure(&response, ModelErrorKind::Http) {
            return Err(error);
        }
        let Some(items) = response.output else {
            return Err(ModelError::new(
                ModelErrorKind::MalformedResponse,
                "the response has no output array",
            ));
        };
        Ok(Output {
            id: response.id.filter(|s| !s.is_empty()),
            model: response.model.filter(|s| !s.is_empty()),
            items,
            usage: response.usage,
            status: response.status,
            incomplete_reason: response.incomplete_details.and_then(|d| d.reason),
        })
    }

    /// The answer and the reasoning items that came with it (those with `encrypted_content`,
    /// the only ones that can be sent back without server-side storage).
    pub(super) fn into_answer(
        self,
        model: String,
        started: Instant,
        max_answer: usize,
    ) -> Result<Answered, ModelError> {
        let mut content = String::new();
        let mut tool_calls = Vec::new();
        let mut reasoning = Vec::new();
        for raw in self.items {
            let Ok(item) = serde_json::from_value::<OutputItem>(raw.clone()) else {
                continue;
            };
            match item.kind.as_deref() {
                Some("message") => content.push_str(&item.text()),
                Some("function_call") => {
                    let n = tool_calls.len() + 1;
                    tool_calls.push(ToolCall {
                        id: item
                            .call_id
                            .or(item.id)
                            .filter(|s| !s.is_empty())
                            .unwrap_or_else(|| format!("call_{n}")),
                        name: item.name.unwrap_or_default(),
                        arguments: item.arguments.unwrap_or_default(),
                    })
                }
                Some("reasoning") if raw.get("encrypted_content").is_some_and(Value::is_string) => {
                    reasoning.push(raw)
                }
                _ => {}
            }
        }
        let size = content.len() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        check_answer_size(size, max_answer)?;
        let finish_reason = match (self.status.as_deref(), self.incomplete_reason.as_deref()) {
            (Some("incomplete"), Some("max_output_tokens")) => "length",
            (Some("incomplete"), Some("content_filter")) => "content_filter",
            _ if !tool_calls.is_empty() => "tool_calls",
            _ => "stop",
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        let answer = ModelResponse {
            content,
            tool_calls,
            usage: self.usage.map(|u| u.to_usage(duration_ms)),
            api_call_id: self.id,
            model: self.model.unwrap_or(model),
            finish_reason: Some(finish_reason.to_string()),
        };
        Ok((answer, reasoning))
    }
}

/// The error of a failed response (`status: failed`, or an error object in place of one).
pub(super) fn failure(response: &Response, kind: ModelErrorKind) -> Option<ModelError> {
    if let Some(message) = error_message(response.error.as_ref()) {
        return Some(ModelError::new(kind, message));
    }
    (response.status.as_deref() == Some("failed")).then(|| {
        ModelError::new(
            kind,
            "the response failed (status \"failed\") without saying why",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(response: Value) -> Result<(ModelResponse, Vec<Value>), ModelError> {
        Output::of_response(serde_json::from_value(response).unwrap())?.into_answer(
            "m".into(),
            Instant::now(),
            1024,
        )
    }

    #[test]
    fn output_items_make_the_answer() {
        let (a, reasoning) = answer(json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
                {"type": "reasoning", "id": "rs_2", "summary": []},
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "glob",
                 "arguments": "{\"pattern\":\"*\"}", "status": "completed"},
                {"type": "web_search_call", "id": "ws_1"}
            ],
            "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}
        }))
        .unwrap();
        assert_eq!(a.content, "Let me look.");
        assert_eq!(a.tool_calls.len(), 1);
        assert_eq!(
            (a.tool_calls[0].id.as_str(), a.tool_calls[0].name.as_str()),
            ("call_a", "glob")
        );
        assert_eq!(a.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            (a.api_call_id.as_deref(), a.model.as_str()),
            (Some("resp_1"), "gpt-5")
        );
        assert_eq!(a.usage.unwrap().output_tokens, 7);
        assert_eq!(reasoning.len(), 1, "only items that can be sent back");
    }

    #[test]
    fn failed_incomplete_and_oversized_responses() {
        let e = answer(json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}, "output": []}))
            .unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), (ModelErrorKind::Http, "boom"));
        let (a, _) = answer(
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "cut"}]}]}),
        )
        .unwrap();
        assert_eq!(a.finish_reason.as_deref(), Some("length"));
        let e = answer(json!({"status": "completed", "output": [{"type": "message", "content": [{"type": "output_text", "text": "x".repeat(2000)}]}]}))
            .unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::TooLarge);
        assert_eq!(
            answer(json!({"id": "r"})).unwrap_err().kind,
            ModelErrorKind::MalformedResponse
        );
    }
}
