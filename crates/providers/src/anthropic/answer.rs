//! A message of the Messages API, whole or assembled from a stream, as the engine's answer:
//! texts joined, `tool_use` blocks as calls in order, thinking blocks set aside to be sent
//! back, the stop reason in the engine's words.

use std::time::Instant;

use serde_json::Value;

use super::super::http::{Answered, check_answer_size};
use super::super::{ModelError, ModelErrorKind, ModelResponse, ToolCall};
use super::wire::{AnswerBlock, AnswerMessage};

/// The answer of a message, and its thinking blocks (`thinking` and `redacted_thinking`).
pub(super) fn answer_of(
    message: AnswerMessage,
    model: String,
    started: Instant,
    max_answer: usize,
) -> Result<Answered, ModelError> {
    let Some(blocks) = message.content else {
        return Err(ModelError::new(
            ModelErrorKind::MalformedResponse,
            "the message has no content array",
        ));
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut thinking = Vec::new();
    for raw in blocks {
        let Ok(block) = serde_json::from_value::<AnswerBlock>(raw.clone()) else {
            continue;
        };
        match block.kind.as_deref() {
            Some("text") => content.push_str(block.text.as_deref().unwrap_or_default()),
            Some("tool_use") => {
                let n = tool_calls.len() + 1;
                tool_calls.push(ToolCall {
                    id: block
                        .id
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| format!("toolu_{n}")),
                    name: block.name.unwrap_or_default(),
                    arguments: match block.input {
                        Some(Value::String(raw)) => raw,
                        Some(input) => input.to_string(),
                        None => "{}".into(),
                    },
                })
            }
            Some("thinking" | "redacted_thinking") => thinking.push(raw),
            _ => {}
        }
    }
    let size = content.len() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    check_answer_size(size, max_answer)?;
    let finish_reason = match message.stop_reason.as_deref() {
        Some("tool_use") => "tool_calls",
        Some("max_tokens") => "length",
        Some("refusal") => "content_filter",
        _ if !tool_calls.is_empty() => "tool_calls",
        _ => "stop",
    };
    let duration_ms = started.elapsed().as_millis() as u64;
    let answer = ModelResponse {
        content,
        tool_calls,
        usage: message.usage.as_ref().map(|u| u.to_usage(duration_ms)),
        api_call_id: message.id.filter(|s| !s.is_empty()),
        model: message.model.filter(|s| !s.is_empty()).unwrap_or(model),
        finish_reason: Some(finish_reason.to_string()),
    };
    Ok((answer, thinking))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_becomes_the_answer() {
        // The published example of a tool use answer, with a thinking block in front.
        let message: AnswerMessage = serde_json::from_value(json!({
            "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "The user wants weather.", "signature": "EqQB"},
                {"type": "text", "text": "I'll check the weather."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                 "input": {"location": "San Francisco, CA", "unit": "celsius"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 472, "output_tokens": 91, "cache_read_input_tokens": 5}
        }))
        .unwrap();
        let (answer, thinking) = answer_of(message, "m".into(), Instant::now(), 1 << 20).unwrap();
        assert_eq!(answer.content, "I'll check the weather.");
        assert_eq!(answer.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
        assert_eq!(
            answer.tool_calls[0].arguments,
            r#"{"location":"San Francisco, CA","unit":"celsius"}"#
        );
        assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
        let usage = answer.usage.unwrap();
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens
            ),
            (472, 91, 5)
        );
        assert_eq!(thinking.len(), 1);
        let cut: AnswerMessage = serde_json::from_value(
            json!({"content": [{"type": "text", "text": "ab"}], "stop_reason": "max_tokens"}),
        )
        .unwrap();
        let (answer, _) = answer_of(cut, "m".into(), Instant::now(), 1 << 20).unwrap();
        assert_eq!(answer.finish_reason.as_deref(), Some("length"));
        let big: AnswerMessage =
            serde_json::from_value(json!({"content": [{"type": "text", "text": "abc"}]})).unwrap();
        assert_eq!(
            answer_of(big, "m".into(), Instant::now(), 2)
                .unwrap_err()
                .kind,
            ModelErrorKind::TooLarge
        );
    }
}
