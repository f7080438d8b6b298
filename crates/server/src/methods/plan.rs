//! `session.plan.*`: the session's plan, kept where the Copilot CLI keeps it, `plan.md` in the
//! session's directory. The file is `turnstile_home::plan`'s (replaced whole and atomically,
//! so a reader never sees half a plan); this maps it to the session and its errors to RPC.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};
use turnstile_home::plan::{self, PLAN_FILE};

fn plan_path(ctx: &Ctx<'_>, id: &str) -> Result<PathBuf, RpcError> {
    let session = open_session(ctx, id)?;
    Ok(ctx
        .server
        .config()
        .state_root
        .session(session.id())
        .dir
        .join(PLAN_FILE))
}

fn failed(path: &Path, e: std::io::Error) -> RpcError {
    RpcError::new(
        codes::SESSION_FAILED,
        format!("plan file {}: {e}", path.display()),
    )
}

/// `session.plan.read`: `{exists, content, path}` (`content` null when there is none).
pub(crate) fn read(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let path = plan_path(ctx, params.id())?;
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

/// `session.plan.update`: replaces the plan; answers `null`.
pub(crate) fn update(ctx: &Ctx<'_>, params: UpdateParams) -> Result<Value, RpcError> {
    let path = plan_path(ctx, &params.session_id)?;
    plan::write(&path, &params.content).map_err(|e| failed(&path, e))?;
    Ok(Value::Null)
}

/// `session.plan.delete`: removes the plan (none is fine); answers `null`.
pub(crate) fn delete(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let path = plan_path(ctx, params.id())?;
    plan::delete(&path).map_err(|e| failed(&path, e))?;
    Ok(Value::Null)
}
