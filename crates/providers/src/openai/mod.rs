//! A provider for any OpenAI-compatible Chat Completions server (Azure OpenAI and the Copilot
//! endpoint included).
//!
//! The HTTP provider (`http`) says where the server is, how patient to be, sends with retries
//! and drives the stream; `stream` assembles a streamed answer, `choices` makes several
//! choices one message, `wire` is the JSON format as serde types, `models` lists the server's
//! models; this file is the [`Wire`]: the URL, the body, and a whole (non-streamed) answer.

use std::time::Instant;

use serde::Serialize;

use super::http::wire::error_message;
use super::http::{
    Answered, ApiFlavor, Assembly, HttpProvider, OpenAiConfig, Wire, check_answer_size, encode,
    malformed, quote,
};
use super::reasoning::ReasoningMemory;
use super::{ChatRequest, ModelError, ModelErrorKind, ModelResponse, ToolCall};

mod choices;
mod models;
mod stream;
mod wire;

use choices::{ChoiceAnswer, fallback_id};
pub use models::{
    ModelCapabilities, ModelInfo, ModelLimits, ModelPolicy, ModelSupports, list_models,
};
use stream::StreamState;
use wire::{Completion, RequestBody};

/// A [`ModelProvider`](super::ModelProvider) over HTTP(S) for any OpenAI-compatible Chat
/// Completions server.
pub type OpenAiProvider = HttpProvider<ChatCompletions>;

/// The Chat Completions wire (`POST /chat/completions`).
#[derive(Debug)]
pub struct ChatCompletions;

impl Wire for ChatCompletions {
    const NAME: &'static str = "openai";
    const API_ENDPOINT: Option<&'static str> = Some("/chat/completions");

    fn url(config: &OpenAiConfig, model: &str) -> String {
        chat_url(config, model)
    }

    fn body<'a>(
        config: &'a OpenAiConfig,
        request: &'a ChatRequest,
        model: &'a str,
        _reasoning: &'a ReasoningMemory,
    ) -> impl Serialize {
        let mut body = RequestBody::new(request, model);
        // The Copilot CLI sends the effort to the Copilot endpoint only (never to a BYOK
        // provider, where a model that does not reason would refuse the field).
        if config.flavor == ApiFlavor::Copilot {
            body.reasoning_effort = request.reasoning_effort.as_deref();
        }
        body
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
        Ok((answer_of(body, model, started, max_answer)?, Vec::new()))
    }
}

/// The answer in a whole (non-streamed) body.
fn answer_of(
    body: &[u8],
    model: String,
    started: Instant,
    max_answer: usize,
) -> Result<ModelResponse, ModelError> {
    let completion: Completion = serde_json::from_slice(body)
        .map_err(|e| malformed("the response", &e, &String::from_utf8_lossy(body)))?;
    if let Some(message) = error_message(completion.error.as_ref()) {
        return Err(ModelError::new(ModelErrorKind::Http, message));
    }
    let choices = completion
        .choices
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            ModelError::new(
                ModelErrorKind::MalformedResponse,
                format!(
                    "the response has no choices: {}",
                    quote(&String::from_utf8_lossy(body))
                ),
            )
        })?;
    let choices = choices
        .into_iter()
        .enumerate()
        .map(|(position, choice)| {
            let index = choice.index.unwrap_or(position as u64);
            let message = choice.message.unwrap_or_default();
            let tool_calls = message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, call)| {
                    let function = call.function.unwrap_or_default();
                    ToolCall {
                        id: call
                            .id
                            .filter(|s| !s.is_empty())
                            .unwrap_or_else(|| fallback_id(index, i as u64)),
                        name: function.name.clone().unwrap_or_default(),
                        arguments: function.arguments_text(),
                    }
                })
                .collect();
            ChoiceAnswer {
                index,
                content: message.content.map(|c| c.text()).unwrap_or_default(),
                tool_calls,
                finish_reason: choice.finish_reason,
            }
        })
        .collect();
    let (content, tool_calls, finish_reason) = choices::merge(choices);
    let size = content.len() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    check_answer_size(size, max_answer)?;
    let duration_ms = started.elapsed().as_millis() as u64;
    Ok(ModelResponse {
        content,
        tool_calls,
        usage: completion.usage.map(|u| u.to_usage(duration_ms)),
        api_call_id: completion.id.filter(|s| !s.is_empty()),
        model: completion.model.filter(|s| !s.is_empty()).unwrap_or(model),
        finish_reason,
    })
}

/// The chat URL of a model: see [`ApiFlavor`].
fn chat_url(config: &OpenAiConfig, model: &str) -> String {
    let base = config.base_url.trim_end_matches('/');
    match &config.flavor {
        ApiFlavor::OpenAi | ApiFlavor::Copilot | ApiFlavor::Anthropic => {
            if base.ends_with("/chat/completions") {
                base.to_string()
            } else {
                format!("{base}/chat/completions")
            }
        }
        ApiFlavor::Azure { api_version } => {
            let base = base.strip_suffix("/openai").unwrap_or(base);
            match api_version {
                Some(version) => format!(
                    "{base}/openai/deployments/{}/chat/completions?api-version={}",
                    encode(model),
                    encode(version)
                ),
                None => format!("{base}/openai/v1/chat/completions"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_urls_of_each_flavor() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:9/v1/", "m");
        assert_eq!(
            chat_url(&config, "m"),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        config.base_url = "http://127.0.0.1:9/x/chat/completions".into();
        assert_eq!(
            chat_url(&config, "m"),
            "http://127.0.0.1:9/x/chat/completions"
        );
        config.flavor = ApiFlavor::Copilot;
        config.base_url = "http://127.0.0.1:9".into();
        assert_eq!(
            chat_url(&config, "m"),
            "http://127.0.0.1:9/chat/completions"
        );
        config.flavor = ApiFlavor::Azure {
            api_version: Some("2024-10-21".into()),
        };
        for base in ["http://127.0.0.1:9", "http://127.0.0.1:9/openai/"] {
            config.base_url = base.into();
            assert_eq!(
                chat_url(&config, "gpt 4/x"),
                "http://127.0.0.1:9/openai/deployments/gpt%204%2Fx/chat/completions?api-version=2024-10-21"
            );
        }
        config.flavor = ApiFlavor::Azure { api_version: None };
        assert_eq!(
            chat_url(&config, "m"),
            "http://127.0.0.1:9/openai/v1/chat/completions"
        );
    }

    #[test]
    fn debug_output_hides_the_key() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.api_key = Some("sk-secret".into());
        let provider = OpenAiProvider::new(config).unwrap();
        let shown = format!("{provider:?}");
        assert!(
            !shown.contains("sk-secret") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}
