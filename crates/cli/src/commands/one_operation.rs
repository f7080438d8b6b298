//! One operation on a stored session (`turnstile compact`, `turnstile rewind`): the session is
//! opened through the loop, the operation runs after what the journal holds, and the session
//! is closed again (its `session.resume` and `session.shutdown` recorded) whatever it answered.

use std::path::Path;

use anyhow::{Context, Result};
use turnstile_journal::{StateRoot, Uuid};
use turnstile_loop::SessionHandle;

use super::session_start::{LoopArgs, resumed_parts, working_dir};

/// The session id `session` names (id, unique id prefix or session directory).
pub(super) fn session_id(session: &str, state_dir: Option<&Path>) -> Result<Uuid> {
    crate::target::resolve(session, state_dir)?
        .id
        .with_context(|| format!("{session} is not a session of the state directory"))
}

/// Opens session `id` with the loop flags `opts`, runs `op` on it and closes it.
pub(super) fn with_session<T>(
    id: Uuid,
    opts: &LoopArgs,
    state_dir: Option<&Path>,
    op: impl AsyncFnOnce(&SessionHandle) -> Result<T>,
) -> Result<T> {
    let root = StateRoot::resolve(state_dir)?;
    let cwd = working_dir(opts)?;
    // The operation runs no tools: the MCP servers the flags name are not started for it.
    let (parts, _mcp, reconnect) = resumed_parts(opts, &cwd, &root, id)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let (session, _) = SessionHandle::resume(&root, id, parts)
            .with_context(|| format!("cannot open session {id}"))?;
        let result = match reconnect.record(&session).await {
            Ok(()) => op(&session).await,
            Err(e) => Err(e),
        };
        session
            .shutdown()
            .await
            .context("could not close the session cleanly")?;
        result
    })
}
