//! Ephemeral progress of a streamed model answer: the message opening, the bytes received so
//! far and the pieces of each tool call's arguments (the text pieces are
//! [`super::AssistantMessageDelta`]).

use serde::{Deserialize, Serialize};

use super::payload;

/// `assistant.message_start` (ephemeral): the first text of a message is about to stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessageStart {
    /// The `assistant.message` the deltas that follow belong to.
    pub message_id: String,
    /// Generation phase, for models that answer in phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}
payload!(AssistantMessageStart, "assistant.message_start");

/// `assistant.streaming_delta` (ephemeral): a piece of the answer arrived.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantStreamingDelta {
    /// Bytes of answer received so far (text, tool names and argument text), counted as the
    /// runtime counts them: over the whole session, not per call.
    pub total_response_size_bytes: u64,
}
payload!(AssistantStreamingDelta, "assistant.streaming_delta");

/// `assistant.tool_call_delta` (ephemeral): a streamed piece of a tool call's arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantToolCallDelta {
    /// The tool request of the coming `assistant.message` this piece belongs to.
    pub tool_call_id: String,
    /// The tool's name, when the stream has told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// `function` or `custom`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_type: Option<String>,
    /// Argument text to append, as the provider streamed it.
    pub input_delta: String,
}
payload!(AssistantToolCallDelta, "assistant.tool_call_delta");
