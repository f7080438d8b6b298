//! The Chat Completions wire format as serde types: the request body, the whole response and
//! the stream chunk.
//!
//! Servers differ in the details, so the response types are lenient: a field of an unexpected
//! type reads as absent (as if the server had not sent it) rather than failing the answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::http::request::{FunctionTool, MessageContent, call_arguments};
use super::super::http::wire::{WireUsage, lenient};
use super::super::{ChatMessage, ChatRequest, ToolSchema};

/// The body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    pub model: &'a str,
    pub messages: Vec<RequestMessage<'a>>,
    /// `"none"` when the tools must not be called; before `tools`, where the Copilot CLI
    /// writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    /// Left out when empty: some servers reject an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<RequestTool<'a>>,
    /// Left out when false (the API's default), as the Copilot CLI sends a non-streaming call.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// Top-level, as the Copilot CLI sends it to the Copilot endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<&'a str>,
}

impl<'a> RequestBody<'a> {
    /// The body of `request` sent to `model`.
    pub(crate) fn new(request: &'a ChatRequest, model: &'a str) -> Self {
        let mut messages: Vec<RequestMessage<'a>> =
            request.messages.iter().map(RequestMessage::from).collect();
        if request.stream {
            // The Copilot CLI's stream assembly keeps `refusal: null` on the answers it
            // received for the current prompt (those after the last user message).
            let current = messages
                .iter()
                .rposition(|m| matches!(m, RequestMessage::User { .. }))
                .map_or(0, |i| i + 1);
            for message in &mut messages[current..] {
                if let RequestMessage::Assistant { refusal, .. } = message {
                    *refusal = Some(None);
                }
            }
        }
        RequestBody {
            model,
            messages,
            tool_choice: (request.no_tool_calls && !request.tools.is_empty()).then_some("none"),
            tools: request.tools.iter().map(RequestTool::from).collect(),
            stream: request.stream,
            stream_options: request.stream.then_some(StreamOptions {
                include_usage: true,
            }),
            reasoning_effort: None,
        }
    }
}

/// `stream_options`: ask for the `usage` chunk at the end of a stream.
#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub include_usage: bool,
}

/// One part of a user message's `content` array, tagged by `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum RequestPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

/// An `image_url` part's URL (a `data:` URL for attached images).
#[derive(Debug, Serialize)]
pub(crate) struct ImageUrl<'a> {
    pub url: &'a str,
}

/// One message of the conversation, tagged by `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum RequestMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: MessageContent<'a, RequestPart<'a>>,
    },
    Assistant {
        /// `null` only next to tool calls (servers reject a null content alone).
        content: Option<&'a str>,
        /// `Some(None)` writes `"refusal": null`; absent otherwise.
        #[serde(skip_serializing_if = "Option::is_none")]
        refusal: Option<Option<&'a str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<RequestToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

impl<'a> From<&'a ChatMessage> for RequestMessage<'a> {
    fn from(message: &'a ChatMessage) -> Self {
        match message {
            ChatMessage::System { content } => RequestMessage::System { content },
            ChatMessage::User { content, parts } => RequestMessage::User {
                content: MessageContent::user(
                    content,
                    parts,
                    |text| RequestPart::Text { text },
                    |url| RequestPart::ImageUrl {
                        image_url: ImageUrl { url },
                    },
                ),
            },
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => RequestMessage::Assistant {
                content: match content {
                    Some(c) => Some(c),
                    None if !tool_calls.is_empty() => None,
                    None => Some(""),
                },
                refusal: None,
                tool_calls: tool_calls
                    .iter()
                    .map(|c| RequestToolCall {
                        id: &c.id,
                        kind: "function",
                        function: RequestFunctionCall {
                            name: &c.name,
                            arguments: call_arguments(c),
                        },
                    })
                    .collect(),
            },
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => RequestMessage::Tool {
                tool_call_id,
                content,
            },
        }
    }
}

/// A tool call of an earlier assistant message.
#[derive(Debug, Serialize)]
pub(crate) struct RequestToolCall<'a> {
    pub id: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: RequestFunctionCall<'a>,
}

/// The function of an earlier tool call.
#[derive(Debug, Serialize)]
pub(crate) struct RequestFunctionCall<'a> {
    pub name: &'a str,
    pub arguments: &'a str,
}

/// A tool on offer.
#[derive(Debug, Serialize)]
pub(crate) struct RequestTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionTool<'a>,
}

impl<'a> From<&'a ToolSchema> for RequestTool<'a> {
    fn from(tool: &'a ToolSchema) -> Self {
        RequestTool {
            kind: "function",
            function: FunctionTool::from(tool),
        }
    }
}

/// A whole (non-streamed) `chat.completion`, or one `chat.completion.chunk` of a stream (the
/// same fields, with `delta`s in the choices), or an error object in its place.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Completion {
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub model: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub choices: Option<Vec<Choice>>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

/// One `chat.completion.chunk` of a stream: a [`Completion`] in shape.
pub(crate) type Chunk = Completion;

/// One choice: `message` in a whole response, `delta` in a chunk.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default, deserialize_with = "lenient")]
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<AnswerMessage>,
    #[serde(default, deserialize_with = "lenient")]
    pub delta: Option<AnswerMessage>,
    #[serde(default, deserialize_with = "lenient")]
    pub finish_reason: Option<String>,
}

/// The assistant's message (or a piece of it).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnswerMessage {
    #[serde(default, deserialize_with = "lenient")]
    pub content: Option<Content>,
    #[serde(default, deserialize_with = "lenient")]
    pub tool_calls: Option<Vec<AnswerToolCall>>,
}

/// Message text: a string, or content parts whose `text`s are joined.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text.
    pub(crate) fn text(self) -> String {
        match self {
            Content::Text(s) => s,
            Content::Parts(parts) => parts.into_iter().filter_map(|p| p.text).collect(),
        }
    }
}

/// One content part; only text parts carry text.
#[derive(Debug, Deserialize)]
pub(crate) struct ContentPart {
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
}

/// A tool call (or a piece of one in a stream).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnswerToolCall {
    #[serde(default, deserialize_with = "lenient")]
    pub index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub function: Option<AnswerFunction>,
}

/// The function of a tool call.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct AnswerFunction {
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    /// A string of JSON text normally; some servers send an object in one piece.
    #[serde(default)]
    pub arguments: Option<Value>,
}

impl AnswerFunction {
    /// The arguments as raw text (an object is turned into its JSON text).
    pub(crate) fn arguments_text(&self) -> String {
        match &self.arguments {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_streamed_request_keeps_refusal_null_on_the_current_prompts_answers_only() {
        let answer = |text: &str| ChatMessage::Assistant {
            content: Some(text.into()),
            tool_calls: Vec::new(),
        };
        let user = |text: &str| ChatMessage::User {
            content: text.into(),
            parts: Vec::new(),
        };
        let mut request = ChatRequest {
            messages: vec![
                user("one"),
                answer("a"),
                user("two"),
                answer("b"),
                answer("c"),
            ],
            stream: true,
            ..Default::default()
        };
        let refusals = |request: &ChatRequest| -> Vec<bool> {
            let body = serde_json::to_value(RequestBody::new(request, "m")).unwrap();
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "assistant")
                .map(|m| m.as_object().unwrap().contains_key("refusal"))
                .collect()
        };
        assert_eq!(refusals(&request), [false, true, true]);
        let body = serde_json::to_string(&RequestBody::new(&request, "m")).unwrap();
        assert!(body.contains(r#"{"role":"assistant","content":"c","refusal":null}"#));
        request.stream = false;
        assert_eq!(refusals(&request), [false, false, false]);
    }

    #[test]
    fn fields_of_the_wrong_type_read_as_absent() {
        let c: Chunk = serde_json::from_value(json!({
            "id": 5, "model": null, "usage": "x",
            "choices": [{"index": "zero", "delta": {"content": [{"type": "text", "text": "a"}, {"type": "image"}], "tool_calls": [{"function": {"arguments": {"k": 1}}}]}}],
        }))
        .unwrap();
        assert!(c.id.is_none() && c.model.is_none() && c.usage.is_none());
        let choice = c.choices.unwrap().pop().unwrap();
        assert!(choice.index.is_none());
        let delta = choice.delta.unwrap();
        assert_eq!(delta.content.unwrap().text(), "a");
        let call = delta.tool_calls.unwrap().pop().unwrap();
        assert_eq!(call.function.unwrap().arguments_text(), r#"{"k":1}"#);
    }
}
