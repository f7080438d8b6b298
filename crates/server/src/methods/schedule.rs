//! `session.schedule.list` and `session.schedule.stop`: a session's scheduled prompts. In the
//! Copilot CLI they are made by the `/every` and `/after` commands (and rebuilt from the event
//! log on a resume); this engine has neither command, so no session of it ever holds a
//! schedule: the list is empty and a stop finds nothing, answered as the runtime answers a
//! session without schedules (`{entries: []}`, `{}` with no `entry`). The session is still
//! checked, so a call on one that is not open fails as every session method does.

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};

/// `session.schedule.list`: `{entries}`.
pub(crate) fn list(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, crate::rpc::RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({ "entries": [] }))
}

/// `session.schedule.stop` params: the id of the schedule to remove (the runtime's ids are
/// unsigned integers).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StopParams {
    session_id: String,
    #[allow(dead_code)] // Typed so a malformed id is refused as the runtime refuses it.
    id: u64,
}

/// `session.schedule.stop`: `{}`, the `entry` left out since no schedule has the id.
pub(crate) fn stop(ctx: &Ctx<'_>, params: StopParams) -> Result<Value, crate::rpc::RpcError> {
    open_session(ctx, &params.session_id)?;
    Ok(json!({}))
}
