//! A provider for the OpenAI Responses API (`wireApi: "responses"`), of OpenAI-compatible
//! servers and Azure OpenAI.
//!
//! `wire` is the format as serde types, `stream` assembles a streamed answer, `output` turns
//! output items into the engine's answer; this file sends one call and remembers reasoning.
//!
//! Reasoning: with `store: false` (the conversation goes whole with every call) a reasoning
//! model's reasoning items come back with `encrypted_content`, and the API wants them in front
//! of the function calls they led to when those calls are sent back. They are opaque and
//! bound to the session, so the provider remembers them in memory, keyed by the call id that
//! followed them, and puts them back in front of that call in later requests. A resumed session
//! has a new provider and sends its earlier calls without them, which the API accepts (the
//! calls are sent without item ids, so nothing points at a reasoning item).

use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::http::wire::error_message;
use super::http::{ApiFlavor, HttpCore, OpenAiConfig, encode, malformed};
use super::{
    BoxFuture, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
};

mod output;
mod stream;
mod wire;

use super::reasoning::ReasoningMemory;
use output::Output;
use wire::{RequestBody, RequestTool, Response, input_items};

/// A [`ModelProvider`] for the OpenAI Responses API over HTTP(S).
#[derive(Debug)]
pub struct ResponsesProvider {
    core: HttpCore,
    endpoint: String,
    reasoning: Mutex<ReasoningMemory>,
}

impl ResponsesProvider {
    /// A provider for this configuration (its `flavor` says OpenAI-compatible or Azure); fails
    /// only when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let endpoint = responses_url(&config);
        Ok(ResponsesProvider {
            core: HttpCore::new(config, &endpoint)?,
            endpoint,
            reasoning: Mutex::new(ReasoningMemory::default()),
        })
    }

    /// The URL requests are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body of a request, in the Responses shape.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let reasoning = self.lock();
        let body = self.body(request, &reasoning);
        serde_json::to_value(body).expect("a request body serializes")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReasoningMemory> {
        // The memory is only a cache: a panic elsewhere leaves it usable.
        self.reasoning.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn body<'a>(
        &'a self,
        request: &'a ChatRequest,
        reasoning: &'a ReasoningMemory,
    ) -> RequestBody<'a> {
        RequestBody {
            model: if request.model.is_empty() {
                &self.core.config.model
            } else {
                &request.model
            },
            input: request
                .messages
                .iter()
                .flat_map(|m| input_items(m, move |id| reasoning.before(id)))
                .collect(),
            tool_choice: (request.no_tool_calls && !request.tools.is_empty()).then_some("none"),
            tools: request.tools.iter().map(RequestTool::from).collect(),
            stream: request.stream,
            store: false,
            include: ["reasoning.encrypted_content"],
            max_output_tokens: self.core.config.max_output_tokens,
        }
    }

    async fn call(
        &self,
        request: &ChatRequest,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<ModelResponse, ModelError> {
        let body = {
            let reasoning = self.lock();
            serde_json::to_vec(&self.body(request, &reasoning)).expect("a request body serializes")
        };
        let model = if request.model.is_empty() {
            self.core.config.model.clone()
        } else {
            request.model.clone()
        };
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
        let limit = self.core.config.limits.max_answer_bytes;
        let output = if request.stream {
            self.read_stream(response, events).await?
        } else {
            let body = self.core.read_whole_body(response).await?;
            let whole: Response = serde_json::from_slice(&body)
                .map_err(|e| malformed("the response", &e, &String::from_utf8_lossy(&body)))?;
            Output::of_response(whole)?
        };
        let (answer, reasoning) = output.into_answer(model, started, limit)?;
        self.lock().remember_for(&answer, reasoning);
        Ok(answer)
    }
}

impl ModelProvider for ResponsesProvider {
    fn name(&self) -> &str {
        "openai-responses"
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

/// The error of a failed response (`status: failed`, or an error object in place of one).
fn failure(response: &Response, kind: ModelErrorKind) -> Option<ModelError> {
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

/// `{base}/responses`; Azure: `{base}/openai/responses?api-version=V` with an API version,
/// else `{base}/openai/v1/responses`.
fn responses_url(config: &OpenAiConfig) -> String {
    let base = config.base_url.trim_end_matches('/');
    match &config.flavor {
        ApiFlavor::Azure { api_version } => {
            let base = base.strip_suffix("/openai").unwrap_or(base);
            match api_version {
                Some(version) => {
                    format!("{base}/openai/responses?api-version={}", encode(version))
                }
                None => format!("{base}/openai/v1/responses"),
            }
        }
        ApiFlavor::OpenAi | ApiFlavor::Copilot | ApiFlavor::Anthropic => {
            if base.ends_with("/responses") {
                base.to_string()
            } else {
                format!("{base}/responses")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_reasoning_goes_back_in_front_of_its_call() {
        use crate::model::{ChatMessage, ToolCall};
        let provider =
            ResponsesProvider::new(OpenAiConfig::new("http://127.0.0.1:9/v1", "m")).unwrap();
        let reasoning = serde_json::json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"});
        provider
            .lock()
            .remember("call_1".into(), vec![reasoning.clone()]);
        let call = |id: &str| ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "glob".into(),
                arguments: "{}".into(),
            }],
        };
        let request = ChatRequest {
            messages: vec![ChatMessage::user("hi"), call("call_1"), call("call_2")],
            ..ChatRequest::default()
        };
        let body = provider.request_body(&request);
        let input = body["input"].as_array().unwrap();
        assert_eq!(input[1], reasoning);
        assert_eq!(input[2]["call_id"], "call_1");
        assert_eq!(
            input[3]["call_id"], "call_2",
            "nothing before a call it did not lead to"
        );
        assert_eq!(
            (body["store"].clone(), body["model"].clone()),
            (false.into(), "m".into())
        );
    }

    #[test]
    fn responses_urls() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:9/v1/", "m");
        assert_eq!(responses_url(&config), "http://127.0.0.1:9/v1/responses");
        config.flavor = ApiFlavor::Azure {
            api_version: Some("2025-03-01-preview".into()),
        };
        config.base_url = "http://127.0.0.1:9/openai".into();
        assert_eq!(
            responses_url(&config),
            "http://127.0.0.1:9/openai/responses?api-version=2025-03-01-preview"
        );
        config.flavor = ApiFlavor::Azure { api_version: None };
        assert_eq!(
            responses_url(&config),
            "http://127.0.0.1:9/openai/v1/responses"
        );
    }
}
