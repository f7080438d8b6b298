//! `session.history.truncate`, `listRewindPoints`, `previewRewind` and `rewind`: the
//! conversation cut back to an event, as the runtime's, with the journal kept whole (a
//! `session.snapshot_rewind` marker is appended; see `turnstile_replay::rewind`).
//!
//! A session created with `enableFileChangeTracking` keeps the files its tool calls change
//! (`turnstile_loop::rewind_files`): its points carry their file figures, a preview lists the
//! files a rewind would restore, and a `conversation-and-files` rewind restores them before
//! cutting the conversation, then drops the discarded turns' snapshots, in the runtime's
//! order. Any other session answers as the runtime answers one created without it:
//! conversation-only points, no file preview, `file-change-tracking-disabled` for a files
//! rewind.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadError, ReadMode};
use turnstile_loop::LoopError;
use turnstile_loop::rewind_files::{Restore, RestoreOutcome};
use turnstile_replay::{CutKind, RewindPoint, rewind_points, visible_events};

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

/// The root user turns of the session's current conversation, oldest first.
fn root_turns(ctx: &Ctx<'_>, id: turnstile_journal::Uuid) -> Result<Vec<RewindPoint>, RpcError> {
    let path = ctx.server.config().state_root.session(id).events;
    let mut events = Vec::new();
    let failed = |e: ReadError| RpcError::new(codes::SESSION_FAILED, e.to_string());
    for record in JournalReader::open(&path, ReadMode::Lenient).map_err(failed)? {
        match record {
            Ok(record) => events.push(record.event),
            Err(ReadError::TornTail { .. }) => break,
            Err(e) => return Err(failed(e)),
        }
    }
    Ok(rewind_points(&visible_events(events)))
}

fn ids(points: &[RewindPoint]) -> Vec<String> {
    points.iter().map(|p| p.event_id.to_string()).collect()
}

/// The event is not a root user turn of the conversation (the runtime's error).
fn not_a_turn(method: &str, event_id: &str) -> RpcError {
    RpcError::new(
        codes::INTERNAL_ERROR,
        format!(
            "Request session.history.{method} failed with message: Rewind event '{event_id}' is not a current root user turn"
        ),
    )
}

/// The root user turns of the current conversation (`HistoryListRewindPointsResult`).
pub(crate) fn list_points(ctx: &Ctx<'_>, params: PointsParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let handle = session.handle();
    let snapshots = handle.file_snapshots();
    // A tracking session's captures are not settled while it works: retry later.
    if snapshots.is_some() && handle.is_busy() {
        return Ok(json!({
            "fileChangeTrackingEnabled": true,
            "unavailableReason": "session-busy",
            "points": [],
        }));
    }
    let turns = root_turns(ctx, session.id())?;
    let files = snapshots.map(|s| s.points(&ids(&turns)));
    let points: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let f = files
                .as_ref()
                .and_then(|f| f.get(i).copied())
                .unwrap_or_default();
            json!({
                "eventId": p.event_id.to_string(),
                "userMessage": p.user_message,
                "timestamp": p.timestamp,
                "canRestoreFiles": f.can_restore_files,
                "fileCount": f.file_count,
                "turnChangedFiles": f.turn_changed_files,
                "linesAdded": f.lines_added,
                "linesRemoved": f.lines_removed,
                "isAutopilotContinuation": p.is_autopilot_continuation,
            })
        })
        .collect();
    Ok(json!({"fileChangeTrackingEnabled": snapshots.is_some(), "points": points}))
}

/// The files a files rewind to the event would restore (`HistoryPreviewRewindResult`).
pub(crate) fn preview(ctx: &Ctx<'_>, params: EventParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let unavailable =
        |reason: &str| json!({"available": false, "reason": reason, "fileCount": 0, "files": []});
    let handle = session.handle();
    let Some(snapshots) = handle.file_snapshots() else {
        return Ok(unavailable("file-change-tracking-disabled"));
    };
    let turns = ids(&root_turns(ctx, session.id())?);
    if !turns.contains(&params.event_id) {
        return Err(not_a_turn("previewRewind", &params.event_id));
    }
    if handle.is_busy() {
        return Ok(unavailable("session-busy"));
    }
    let files: Vec<Value> = snapshots
        .preview(&params.event_id, &turns)
        .into_iter()
        .map(|f| {
            json!({
                "path": f.path,
                "changeType": f.change_type,
                "linesAdded": f.lines_added,
                "linesRemoved": f.lines_removed,
            })
        })
        .collect();
    Ok(json!({"available": true, "fileCount": files.len(), "files": files}))
}

/// `restoredFiles` and `skippedFiles` of a restore.
fn restore_fields(restore: &Restore) -> (Value, Value) {
    let skipped: Vec<Value> = restore
        .skipped_files
        .iter()
        .map(|(path, reason)| json!({"path": path, "reason": reason.as_str()}))
        .collect();
    (json!(restore.restored_files), Value::Array(skipped))
}

/// Rewinds the conversation to before a user turn, and in `conversation-and-files` mode
/// restores the files the discarded turns changed first (`HistoryRewindResult`).
pub(crate) async fn rewind(ctx: &Ctx<'_>, params: RewindParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let unavailable =
        |outcome: &str| json!({"outcome": outcome, "restoredFiles": [], "skippedFiles": []});
    let handle = session.handle();
    let snapshots = match (params.mode, handle.file_snapshots()) {
        (Mode::Conversation, _) => None,
        (Mode::ConversationAndFiles, Some(s)) => Some(s),
        (Mode::ConversationAndFiles, None) => {
            return Ok(unavailable("file-change-tracking-disabled"));
        }
    };
    if handle.is_busy() {
        return Ok(unavailable("session-busy"));
    }
    let Some(snapshots) = snapshots else {
        let marker = handle
            .cut(params.event_id, CutKind::UserTurn)
            .await
            .map_err(|e| cut_error("rewind", e))?;
        return Ok(json!({
            "outcome": "success",
            "eventsRemoved": marker.events_removed,
            "restoredFiles": [],
            "skippedFiles": [],
        }));
    };
    let turns = ids(&root_turns(ctx, session.id())?);
    if !turns.contains(&params.event_id) {
        return Err(not_a_turn("rewind", &params.event_id));
    }
    // Files first, then the conversation, then the discarded turns' snapshots: the
    // runtime's order, so a failed restore leaves the conversation whole.
    // Files of up to 10 MiB each are read, hashed and written: off the server's tasks.
    let restore = {
        let (snapshots, target) = (Arc::clone(snapshots), params.event_id.clone());
        let turns = turns.clone();
        tokio::task::spawn_blocking(move || snapshots.restore(&target, &turns))
            .await
            .map_err(|e| RpcError::internal(format!("the files' restore stopped: {e}")))?
    };
    let (restored, skipped) = restore_fields(&restore);
    let failed = match restore.outcome {
        RestoreOutcome::Success => None,
        RestoreOutcome::FilesRolledBack => Some("files-rolled-back"),
        RestoreOutcome::RollbackIncomplete => Some("rollback-incomplete"),
    };
    if let Some(outcome) = failed {
        return Ok(json!({
            "outcome": outcome,
            "restoredFiles": restored,
            "skippedFiles": skipped,
            "error": restore.error,
        }));
    }
    let marker = match handle.cut(params.event_id, CutKind::UserTurn).await {
        Ok(marker) => marker,
        Err(e) => {
            return Ok(json!({
                "outcome": "truncation-failed",
                "restoredFiles": restored,
                "skippedFiles": skipped,
                "error": e.to_string(),
            }));
        }
    };
    let outcome = match snapshots.prune(&restore.prune_event_ids) {
        Ok(()) => json!({"outcome": "success"}),
        Err(e) => json!({"outcome": "snapshot-prune-failed", "error": e.to_string()}),
    };
    let mut answer = outcome;
    answer["eventsRemoved"] = json!(marker.events_removed);
    answer["restoredFiles"] = restored;
    answer["skippedFiles"] = skipped;
    Ok(answer)
}
