//! What the request bodies of the two OpenAI formats (Chat Completions and the Responses API)
//! share: a message's content as a string or parts, the arguments of an earlier call as sent
//! back, and a function tool on offer. Each format keeps its own tags around these.

use serde::Serialize;
use serde_json::Value;

use crate::{ContentPart, ToolCall, ToolSchema};

/// A message's `content`: a plain string, or parts (`P`: the format's part type).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum MessageContent<'a, P> {
    Text(&'a str),
    Parts(Vec<P>),
}

impl<'a, P> MessageContent<'a, P> {
    /// A user message's content: its text as a string when it has no parts, else the text
    /// first and then each part, as the Copilot CLI sends them; `text` and `image` make the
    /// format's text and image parts.
    pub(crate) fn user(
        content: &'a str,
        parts: &'a [ContentPart],
        text: impl Fn(&'a str) -> P,
        image: impl Fn(&'a str) -> P,
    ) -> Self {
        if parts.is_empty() {
            return MessageContent::Text(content);
        }
        MessageContent::Parts(
            std::iter::once(text(content))
                .chain(parts.iter().filter_map(|p| match p {
                    ContentPart::Text(t) => Some(text(t)),
                    ContentPart::ImageUrl(url) => Some(image(url)),
                    // These formats get the document's name only, the part before it.
                    ContentPart::Document { .. } => None,
                }))
                .collect(),
        )
    }
}

/// The arguments of an earlier call as sent back: servers reject empty text, and an empty
/// call means no arguments.
pub(crate) fn call_arguments(call: &ToolCall) -> &str {
    if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    }
}

/// A function tool on offer (under `function` in Chat Completions, flat in the Responses API).
#[derive(Debug, Serialize)]
pub(crate) struct FunctionTool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a Value,
}

impl<'a> From<&'a ToolSchema> for FunctionTool<'a> {
    fn from(tool: &'a ToolSchema) -> Self {
        FunctionTool {
            name: &tool.name,
            description: &tool.description,
            parameters: &tool.parameters,
        }
    }
}
