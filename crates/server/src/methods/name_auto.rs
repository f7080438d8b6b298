//! `session.name.setAuto`: a name the client made up (from a summary of the conversation),
//! taken only while no user has named the session, as the Copilot CLI takes it. Whether a user
//! named it is `workspace.yaml`'s `user_named`, where the runtime keeps it, so a name given
//! before a resume still wins.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_home::workspace;

use super::session::{MAX_NAME_CHARS, apply_name};
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.name.setAuto` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetAutoParams {
    session_id: String,
    summary: String,
}

/// `session.name.setAuto`: `{applied}`; when applied, the name (trimmed, cut at 100
/// characters) is announced as `session.title_changed` and kept with `user_named: false`.
pub(crate) async fn set_auto(ctx: &Ctx<'_>, params: SetAutoParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let dir = ctx.server.config().state_root.session(session.id()).dir;
    let user_named = workspace::read_entries(&dir)
        .ok()
        .flatten()
        .unwrap_or_default()
        .iter()
        .any(|(key, value)| key == "user_named" && value == "true");
    let name: String = params.summary.trim().chars().take(MAX_NAME_CHARS).collect();
    let name = name.trim_end();
    if user_named || name.is_empty() {
        return Ok(json!({"applied": false}));
    }
    apply_name(ctx, &session, name, false).await?;
    Ok(json!({"applied": true}))
}
