//! `session.plan.*`: the session's plan, kept where the Copilot CLI keeps it, `plan.md` in the
//! session's directory. Written whole and atomically (a temporary file, fsync, rename), so a
//! reader never sees half a plan.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// The plan's file name in the session directory (the Copilot CLI's).
pub(crate) const PLAN_FILE: &str = "plan.md";

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
    let content = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(failed(&path, e)),
    };
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
    let tmp = path.with_extension("md.tmp");
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(params.content.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(&path, e)
    })?;
    Ok(Value::Null)
}

/// `session.plan.delete`: removes the plan (none is fine); answers `null`.
pub(crate) fn delete(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let path = plan_path(ctx, params.id())?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(Value::Null),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Null),
        Err(e) => Err(failed(&path, e)),
    }
}
