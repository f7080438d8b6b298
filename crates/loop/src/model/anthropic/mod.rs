//! A provider for Anthropic's Messages API (the SDK provider `type: "anthropic"`).
//!
//! `wire` is the format as serde types, `stream` assembles a streamed answer; this file sends
//! one call and turns the answer's content blocks into the engine's answer. Thinking blocks
//! that led to tool calls go back in front of those calls in later requests, as the API
//! requires with extended thinking (see `reasoning`).

use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::http::wire::{WireUsage, error_message};
use super::http::{HttpCore, OpenAiConfig, check_answer_size, malformed, v1_url};
use super::reasoning::ReasoningMemory;
use super::{
    BoxFuture, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    ToolCall,
};

mod stream;
mod wire;

use wire::{AnswerBlock, AnswerMessage, RequestBody, RequestTool, conversation};

/// `max_tokens` when the configuration sets no `max_output_tokens` (the API requires one).
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

/// A [`ModelProvider`] for Anthropic's Messages API over HTTP(S).
#[derive(Debug)]
pub struct AnthropicProvider {
    core: HttpCore,
    endpoint: String,
    thinking: Mutex<ReasoningMemory>,
}

impl AnthropicProvider {
    /// A provider for this configuration; fails only when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let endpoint = messages_url(&config.base_url);
        Ok(AnthropicProvider {
            core: HttpCore::new(config, &endpoint)?,
            endpoint,
            thinking: Mutex::new(ReasoningMemory::default()),
        })
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body of a request, in the Messages shape.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let thinking = self.lock();
        serde_json::to_value(self.body(request, &thinking)).expect("a request body serializes")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReasoningMemory> {
        // The memory is only a cache: a panic elsewhere leaves it usable.
        self.thinking.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn model_of<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.core.config.model
        } else {
            &request.model
        }
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        thinking: &'a ReasoningMemory,
    ) -> RequestBody<'a> {
        let (system, messages) = conversation(&request.messages, move |id| thinking.before(id));
        RequestBody {
            model: self.model_of(request),
            max_tokens: self
                .core
                .config
                .max_output_tokens
                .unwrap_or(DEFAULT_MAX_TOKENS),
            system,
            messages,
            tools: request.tools.iter().map(RequestTool::from).collect(),
            tool_choice: (request.no_tool_calls && !request.tools.is_empty())
                .then(|| serde_json::json!({"type": "none"})),
            stream: request.stream,
        }
    }

    async fn call(
        &self,
        request: &ChatRequest,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<ModelResponse, ModelError> {
        let body = {
            let thinking = self.lock();
            serde_json::to_vec(&self.body(request, &thinking)).expect("a request body serializes")
        };
        let model = self.model_of(request).to_string();
        let (response, started) = self
            .core
            .post(
                &self.endpoint,
                &body,
                request.stream,
                &request.headers,
                events,
            )
            .await?;
        let message = if request.stream {
            self.read_stream(response, events).await?
        } else {
            let body = self.core.read_whole_body(response).await?;
            let message: AnswerMessage = serde_json::from_slice(&body)
                .map_err(|e| malformed("the response", &e, &String::from_utf8_lossy(&body)))?;
            if let Some(text) = error_message(message.error.as_ref()) {
                return Err(ModelError::new(ModelErrorKind::Http, text));
            }
            message
        };
        let limit = self.core.config.limits.max_answer_bytes;
        let (answer, thinking) = answer_of(message, model, started, limit)?;
        self.lock().remember_for(&answer, thinking);
        Ok(answer)
    }
}

impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        super::cancellable(cancel, async move { self.call(request, &events).await })
    }
}

/// The answer of a message, and its thinking blocks (`thinking` and `redacted_thinking`).
fn answer_of(
    message: AnswerMessage,
    model: String,
    started: Instant,
    max_answer: usize,
) -> Result<(ModelResponse, Vec<Value>), ModelError> {
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

/// `{base}/v1/messages` (`{base}/messages` when the base ends in `/v1`; a base already ending
/// in `/messages` is used as is).
fn messages_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/messages") {
        base.to_string()
    } else {
        v1_url(base, "messages")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_urls() {
        assert_eq!(
            messages_url("http://127.0.0.1:9"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9/x/v1/messages"),
            "http://127.0.0.1:9/x/v1/messages"
        );
    }

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
