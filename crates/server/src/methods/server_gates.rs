//! Server methods whose honest answer for turnstile is a refusal in the runtime's own words
//! (served, so a client learns why rather than that the method is unknown):
//! `agentRegistry.spawn` (no agent registry is enabled), `sessions.connect` (there are no
//! remote sessions to connect to) and `session.extensions.sendAttachmentsToMessage` (no
//! connection is an extension's).

use serde::Deserialize;
use serde_json::{Value, json};

use super::Ctx;
use crate::rpc::{RpcError, codes};

/// `agentRegistry.spawn`: the runtime's `-32601 "agentRegistry.spawn is not enabled on this
/// server"`; turnstile has no agent registry to spawn into.
pub(crate) fn agent_registry_spawn() -> Result<Value, RpcError> {
    Err(RpcError::new(
        codes::METHOD_NOT_FOUND,
        "agentRegistry.spawn is not enabled on this server",
    ))
}

/// `sessions.connect` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectParams {
    session_id: String,
}

/// `sessions.connect`: turnstile's sessions are all local, so no remote session is found (the
/// runtime's words for an unknown one).
pub(crate) fn sessions_connect(params: ConnectParams) -> Result<Value, RpcError> {
    Err(RpcError::internal(format!(
        "Request sessions.connect failed with message: No remote session found for '{}'",
        params.session_id
    )))
}

/// `session.extensions.sendAttachmentsToMessage`: turnstile runs no extensions, so no
/// connection is extension-owned; refused as the runtime refuses another caller.
pub(crate) fn send_attachments(_ctx: &Ctx<'_>) -> Result<Value, RpcError> {
    let mut e = RpcError::internal(
        "session.extensions.sendAttachmentsToMessage may only be called from an extension-owned connection.",
    );
    e.data = Some(Box::new(
        json!({"code": "extension_context_requires_extension_caller"}),
    ));
    Err(e)
}
