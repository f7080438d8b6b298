//! `session.permissions.getMode`/`setMode`: the newer clients' spelling of approve-all
//! (`allow-all`) and its absence (`manual`), served beside `setApproveAll` and sharing its
//! setting, so a client of either generation sees what the other set. `assisted` (an LLM
//! judging each request) is refused: this engine has no such judge. A change is recorded as
//! `session.permissions_changed {previousMode, mode}`, the schema's event for it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// The mode the session is in: the client's approve-all setting, else the server's
/// `--allow-all-tools`.
fn mode_of(ctx: &Ctx<'_>, session: &OpenSession) -> &'static str {
    let all = session
        .info()
        .permissions
        .live
        .approve_all()
        .unwrap_or(ctx.server.config().permissions.allow_all);
    if all { "allow-all" } else { "manual" }
}

/// `session.permissions.getMode`: `{mode}`, `manual` or `allow-all`.
pub(crate) fn get_mode(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(json!({"mode": mode_of(ctx, &session)}))
}

/// `session.permissions.setMode` params (`assistedApprovalModel` and `source` are accepted
/// and have no use here).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetModeParams {
    session_id: String,
    mode: String,
}

/// `session.permissions.setMode`: `{success, mode}` with the mode after the change.
pub(crate) fn set_mode(ctx: &Ctx<'_>, params: SetModeParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let all = match params.mode.as_str() {
        "allow-all" => true,
        "manual" => false,
        "assisted" => {
            return Err(RpcError::invalid_params(
                "mode \"assisted\" is not supported: turnstile has no LLM judge of permission requests (use manual or allow-all)",
            ));
        }
        other => {
            return Err(RpcError::invalid_params(format!(
                "mode {other:?} is not one of manual, assisted, allow-all"
            )));
        }
    };
    let previous = mode_of(ctx, &session);
    session.info().permissions.live.set_approve_all(all);
    let mode = mode_of(ctx, &session);
    if previous != mode {
        let data =
            serde_json::value::to_raw_value(&json!({"previousMode": previous, "mode": mode}))
                .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
        // Recorded after the messages sent before it, but not waited for: a client may switch
        // while a request of the running message waits for its answer.
        tokio::spawn(async move {
            if let Err(e) = session
                .handle()
                .record("session.permissions_changed", data)
                .await
            {
                tracing::warn!(session = %session.id(), error = %e, "the permission mode change was not recorded");
            }
        });
    }
    Ok(json!({"success": true, "mode": mode}))
}
