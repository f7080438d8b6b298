//! `session.history.truncate`, `listRewindPoints`, `previewRewind` and `rewind`: the
//! conversation cut back to an event, as the runtime's, with the journal kept whole (a
//! `session.snapshot_rewind` marker is appended; see `turnstile_replay::rewind`).
//!
//! turnstile captures no file changes, so every session answers as the runtime answers for
//! one created without `enableFileChangeTracking`: conversation-only rewind points, no file
//! preview, and `file-change-tracking-disabled` for a files rewind.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadError, ReadMode};
use turnstile_loop::LoopError;
use turnstile_replay::{CutKind, rewind_points, visible_events};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// Params naming a session and an event (`HistoryTruncateRequest`, `HistoryPreviewRewindRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EventParams {
    session_id: String,
    event_id: String,
}

/// `session.history.listRewindPoints` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PointsParams {
    session_id: String,
}

/// The schema's `HistoryRewindMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Mode {
    /// Conversation events only.
    Conversation,
    /// Conversation and the files the discarded turns changed.
    ConversationAndFiles,
}

/// `session.history.rewind` params (`HistoryRewindRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RewindParams {
    session_id: String,
    event_id: String,
    mode: Mode,
}

/// A cut the session refused, worded as the runtime answers it (`-32603`).
fn cut_error(method: &str, e: LoopError) -> RpcError {
    match e {
        LoopError::Rewind(e) => RpcError::new(
            codes::INTERNAL_ERROR,
            format!("Request session.history.{method} failed with message: {e}"),
        ),
        other => RpcError::new(codes::SESSION_FAILED, other.to_string()),
    }
}

/// Removes the event and every later one from the conversation; answers
/// `HistoryTruncateResult`.
pub(crate) async fn truncate(ctx: &Ctx<'_>, params: EventParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let marker = session
        .handle()
        .cut(params.event_id, CutKind::Truncate)
        .await
        .map_err(|e| cut_error("truncate", e))?;
    Ok(json!({"eventsRemoved": marker.events_removed, "checkpointCleanupFailed": false}))
}

/// The root user turns of the current conversation (`HistoryListRewindPointsResult`).
pub(crate) fn list_points(ctx: &Ctx<'_>, params: PointsParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let path = ctx.server.config().state_root.session(session.id()).events;
    let mut events = Vec::new();
    let failed = |e: ReadError| RpcError::new(codes::SESSION_FAILED, e.to_string());
    for record in JournalReader::open(&path, ReadMode::Lenient).map_err(failed)? {
        match record {
            Ok(record) => events.push(record.event),
            Err(ReadError::TornTail { .. }) => break,
            Err(e) => return Err(failed(e)),
        }
    }
    let points: Vec<Value> = rewind_points(&visible_events(events))
        .into_iter()
        .map(|p| {
            json!({
                "eventId": p.event_id.to_string(),
                "userMessage": p.user_message,
                "timestamp": p.timestamp,
                "isAutopilotContinuation": p.is_autopilot_continuation,
                "canRestoreFiles": false,
                "fileCount": 0,
                "turnChangedFiles": false,
                "linesAdded": 0,
                "linesRemoved": 0,
            })
        })
        .collect();
    Ok(json!({"fileChangeTrackingEnabled": false, "points": points}))
}

/// No file changes are captured, so no files rewind would restore
/// (`HistoryPreviewRewindResult`).
pub(crate) fn preview(ctx: &Ctx<'_>, params: EventParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Ok(json!({
        "available": false,
        "reason": "file-change-tracking-disabled",
        "fileCount": 0,
        "files": [],
    }))
}

/// Rewinds the conversation to before a user turn (`HistoryRewindResult`).
pub(crate) async fn rewind(ctx: &Ctx<'_>, params: RewindParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let unavailable =
        |outcome: &str| json!({"outcome": outcome, "restoredFiles": [], "skippedFiles": []});
    if params.mode == Mode::ConversationAndFiles {
        return Ok(unavailable("file-change-tracking-disabled"));
    }
    if session.handle().is_busy() {
        return Ok(unavailable("session-busy"));
    }
    let marker = session
        .handle()
        .cut(params.event_id, CutKind::UserTurn)
        .await
        .map_err(|e| cut_error("rewind", e))?;
    Ok(json!({
        "outcome": "success",
        "eventsRemoved": marker.events_removed,
        "restoredFiles": [],
        "skippedFiles": [],
    }))
}
