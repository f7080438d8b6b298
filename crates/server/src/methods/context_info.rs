//! `session.metadata.contextInfo` and `recomputeContextTokens`: the request the session's next
//! turn would send, measured now (`turnstile_loop::SessionMetrics::window`), against the
//! limits the client names.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// `session.metadata.contextInfo` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContextInfoParams {
    session_id: String,
    prompt_token_limit: u64,
    output_token_limit: u64,
    selected_model: Option<String>,
}

/// `session.metadata.contextInfo`: `{contextInfo}`, the next request's tokens by part and the
/// thresholds the session applies to `promptTokenLimit` (0: the session's own window):
/// `compactionThreshold` where it compacts, `limit` the prompt plus the output limit,
/// `bufferTokens` the output reserve plus what lies past the buffer's edge.
pub(crate) async fn context_info(
    ctx: &Ctx<'_>,
    params: ContextInfoParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let model = params
        .selected_model
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| session.info().model);
    let metrics = metrics(&session, model.clone()).await?;
    let window = &metrics.window;
    let prompt_limit = match params.prompt_token_limit {
        0 => window.token_limit,
        n => n,
    };
    // Rounded, not cut: 95% of 128,000 is 121,599.99… in binary floating point.
    let share = |fraction: f64| (prompt_limit as f64 * fraction).round() as u64;
    let system = window.system_tokens.unwrap_or(0);
    let conversation = window.conversation_tokens.unwrap_or(0);
    let tools = window.tool_definitions_tokens.unwrap_or(0);
    Ok(json!({"contextInfo": {
        "modelName": model,
        "systemTokens": system,
        "conversationTokens": conversation,
        "toolDefinitionsTokens": tools,
        "mcpToolsTokens": metrics.mcp_tool_tokens,
        "totalTokens": system + conversation + tools,
        "promptTokenLimit": prompt_limit,
        "compactionThreshold": share(metrics.compaction_threshold),
        "limit": prompt_limit + params.output_token_limit,
        "bufferTokens": params.output_token_limit + prompt_limit - share(metrics.buffer_threshold),
    }}))
}

/// `session.metadata.recomputeContextTokens` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecomputeParams {
    session_id: String,
    model_id: String,
}

/// `session.metadata.recomputeContextTokens`: the next request's messages counted with
/// `modelId`'s tokenizer, `{totalTokens, messagesTokenCount, systemTokenCount}` (the tool
/// definitions are not messages and are left out, as in the runtime).
pub(crate) async fn recompute(ctx: &Ctx<'_>, params: RecomputeParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let metrics = metrics(&session, params.model_id).await?;
    let system = metrics.window.system_tokens.unwrap_or(0);
    let messages = metrics.window.conversation_tokens.unwrap_or(0);
    Ok(json!({
        "totalTokens": system + messages,
        "messagesTokenCount": messages,
        "systemTokenCount": system,
    }))
}

async fn metrics(
    session: &OpenSession,
    model: String,
) -> Result<turnstile_loop::SessionMetrics, RpcError> {
    session
        .handle()
        .metrics(Some(model))
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))
}
