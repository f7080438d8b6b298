//! The Responses API wire format as serde types: the request body, the response object, its
//! output items and the stream's events.
//!
//! Response types are lenient as in Chat Completions: a field of an unexpected type reads as
//! absent rather than failing the answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::http::request::{FunctionTool, MessageContent, call_arguments};
use super::super::http::wire::{WireUsage, lenient};
use super::super::{ChatMessage, ToolSchema};

/// The body of `POST /responses`.
#[derive(Debug, Serialize)]
pub(crate) struct RequestBody<'a> {
    pub model: &'a str,
    pub input: Vec<InputItem<'a>>,
    /// `"none"` when the tools must not be called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<&'static str>,
    /// Left out when empty: some servers reject an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<RequestTool<'a>>,
    pub stream: bool,
    /// The conversation is sent whole each time: nothing is kept at the server.
    pub store: bool,
    /// Asks for the reasoning items' `encrypted_content`, which is what lets them be sent back
    /// with `store: false`.
    pub include: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
}

/// One item of `input`: a message, an earlier function call, its output, or an earlier
/// reasoning item sent back verbatim.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum InputItem<'a> {
    Message(InputMessage<'a>),
    Typed(TypedItem<'a>),
    Verbatim(&'a Value),
}

/// A message with a `role` (`system`, `user` or `assistant`).
#[derive(Debug, Serialize)]
pub(crate) struct InputMessage<'a> {
    pub role: &'static str,
    pub content: InputContent<'a>,
}

/// A message's content: a string, or input parts.
type InputContent<'a> = MessageContent<'a, InputPart<'a>>;

/// One part of a user message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputPart<'a> {
    InputText { text: &'a str },
    InputImage { image_url: &'a str },
}

/// An item tagged by `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum TypedItem<'a> {
    /// An earlier call; sent without the item `id`, which would tie it to a stored response.
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

/// A tool on offer: flat, not nested under `function` as in Chat Completions.
#[derive(Debug, Serialize)]
pub(crate) struct RequestTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(flatten)]
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

/// The input items of one message, with `reasoning_before(call_id)`: the reasoning items the
/// model produced before that call, to send back in front of it.
pub(crate) fn input_items<'a>(
    message: &'a ChatMessage,
    reasoning_before: impl Fn(&str) -> Option<&'a [Value]>,
) -> Vec<InputItem<'a>> {
    let message_item = |role, content| InputItem::Message(InputMessage { role, content });
    match message {
        ChatMessage::System { content } => {
            vec![message_item("system", InputContent::Text(content))]
        }
        ChatMessage::User { content, parts } => vec![message_item(
            "user",
            InputContent::user(
                content,
                parts,
                |text| InputPart::InputText { text },
                |image_url| InputPart::InputImage { image_url },
            ),
        )],
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut items = Vec::new();
            if let Some(reasoning) = tool_calls.first().and_then(|c| reasoning_before(&c.id)) {
                items.extend(reasoning.iter().map(InputItem::Verbatim));
            }
            if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                items.push(message_item("assistant", InputContent::Text(text)));
            }
            items.extend(tool_calls.iter().map(|c| {
                InputItem::Typed(TypedItem::FunctionCall {
                    call_id: &c.id,
                    name: &c.name,
                    arguments: call_arguments(c),
                })
            }));
            if items.is_empty() {
                items.push(message_item("assistant", InputContent::Text("")));
            }
            items
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => vec![InputItem::Typed(TypedItem::FunctionCallOutput {
            call_id: tool_call_id,
            output: content,
        })],
    }
}

/// A response object (whole, or inside `response.created`/`completed`/... events).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Response {
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub model: Option<String>,
    /// `completed`, `incomplete`, `failed`, `in_progress`, ...
    #[serde(default, deserialize_with = "lenient")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub output: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "lenient")]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub incomplete_details: Option<IncompleteDetails>,
}

/// Why a response is `incomplete`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default, deserialize_with = "lenient")]
    pub reason: Option<String>,
}

/// One output item: a message, a function call or a reasoning item (others are skipped).
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct OutputItem {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub call_id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub arguments: Option<String>,
    /// A message's parts; `output_text` parts carry its text.
    #[serde(default, deserialize_with = "lenient")]
    pub content: Option<Vec<OutputPart>>,
}

impl OutputItem {
    /// A message's text: its `output_text` parts joined.
    pub(crate) fn text(&self) -> String {
        self.content
            .iter()
            .flatten()
            .filter(|p| p.kind.as_deref() == Some("output_text"))
            .filter_map(|p| p.text.as_deref())
            .collect()
    }
}

/// One part of an output message.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct OutputPart {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub text: Option<String>,
}

/// One event of a stream (its `type` says which fields it has).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamEvent {
    #[serde(rename = "type", default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub output_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub delta: Option<String>,
    /// The item of `response.output_item.added`/`done`, kept raw (a reasoning item goes back
    /// verbatim).
    #[serde(default)]
    pub item: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub response: Option<Response>,
    /// The message of an `error` event.
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub code: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ContentPart, ToolCall};
    use serde_json::json;

    #[test]
    fn messages_become_input_items() {
        let reasoning =
            [json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"})];
        let assistant = ChatMessage::Assistant {
            content: Some("Looking.".into()),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "glob".into(),
                arguments: String::new(),
            }],
        };
        let items = input_items(&assistant, |id| (id == "call_1").then_some(&reasoning[..]));
        assert_eq!(
            serde_json::to_value(&items).unwrap(),
            json!([
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
                {"role": "assistant", "content": "Looking."},
                {"type": "function_call", "call_id": "call_1", "name": "glob", "arguments": "{}"},
            ])
        );
        let user = ChatMessage::User {
            content: "see".into(),
            parts: vec![ContentPart::ImageUrl("data:image/png;base64,AA==".into())],
        };
        assert_eq!(
            serde_json::to_value(input_items(&user, |_| None)).unwrap(),
            json!([{"role": "user", "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA=="},
            ]}])
        );
        let tool = ChatMessage::Tool {
            tool_call_id: "call_1".into(),
            content: "a.txt".into(),
        };
        assert_eq!(
            serde_json::to_value(input_items(&tool, |_| None)).unwrap(),
            json!([{"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}])
        );
    }

    #[test]
    fn output_items_read_leniently() {
        let item: OutputItem = serde_json::from_value(json!({
            "type": "message", "id": "msg_1", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi", "annotations": []},
                        {"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": 5}],
        }))
        .unwrap();
        assert_eq!(item.text(), "Hi");
        let event: StreamEvent = serde_json::from_value(
            json!({"type": "response.output_text.delta", "output_index": "x", "delta": "a"}),
        )
        .unwrap();
        assert_eq!(
            (event.output_index, event.delta.as_deref()),
            (None, Some("a"))
        );
    }
}
