//! `session.plan.*`: the session's plan, kept where the Copilot CLI keeps it, `plan.md` in the
//! session's directory. The file is `turnstile_home::plan`'s (replaced whole and atomically,
//! so a reader never sees half a plan); this maps it to the session and its errors to RPC.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;
use turnstile_home::plan::{self, PLAN_FILE};

fn plan_path(ctx: &Ctx<'_>, id: &str) -> Result<(Arc<OpenSession>, PathBuf), RpcError> {
    let session = open_session(ctx, id)?;
    let path = ctx
        .server
        .config()
        .state_root
        .session(session.id())
        .dir
        .join(PLAN_FILE);
    Ok((session, path))
}

/// Records `session.plan_changed {operation}` in the session's timeline, as the Copilot CLI
/// does for a plan a client writes or removes (after the messages sent before it).
async fn record_change(session: &OpenSession, operation: &str) -> Result<(), RpcError> {
    let data = serde_json::value::to_raw_value(&json!({ "operation": operation }))
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    session
        .handle()
        .record("session.plan_changed", data)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok(())
}

fn failed(path: &Path, e: std::io::Error) -> RpcError {
    RpcError::new(
        codes::SESSION_FAILED,
        format!("plan file {}: {e}", path.display()),
    )
}

/// `session.plan.read`: `{exists, content, path}` (`content` null when there is none).
pub(crate) fn read(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let (_, path) = plan_path(ctx, params.id())?;
    let content = plan::read(&path).map_err(|e| failed(&path, e))?;
    Ok(json!({
        "exists": content.is_some(),
        "content": content,
        "path": path.to_string_lossy(),
    }))
}

/// `session.plan.update` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateParams {
    session_id: String,
    content: String,
}

/// `session.plan.update`: replaces the plan, recorded as `session.plan_changed` (`create`
/// when there was none, else `update`); answers `null`.
pub(crate) async fn update(ctx: &Ctx<'_>, params: UpdateParams) -> Result<Value, RpcError> {
    let (session, path) = plan_path(ctx, &params.session_id)?;
    let existed = path.is_file();
    plan::write(&path, &params.content).map_err(|e| failed(&path, e))?;
    record_change(&session, if existed { "update" } else { "create" }).await?;
    Ok(Value::Null)
}

/// `session.plan.delete`: removes the plan (none is fine), recorded as `session.plan_changed
/// {operation: "delete"}` when there was one; answers `null`.
pub(crate) async fn delete(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let (session, path) = plan_path(ctx, params.id())?;
    let existed = path.is_file();
    plan::delete(&path).map_err(|e| failed(&path, e))?;
    if existed {
        record_change(&session, "delete").await?;
    }
    Ok(Value::Null)
}
