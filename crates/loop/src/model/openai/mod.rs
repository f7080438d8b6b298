//! A provider for any OpenAI-compatible Chat Completions server.
//!
//! `config` says where the server is and how patient to be, `transport` does the HTTP,
//! `stream` assembles a streamed answer, `wire` is the JSON format as serde types; this file
//! ties them together: one call, its retries before any output, a whole (non-streamed) answer.

use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::{
    BoxFuture, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    ToolCall,
};

mod choices;
mod config;
mod stream;
mod transport;
mod wire;

use choices::{ChoiceAnswer, fallback_id};
pub use config::{OpenAiConfig, ResponseLimits, RetryPolicy, Timeouts};
use transport::{BodyError, chain, is_loopback};
use wire::{Completion, RequestBody, error_message};

/// Longest server text quoted in an error message when it sent no `error.message`.
const MAX_QUOTE: usize = 500;

/// A [`ModelProvider`] over HTTP(S) for any OpenAI-compatible Chat Completions server.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: String,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// A provider for this configuration; fails only when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let base = config.base_url.trim_end_matches('/');
        let endpoint = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.timeouts.request)
            .user_agent(concat!("turnstile/", env!("CARGO_PKG_VERSION")));
        if is_loopback(&endpoint) {
            // A proxy from the environment must not get between us and a local server.
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| {
            ModelError::new(
                ModelErrorKind::Config,
                format!("cannot build the HTTP client: {}", chain(&e)),
            )
        })?;
        Ok(OpenAiProvider {
            config,
            endpoint,
            client,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body of a request, in the OpenAI shape.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        serde_json::to_value(RequestBody::new(request, self.model_of(request)))
            .expect("a request body serializes")
    }

    fn model_of<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.config.model
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
        let body = serde_json::to_vec(&RequestBody::new(request, self.model_of(request)))
            .expect("a request body serializes");
        let model = self.model_of(request).to_string();
        let mut attempt = 0u32;
        loop {
            let started = Instant::now();
            let (error, retry_after) = match self.send(&body, request.stream).await {
                Ok(response) if response.status().is_success() => {
                    // Committed: from here on nothing is ever sent again.
                    return if request.stream {
                        self.read_stream(response, events, model, started).await
                    } else {
                        self.read_whole(response, model, started).await
                    };
                }
                Ok(response) => self.http_error(response).await,
                Err(error) => (error, None),
            };
            if !error.retryable || attempt >= self.config.retry.max_retries {
                return Err(error);
            }
            attempt += 1;
            let delay = self.config.retry.delay(attempt, retry_after);
            let _ = events.send(ModelEvent::Retry {
                attempt,
                delay_ms: delay.as_millis() as u64,
                reason: error.to_string(),
                status_code: error.status_code,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// Reads a whole (non-streamed) answer.
    async fn read_whole(
        &self,
        response: reqwest::Response,
        model: String,
        started: Instant,
    ) -> Result<ModelResponse, ModelError> {
        let limit = self.config.limits.max_body_bytes;
        let body = self.read_body(response, limit).await.map_err(|e| match e {
            BodyError::TooLarge => ModelError::new(
                ModelErrorKind::TooLarge,
                format!(
                    "the model's response body is larger than the limit of {limit} bytes \
                     (max_body_bytes); the call was stopped there"
                ),
            ),
            BodyError::Model(e) => e,
        })?;
        let completion: Completion = serde_json::from_slice(&body).map_err(|e| {
            ModelError::new(
                ModelErrorKind::MalformedResponse,
                format!(
                    "the response is not a JSON object ({e}): {}",
                    quote(&String::from_utf8_lossy(&body))
                ),
            )
        })?;
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
        check_answer_size(size, self.config.limits.max_answer_bytes)?;
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

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(ModelError::cancelled()),
                result = self.call(request, &events) => result,
            }
        })
    }
}

/// Fails when an answer of `size` bytes (text and tool arguments) is past `limit`.
fn check_answer_size(size: usize, limit: usize) -> Result<(), ModelError> {
    if size > limit {
        return Err(ModelError::new(
            ModelErrorKind::TooLarge,
            format!(
                "the model's answer (text and tool call arguments) is larger than the limit of \
                 {limit} bytes (max_answer_bytes); the call was stopped there"
            ),
        ));
    }
    Ok(())
}

/// At most [`MAX_QUOTE`] characters of server text.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn quotes_are_cut_on_char_boundaries() {
        let long = "é".repeat(MAX_QUOTE + 10);
        let q = quote(&long);
        assert!(q.ends_with("..."));
        assert_eq!(q.chars().count(), MAX_QUOTE + 3);
    }
}
