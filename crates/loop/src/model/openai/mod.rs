//! A provider for any OpenAI-compatible Chat Completions server (Azure OpenAI and the Copilot
//! endpoint included).
//!
//! The HTTP core (`http`) says where the server is, how patient to be and sends with retries;
//! `stream` assembles a streamed answer, `choices` makes several choices one message, `wire`
//! is the JSON format as serde types, `models` lists the server's models; this file ties them
//! together: one call and a whole (non-streamed) answer.

use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::http::{ApiFlavor, HttpCore, OpenAiConfig, check_answer_size, encode, malformed, quote};
use super::{
    BoxFuture, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    ToolCall,
};

mod choices;
mod models;
mod stream;
mod wire;

use super::http::wire::error_message;
use choices::{ChoiceAnswer, fallback_id};
pub use models::{
    ModelCapabilities, ModelInfo, ModelLimits, ModelPolicy, ModelSupports, list_models,
};
use wire::{Completion, RequestBody};

/// A [`ModelProvider`] over HTTP(S) for any OpenAI-compatible Chat Completions server.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    core: HttpCore,
    endpoint: String,
}

impl OpenAiProvider {
    /// A provider for this configuration; fails only when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let endpoint = chat_url(&config, &config.model);
        Ok(OpenAiProvider {
            core: HttpCore::new(config, &endpoint)?,
            endpoint,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.core.config
    }

    /// The URL requests for the configured model are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body of a request, in the OpenAI shape.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        serde_json::to_value(self.body(request)).expect("a request body serializes")
    }

    fn body<'a>(&'a self, request: &'a ChatRequest) -> RequestBody<'a> {
        let mut body = RequestBody::new(request, self.model_of(request));
        // The Copilot CLI sends the effort to the Copilot endpoint only (never to a BYOK
        // provider, where a model that does not reason would refuse the field).
        if self.core.config.flavor == ApiFlavor::Copilot {
            body.reasoning_effort = request.reasoning_effort.as_deref();
        }
        body
    }

    fn model_of<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.core.config.model
        } else {
            &request.model
        }
    }

    /// The call with its retries (cancellation is handled by the caller).
    async fn call(
        &self,
        request: &ChatRequest,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<ModelResponse, ModelError> {
        let body = serde_json::to_vec(&self.body(request)).expect("a request body serializes");
        let model = self.model_of(request).to_string();
        let url = chat_url(&self.core.config, &model);
        let (response, started) = self
            .core
            .post(&url, &body, request.stream, &request.headers, events)
            .await?;
        if request.stream {
            self.read_stream(response, events, model, started).await
        } else {
            self.read_whole(response, model, started).await
        }
    }

    /// Reads a whole (non-streamed) answer.
    async fn read_whole(
        &self,
        response: reqwest::Response,
        model: String,
        started: Instant,
    ) -> Result<ModelResponse, ModelError> {
        let body = self.core.read_whole_body(response).await?;
        let completion: Completion = serde_json::from_slice(&body)
            .map_err(|e| malformed("the response", &e, &String::from_utf8_lossy(&body)))?;
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
                        quote(&String::from_utf8_lossy(&body))
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
        check_answer_size(size, self.core.config.limits.max_answer_bytes)?;
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
}

impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn api_endpoint(&self) -> Option<&str> {
        Some("/chat/completions")
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
