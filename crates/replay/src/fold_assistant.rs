//! Reading an `assistant.message` payload for the fold: only what the model sees next (the
//! text, the tool requests' ids, names and arguments) and the message id are kept.
//!
//! The journal's payload type allocates every field (model, ids, reasoning texts, request
//! ids); the lean mirror here has the same fields under the same names and checks each one as
//! strictly as the payload type does, without keeping it (the checks of `fold_tool.rs`). It may
//! be stricter, never looser: when it refuses a payload, the payload type reads it again, so a
//! warning carries the payload type's own words and the state is what the payload type gives.

use serde::Deserialize;
use serde_json::Value;
use turnstile_journal::payload::{AssistantMessage, ToolRequestCaller};

use crate::conversation::ToolCallRequest;
use crate::fold_tool_lean::{StrCheck, ValueCheck};

/// What the fold keeps of an `assistant.message`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssistantRead {
    /// `messageId`.
    pub(crate) message_id: String,
    /// The answer's text.
    pub(crate) content: String,
    /// The tool calls, in order.
    pub(crate) tool_requests: Vec<ToolCallRequest>,
}

/// Reads the `data` of an `assistant.message`: exactly what deserializing [`AssistantMessage`]
/// gives (same result, same error), most of the time without its allocations.
pub(crate) fn read_assistant(data: &str) -> serde_json::Result<AssistantRead> {
    match serde_json::from_str::<LeanMessage>(data) {
        Ok(lean) => Ok(kept(
            lean.message_id,
            lean.content,
            lean.tool_requests
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r.tool_call_id, r.name, r.arguments)),
        )),
        Err(_) => read_assistant_full(data),
    }
}

/// The same through the journal's payload type alone (the reference the lean way is held to).
pub(crate) fn read_assistant_full(data: &str) -> serde_json::Result<AssistantRead> {
    serde_json::from_str::<AssistantMessage>(data).map(|p| {
        kept(
            p.message_id,
            p.content,
            p.tool_requests
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r.tool_call_id, r.name, r.arguments)),
        )
    })
}

/// What the fold keeps, from the id, the text and each request's id, name and arguments.
fn kept(
    message_id: String,
    content: String,
    requests: impl Iterator<Item = (String, String, Option<Value>)>,
) -> AssistantRead {
    AssistantRead {
        message_id,
        content,
        tool_requests: requests
            .map(|(tool_call_id, name, arguments)| ToolCallRequest {
                tool_call_id,
                name,
                arguments,
            })
            .collect(),
    }
}

/// [`AssistantMessage`], field for field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct LeanMessage {
    message_id: String,
    #[serde(default)]
    originating_message_id: Option<StrCheck>,
    #[serde(default)]
    model: Option<StrCheck>,
    content: String,
    #[serde(default)]
    tool_requests: Option<Vec<LeanRequest>>,
    #[serde(default)]
    reasoning_opaque: Option<StrCheck>,
    #[serde(default)]
    reasoning_text: Option<StrCheck>,
    #[serde(default)]
    reasoning_wire_field: Option<StrCheck>,
    #[serde(default)]
    encrypted_content: Option<StrCheck>,
    #[serde(default)]
    phase: Option<StrCheck>,
    #[serde(default)]
    chunk_index: Option<u32>,
    #[serde(default)]
    chunk_count: Option<u32>,
    #[serde(default)]
    interaction_id: Option<StrCheck>,
    #[serde(default)]
    turn_id: Option<StrCheck>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    request_id: Option<StrCheck>,
    #[serde(default)]
    client_request_id: Option<StrCheck>,
    #[serde(default)]
    service_request_id: Option<StrCheck>,
    #[serde(default)]
    rte: Option<bool>,
    #[serde(default)]
    api_call_id: Option<StrCheck>,
    #[serde(default)]
    server_tools: Option<ValueCheck>,
    #[serde(default)]
    reasoning_blocks: Option<ValueCheck>,
    #[serde(default)]
    parent_tool_call_id: Option<StrCheck>,
    #[serde(default)]
    citations: Option<ValueCheck>,
    #[serde(default)]
    fusion: Option<ValueCheck>,
}

/// `ToolRequest`, field for field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct LeanRequest {
    tool_call_id: String,
    name: String,
    // A present `null` is kept, as the payload type keeps it.
    #[serde(default, deserialize_with = "present")]
    arguments: Option<Value>,
    #[serde(rename = "type", default)]
    kind: Option<StrCheck>,
    // `null` or a string, as the payload type's `nullable` reads it.
    #[serde(default)]
    intention_summary: Option<StrCheck>,
    #[serde(default)]
    tool_title: Option<StrCheck>,
    #[serde(default)]
    mcp_server_name: Option<StrCheck>,
    #[serde(default)]
    mcp_tool_name: Option<StrCheck>,
    #[serde(default)]
    caller: Option<ToolRequestCaller>,
}

/// A field present in the JSON, whatever its value (`null` included), as the payload type's.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn both(data: &str) -> (Result<AssistantRead, String>, Result<AssistantRead, String>) {
        (
            read_assistant(data).map_err(|e| e.to_string()),
            read_assistant_full(data).map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn lean_reads_what_the_payload_type_reads() {
        let cases = [
            r#"{"messageId":"m","content":"c"}"#,
            r#"{"messageId":"m","content":"c \u2028 \ud83d\ude80","toolRequests":[]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":null}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n"}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","arguments":null}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","arguments":{"type":"x","n":[1,2.5,-3e4,{"$serde_json::private::RawValue":"1"}]}}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","arguments":{"n":1e400}}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","intentionSummary":null,"type":"function","toolTitle":"t"}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","intentionSummary":1}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","caller":{"type":"program","callerId":"p"}}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","caller":{"type":"program"}}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a","name":"n","name":"o"}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":[{"toolCallId":"a"}]}"#,
            r#"{"messageId":"m","content":"c","toolRequests":{}}"#,
            r#"{"messageId":"m","content":"c","model":null,"phase":"p","chunkIndex":3,"chunkCount":4,"outputTokens":5,"rte":true}"#,
            r#"{"messageId":"m","content":"c","chunkIndex":4294967296}"#,
            r#"{"messageId":"m","content":"c","chunkIndex":-1}"#,
            r#"{"messageId":"m","content":"c","outputTokens":1.5}"#,
            r#"{"messageId":"m","content":"c","rte":"yes"}"#,
            r#"{"messageId":"m","content":"c","model":5}"#,
            r#"{"messageId":"m","content":"c","reasoningText":"\ud800"}"#,
            r#"{"messageId":"m","content":"c","encryptedContent":"x","encryptedContent":"y"}"#,
            r#"{"messageId":"m","content":"c","serverTools":{"a":[1e999]}}"#,
            r#"{"messageId":"m","content":"c","citations":[{"k":"\udc00"}],"fusion":null}"#,
            r#"{"messageId":"m","content":"c","fusion":{"$serde_json::private::RawValue":"[1"}}"#,
            r#"{"messageId":"m","content":"c","unknown":"\ud800","other":[1e999]}"#,
            r#"{"messageId":"m","content":"c","messageId":"n"}"#,
            r#"{"message\u0049d":"m","content":"c"}"#,
            r#"{"messageId":"m"}"#,
            r#"{"content":"c"}"#,
            r#"{"messageId":1,"content":"c"}"#,
            r#"[1]"#,
        ];
        for data in cases {
            let (lean, full) = both(data);
            assert_eq!(lean, full, "{data}");
        }
        let deep = format!(
            r#"{{"messageId":"m","content":"c","toolRequests":[{{"toolCallId":"a","name":"n","arguments":{}1{}}}],"fusion":{}1{}}}"#,
            "[".repeat(60),
            "]".repeat(60),
            "[".repeat(70),
            "]".repeat(70)
        );
        let (lean, full) = both(&deep);
        assert_eq!(lean, full);
    }

    /// The lean way is taken for the messages the runtime writes: no second read of them.
    #[test]
    fn ordinary_messages_stay_on_the_lean_path() {
        let data = r#"{"messageId":"9af7","model":"gpt-4.1","content":"a \u2028","toolRequests":[{"toolCallId":"call_1","name":"glob","arguments":{"pattern":"**/*.rs"},"type":"function"}],"interactionId":"d06c","turnId":"0","outputTokens":20,"requestId":"r"}"#;
        assert!(serde_json::from_str::<LeanMessage>(data).is_ok());
        assert_eq!(both(data).0, both(data).1);
    }

    fn field() -> impl Strategy<Value = String> {
        let keys = prop::sample::select(vec![
            "messageId",
            "content",
            "model",
            "toolRequests",
            "chunkIndex",
            "outputTokens",
            "rte",
            "serverTools",
            "phase",
            "x",
        ]);
        let values = prop::sample::select(vec![
            "\"s\"",
            "null",
            "1",
            "-1",
            "4294967296",
            "1.5",
            "true",
            "[]",
            "{}",
            "[{\"toolCallId\":\"a\",\"name\":\"n\",\"arguments\":{\"k\":[null]}}]",
            "[{\"toolCallId\":\"a\",\"name\":\"n\",\"intentionSummary\":null}]",
            "[{\"toolCallId\":\"a\"}]",
            "\"\\ud800\"",
            "{\"a\":1e999}",
        ]);
        (keys, values).prop_map(|(k, v)| format!("\"{k}\":{v}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Any mix of the fields, of any JSON type, repeated or not: the lean way reads what
        /// the payload type reads, error words included.
        #[test]
        fn lean_agrees_with_the_payload_type(fields in prop::collection::vec(field(), 0..8)) {
            let data = format!("{{{}}}", fields.join(","));
            let (lean, full) = both(&data);
            prop_assert_eq!(lean, full, "{}", data);
        }
    }
}
