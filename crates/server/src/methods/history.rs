//! `session.history.compact`: the history compacted on demand, as the runtime's `/compact`.

use serde::Deserialize;
use serde_json::{Value, json};

use turnstile_loop::CompactOptions;

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// Longest focus text the schema allows.
const MAX_INSTRUCTIONS: usize = 4000;

/// `session.history.compact` params (the schema's `HistoryCompactRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CompactParams {
    session_id: String,
    custom_instructions: Option<String>,
    trigger: Option<String>,
    token_limit: Option<u64>,
}

/// Compacts the history after the messages sent before it; answers the schema's
/// `HistoryCompactResult`. A compaction that could not be made is `success: false` (and a
/// `session.warning` in the journal), not an error: the session goes on as it was.
pub(crate) async fn compact(ctx: &Ctx<'_>, params: CompactParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    if let Some(text) = &params.custom_instructions
        && text.chars().count() > MAX_INSTRUCTIONS
    {
        return Err(RpcError::invalid_params(format!(
            "customInstructions has {} characters; at most {MAX_INSTRUCTIONS} are allowed",
            text.chars().count()
        )));
    }
    let trigger = match params.trigger.as_deref() {
        None | Some("manual") => "manual",
        Some("model_switch") => "model_switch",
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "trigger {other:?} is not one of manual, model_switch"
            )));
        }
    };
    if params.token_limit == Some(0) {
        return Err(RpcError::invalid_params("tokenLimit must be at least 1"));
    }
    let options = CompactOptions {
        custom_instructions: params.custom_instructions.filter(|t| !t.trim().is_empty()),
        trigger: trigger.to_owned(),
        token_limit: params.token_limit,
    };
    let report = session
        .handle()
        .compact(options)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    let window = &report.context_window;
    let mut context = json!({
        "tokenLimit": window.token_limit,
        "currentTokens": window.current_tokens,
        "messagesLength": window.messages_length,
    });
    for (key, value) in [
        ("systemTokens", window.system_tokens),
        ("conversationTokens", window.conversation_tokens),
        ("toolDefinitionsTokens", window.tool_definitions_tokens),
    ] {
        if let Some(v) = value {
            context[key] = v.into();
        }
    }
    let mut result = json!({
        "success": report.success,
        "tokensRemoved": report.tokens_removed,
        "messagesRemoved": report.messages_removed,
        "contextWindow": context,
    });
    if let Some(summary) = report.summary {
        result["summaryContent"] = summary.into();
    }
    Ok(result)
}
