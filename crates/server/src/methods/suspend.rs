//! `session.suspend`: the session's work in flight is stopped and the session left idle and
//! open, as the Copilot CLI's: a running message (and every one queued behind it) is aborted,
//! a permission request it waited on completes as cancelled and a client tool call it waited
//! on is dropped, so neither runs; the call answers `null` once the session is idle, with
//! what the message recorded made durable in the journal. An idle session answers at once.
//! A client that disconnects next resumes it from the journal like any other.
//!
//! The abort is the journal's ordinary one (see decisions.md, "session.suspend is an abort"):
//! what a resume, a replay and an audit read is what `session.abort` leaves.

use std::time::Duration;

use serde_json::Value;

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// How long `session.suspend` waits for an aborted message to stop.
pub(crate) const SUSPEND_WAIT: Duration = Duration::from_secs(60);

/// How often it looks.
const POLL: Duration = Duration::from_millis(10);

/// `session.suspend`: `null` once the session is idle.
pub(crate) async fn suspend(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let handle = session.handle();
    if !handle.is_busy() {
        return Ok(Value::Null);
    }
    handle.abort();
    session.bridge().interrupt_hooks();
    let stopped = tokio::time::timeout(SUSPEND_WAIT, async {
        while handle.is_busy() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
    match stopped {
        Ok(()) => Ok(Value::Null),
        Err(_) => Err(RpcError::new(
            codes::SESSION_FAILED,
            format!(
                "the session's running message did not stop within {} s of being aborted",
                SUSPEND_WAIT.as_secs()
            ),
        )),
    }
}
