//! A provider for the OpenAI Responses API (`wireApi: "responses"`), of OpenAI-compatible
//! servers and Azure OpenAI.
//!
//! `wire` is the format as serde types, `stream` assembles a streamed answer, `output` turns
//! output items into the engine's answer; this file is the [`Wire`]: the URL, the body and a
//! whole answer (the HTTP provider sends the call and remembers reasoning).
//!
//! Reasoning: with `store: false` (the conversation goes whole with every call) a reasoning
//! model's reasoning items come back with `encrypted_content`, and the API wants them in front
//! of the function calls they led to when those calls are sent back. They are opaque and
//! bound to the session, so the provider remembers them in memory, keyed by the call id that
//! followed them, and puts them back in front of that call in later requests. A resumed session
//! has a new provider and sends its earlier calls without them, which the API accepts (the
//! calls are sent without item ids, so nothing points at a reasoning item).

use std::time::Instant;

use serde::Serialize;

use super::http::{
    Answered, ApiFlavor, Assembly, HttpProvider, OpenAiConfig, Wire, encode, malformed,
};
use super::reasoning::ReasoningMemory;
use super::{ChatRequest, ModelError};

mod output;
mod stream;
mod wire;

use output::Output;
use stream::StreamState;
use wire::{RequestBody, RequestTool, Response, input_items};

/// A [`ModelProvider`](super::ModelProvider) for the OpenAI Responses API over HTTP(S).
pub type ResponsesProvider = HttpProvider<Responses>;

/// The Responses API wire (`POST /responses`).
#[derive(Debug)]
pub struct Responses;

impl Wire for Responses {
    const NAME: &'static str = "openai-responses";

    fn url(config: &OpenAiConfig, _model: &str) -> String {
        responses_url(config)
    }

    fn body<'a>(
        config: &'a OpenAiConfig,
        request: &'a ChatRequest,
        model: &'a str,
        reasoning: &'a ReasoningMemory,
    ) -> impl Serialize {
        RequestBody {
            model,
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
            max_output_tokens: config.max_output_tokens,
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
        let whole: Response = serde_json::from_slice(body)
            .map_err(|e| malformed("the response", &e, &String::from_utf8_lossy(body)))?;
        Output::of_response(whole)?.into_answer(model, started, max_answer)
    }
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
        use crate::{ChatMessage, ToolCall};
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
