//! `session.metadata.setWorkingDirectory`: moves a session to another directory. The path is
//! checked as the Copilot CLI checks it (absolute, an existing directory, with its wording);
//! the session records the move and works there from its next message on
//! (`turnstile_loop`'s `session/working_directory.rs`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// `session.metadata.setWorkingDirectory` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetWorkingDirectoryParams {
    session_id: String,
    working_directory: String,
}

/// `session.metadata.setWorkingDirectory`: `{workingDirectory}`, the directory as given.
pub(crate) async fn set_working_directory(
    ctx: &Ctx<'_>,
    params: SetWorkingDirectoryParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let dir = checked(&params.working_directory)?;
    move_to(&session, dir).await?;
    Ok(json!({"workingDirectory": params.working_directory}))
}

/// The directory a session may move to: `asked` resolved, when it is absolute and an
/// existing directory; else the Copilot CLI's error.
pub(crate) fn checked(asked: &str) -> Result<PathBuf, RpcError> {
    if !Path::new(asked).is_absolute() {
        return Err(RpcError::internal(format!(
            "Directory path must be absolute: {asked}"
        )));
    }
    // The session works in the resolved directory, as a created one does (`working_dir`).
    match Path::new(asked).canonicalize() {
        Ok(dir) if dir.is_dir() => Ok(dir),
        _ => Err(RpcError::internal(format!(
            "Directory does not exist or cannot be accessed: {asked}"
        ))),
    }
}

/// Moves `session` to `dir` (from [`checked`]).
pub(crate) async fn move_to(session: &OpenSession, dir: PathBuf) -> Result<(), RpcError> {
    session
        .handle()
        .set_working_directory(dir.clone())
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    // The path policy's primary directory follows: what was allowed as "the working
    // directory" is the new one's.
    session.info().permissions.set_primary(dir.clone());
    session.set_cwd(dir);
    Ok(())
}
