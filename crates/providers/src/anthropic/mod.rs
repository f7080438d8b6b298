//! A provider for Anthropic's Messages API (the SDK provider `type: "anthropic"`).
//!
//! `wire` is the format as serde types, `stream` assembles a streamed answer, `answer` turns
//! a message's content blocks into the engine's answer; this file is the [`Wire`]: the URL,
//! the body and a whole answer. Thinking blocks
//! that led to tool calls go back in front of those calls in later requests, as the API
//! requires with extended thinking (see `reasoning`).

use std::time::Instant;

use serde::Serialize;

use super::http::wire::error_message;
use super::http::{Answered, Assembly, HttpProvider, OpenAiConfig, Wire, malformed, v1_url};
use super::reasoning::ReasoningMemory;
use super::{ChatRequest, ModelError, ModelErrorKind};

mod answer;
mod stream;
mod wire;

use answer::answer_of;
use stream::StreamState;
use wire::{AnswerMessage, RequestBody, RequestTool, conversation};

/// `max_tokens` when the configuration sets no `max_output_tokens` (the API requires one).
pub const DEFAULT_MAX_TOKENS: u64 = 8192;

/// A [`ModelProvider`](super::ModelProvider) for Anthropic's Messages API over HTTP(S).
pub type AnthropicProvider = HttpProvider<Messages>;

/// The Messages API wire (`POST /v1/messages`).
#[derive(Debug)]
pub struct Messages;

impl Wire for Messages {
    const NAME: &'static str = "anthropic";

    fn url(config: &OpenAiConfig, _model: &str) -> String {
        messages_url(&config.base_url)
    }

    fn body<'a>(
        config: &'a OpenAiConfig,
        request: &'a ChatRequest,
        model: &'a str,
        thinking: &'a ReasoningMemory,
    ) -> impl Serialize {
        let (system, messages) = conversation(&request.messages, request.citations, move |id| {
            thinking.before(id)
        });
        RequestBody {
            model,
            max_tokens: config.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            system,
            messages,
            tools: request.tools.iter().map(RequestTool::from).collect(),
            tool_choice: (request.no_tool_calls && !request.tools.is_empty())
                .then(|| serde_json::json!({"type": "none"})),
            stream: request.stream,
        }
    }

    fn stream(limits: &crate::ResponseLimits) -> impl Assembly + Send {
        StreamState::new(limits)
    }

    fn whole(
        body: &[u8],
        model: String,
        started: Instant,
        max_answer: usize,
    ) -> Result<Answered, ModelError> {
        let message: AnswerMessage = serde_json::from_slice(body)
            .map_err(|e| malformed("the response", &e, &String::from_utf8_lossy(body)))?;
        if let Some(text) = error_message(message.error.as_ref()) {
            return Err(ModelError::new(ModelErrorKind::Http, text));
        }
        answer_of(message, model, started, max_answer)
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
}
