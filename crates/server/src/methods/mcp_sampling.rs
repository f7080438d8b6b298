//! `session.mcp.executeSampling` / `cancelSamplingExecution`: an MCP server's
//! `sampling/createMessage` run as one call to the session's model provider, as the Copilot
//! CLI 1.0.81-0 runs it: the request's `systemPrompt` (or an empty one) then its messages'
//! text, no tools, one answer; `{action: "success", result: CreateMessageResult}`,
//! `{action: "failure", error}` (a request not ending with a user message, a failed call), or
//! `{action: "cancelled"}` when `cancelSamplingExecution` named it first.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_providers::{ChatMessage, ChatRequest};

use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// The most text a sampling request may carry (its messages and system prompt).
pub const MAX_SAMPLING_TEXT_BYTES: usize = 1024 * 1024;

/// `session.mcp.executeSampling` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ExecuteParams {
    session_id: String,
    request_id: String,
    #[serde(rename = "serverName")]
    _server_name: String,
    #[serde(rename = "mcpRequestId")]
    _mcp_request_id: Value,
    request: SamplingRequest,
}

/// The MCP `CreateMessageRequest` params turnstile reads (the others: `maxTokens`,
/// `temperature`, `stopSequences`, `modelPreferences`, are not sent, as the CLI sends none).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SamplingRequest {
    messages: Vec<SamplingMessage>,
    system_prompt: Option<String>,
}

/// One message of a sampling request.
#[derive(Debug, Deserialize)]
pub(crate) struct SamplingMessage {
    role: String,
    content: SamplingContent,
}

/// A message's content: one block or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum SamplingContent {
    /// Several blocks, their texts joined.
    Blocks(Vec<Value>),
    /// One block.
    Block(Value),
}

impl SamplingContent {
    /// The text blocks' texts joined with nothing between them (other blocks carry none).
    fn text(&self) -> String {
        let text_of = |b: &Value| {
            b.get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match self {
            SamplingContent::Blocks(blocks) => blocks.iter().map(text_of).collect(),
            SamplingContent::Block(block) => text_of(block),
        }
    }
}

/// `session.mcp.cancelSamplingExecution` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CancelParams {
    session_id: String,
    request_id: String,
}

/// The conversation the model is asked, or why the request cannot be run (the CLI's words).
fn conversation(request: &SamplingRequest) -> Result<Vec<ChatMessage>, String> {
    if request.messages.last().map(|m| m.role.as_str()) != Some("user") {
        return Err("Sampling request must end with a user message".into());
    }
    let mut size = request.system_prompt.as_ref().map_or(0, String::len);
    let mut messages = vec![ChatMessage::System {
        content: request.system_prompt.clone().unwrap_or_default(),
    }];
    for m in &request.messages {
        let content = m.content.text();
        size += content.len();
        if size > MAX_SAMPLING_TEXT_BYTES {
            return Err(format!(
                "Sampling request carries over {MAX_SAMPLING_TEXT_BYTES} bytes of text"
            ));
        }
        messages.push(match m.role.as_str() {
            "assistant" => ChatMessage::Assistant {
                content: Some(content),
                tool_calls: Vec::new(),
            },
            _ => ChatMessage::User {
                content,
                parts: Vec::new(),
            },
        });
    }
    Ok(messages)
}

/// `session.mcp.executeSampling`: one model call through the session's provider.
pub(crate) async fn execute(ctx: &Ctx<'_>, params: ExecuteParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let messages = match conversation(&params.request) {
        Ok(messages) => messages,
        Err(why) => return Ok(json!({"action": "failure", "error": why})),
    };
    let Some(provider) = session.mcp().provider() else {
        return Ok(json!({"action": "failure", "error": "the session has no model provider"}));
    };
    let cancel = session
        .mcp()
        .start_sampling(&params.request_id)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: requestId: {e}")))?;
    let request = ChatRequest {
        model: session.info().model,
        messages,
        // As the CLI sends it: a server's sampling counts as the user's request.
        headers: vec![("x-initiator".into(), "user".into())],
        ..ChatRequest::default()
    };
    let (events, _ignored) = tokio::sync::mpsc::unbounded_channel();
    let answer = provider.complete(&request, events, cancel.clone()).await;
    session.mcp().end_sampling(&params.request_id);
    if cancel.is_cancelled() {
        return Ok(json!({"action": "cancelled"}));
    }
    Ok(match answer {
        Ok(response) => json!({
            "action": "success",
            "result": {
                "model": response.model,
                "stopReason": stop_reason(response.finish_reason.as_deref()),
                "role": "assistant",
                "content": {"type": "text", "text": response.content},
            },
        }),
        Err(e) => json!({"action": "failure", "error": e.to_string()}),
    })
}

/// MCP's `stopReason` for the model's finish reason.
fn stop_reason(finish: Option<&str>) -> &'static str {
    match finish {
        Some("length") => "maxTokens",
        _ => "endTurn",
    }
}

/// `session.mcp.cancelSamplingExecution`: `{cancelled}`, whether one ran under that id.
pub(crate) fn cancel(ctx: &Ctx<'_>, params: CancelParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    Ok(json!({ "cancelled": session.mcp().cancel_sampling(&params.request_id) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: Value) -> SamplingRequest {
        serde_json::from_value(value).expect("a sampling request")
    }

    #[test]
    fn the_conversation_is_the_system_prompt_then_the_texts() {
        let r = request(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "a"}},
                {"role": "assistant", "content": {"type": "text", "text": "b"}},
                {"role": "user", "content": [{"type": "text", "text": "c"}, {"type": "image", "data": "x"}, {"type": "text", "text": "d"}]},
            ],
            "maxTokens": 5,
        }));
        let messages = conversation(&r).expect("ends with a user message");
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[0],
            ChatMessage::System {
                content: String::new()
            }
        );
        assert_eq!(
            messages[3],
            ChatMessage::User {
                content: "cd".into(),
                parts: Vec::new()
            }
        );
    }

    #[test]
    fn a_request_not_ending_with_a_user_message_fails_in_the_runtime_words() {
        for messages in [
            json!([]),
            json!([{"role": "assistant", "content": {"type": "text", "text": "x"}}]),
        ] {
            let r = request(json!({ "messages": messages, "systemPrompt": "s" }));
            assert_eq!(
                conversation(&r).err().as_deref(),
                Some("Sampling request must end with a user message")
            );
        }
    }

    #[test]
    fn an_oversized_request_fails() {
        let big = "x".repeat(MAX_SAMPLING_TEXT_BYTES + 1);
        let r = request(
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": big}}]}),
        );
        assert!(conversation(&r).is_err());
    }
}
