//! `session.queue.*`: what waits in a session's queue, as the Copilot CLI lists it to SDK
//! clients: the messages sent while another ran and the slash commands queued
//! (`session.commands.enqueue`), oldest first, without the running message or the command
//! held for its host. The engine has no steering lane (an `immediate` send queues), so
//! `steeringMessages` is always empty. The loop's `send_queue.rs` keeps the list.

use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.queue.pendingItems`: `{items: [{id, kind, displayText, agentMode}],
/// steeringMessages: []}`; an item sent without a mode reports `interactive`, and a message
/// row carries no `messageId`, as in the Copilot CLI.
pub(crate) fn pending_items(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let items: Vec<Value> = session
        .handle()
        .queued_items()
        .into_iter()
        .map(|item| {
            json!({
                "id": item.id,
                "kind": item.kind.as_str(),
                "displayText": item.display_text,
                "agentMode": item.agent_mode.unwrap_or_default().as_str(),
            })
        })
        .collect();
    Ok(json!({"items": items, "steeringMessages": []}))
}

/// `session.queue.removeMostRecent`: `{removed}`, the newest waiting item dropped (a held
/// command is not waiting: it stays until its host answers).
pub(crate) fn remove_most_recent(
    ctx: &Ctx<'_>,
    params: SessionIdParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(json!({"removed": session.handle().remove_most_recent_queued()}))
}

/// `session.queue.clear`: `null`, every waiting item dropped.
pub(crate) fn clear(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    session.handle().clear_queue();
    Ok(Value::Null)
}
