//! `llmInference.*`: a client that answers the sessions' model calls itself. `setProvider`
//! makes the calling connection the provider (one at a time, as in the Copilot CLI);
//! `httpResponseStart` and `httpResponseChunk` carry its answers to the calls the server sent
//! it (`client_inference`).

use serde_json::{Value, json};

use super::Ctx;
use crate::client_inference::{ResponseChunk, ResponseStart};
use crate::rpc::RpcError;

/// `llmInference.setProvider`.
pub(crate) fn set_provider(ctx: &Ctx<'_>) -> Result<Value, RpcError> {
    ctx.server
        .inference()
        .set_provider(ctx.peer)
        .map_err(RpcError::invalid_request)?;
    Ok(json!({"success": true}))
}

/// `llmInference.httpResponseStart`.
pub(crate) async fn response_start(
    ctx: &Ctx<'_>,
    params: ResponseStart,
) -> Result<Value, RpcError> {
    let accepted = ctx
        .server
        .inference()
        .response_start(ctx.peer, params)
        .await;
    Ok(json!({"accepted": accepted}))
}

/// `llmInference.httpResponseChunk`.
pub(crate) async fn response_chunk(
    ctx: &Ctx<'_>,
    params: ResponseChunk,
) -> Result<Value, RpcError> {
    let accepted = ctx
        .server
        .inference()
        .response_chunk(ctx.peer, params)
        .await
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    Ok(json!({"accepted": accepted}))
}
