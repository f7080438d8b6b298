//! `session.history.cancelBackgroundCompaction`, `abortManualCompaction` and
//! `summarizeForHandoff`: the controls the Copilot CLI offers over its compactions.
//!
//! This engine compacts before a request and on `session.history.compact`, never in the
//! background, and a manual compaction runs to its end once started: there is never a
//! background compaction to cancel or a manual one to abort, so both answer that nothing was
//! stopped (`{cancelled: false}`, `{aborted: false}`), as the runtime answers when it has no
//! such work in flight. Nothing changes, so nothing is recorded.
//!
//! A handoff summary is the runtime's summary of the conversation so far for another agent to
//! take over. A session with no user turn has nothing to hand off and answers `{summary: ""}`
//! as the runtime does (also after a `session.log` or a workspace file, which are not the
//! conversation); for a session with a conversation this engine writes no such summary (its
//! summaries are compactions', recorded as `session.compaction_complete`) and says so.

use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadError, ReadMode};
use turnstile_replay::{rewind_points, visible_events};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.history.cancelBackgroundCompaction`: `{cancelled: false}`.
pub(crate) fn cancel_background(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({ "cancelled": false }))
}

/// `session.history.abortManualCompaction`: `{aborted: false}`.
pub(crate) fn abort_manual(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({ "aborted": false }))
}

/// `session.history.summarizeForHandoff`: `{summary: ""}` for a session without a user turn
/// in its current conversation; refused for one with a conversation.
pub(crate) fn summarize_for_handoff(
    ctx: &Ctx<'_>,
    params: SessionIdParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let path = ctx.server.config().state_root.session(session.id()).events;
    let failed = |e: ReadError| RpcError::new(codes::SESSION_FAILED, e.to_string());
    let mut events = Vec::new();
    if path.is_file() {
        for record in JournalReader::open(&path, ReadMode::Lenient).map_err(failed)? {
            match record {
                Ok(record) => events.push(record.event),
                Err(ReadError::TornTail { .. }) => break,
                Err(e) => return Err(failed(e)),
            }
        }
    }
    if rewind_points(&visible_events(events)).is_empty() {
        return Ok(json!({ "summary": "" }));
    }
    Err(RpcError::new(
        codes::SESSION_FAILED,
        "turnstile writes no handoff summary of a conversation; compact it with session.history.compact and read the summary from session.compaction_complete",
    ))
}
