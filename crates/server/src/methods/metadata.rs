//! `session.metadata.snapshot`, `isProcessing` and `recordContextChange`: what a client reads
//! of an open session at a glance, and the git context it reports for it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::workspaces::workspace_fields;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.metadata.snapshot`: the session's identity, times, directories, mode and model,
/// in the runtime's `SessionMetadataSnapshot` shape. A turnstile session is local and never
/// shared with another writer (a resume takes it over), so `isRemote` and `alreadyInUse` are
/// false; it has no session limits.
pub(crate) fn snapshot(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let info = session.info();
    let dir = ctx.server.config().state_root.session(session.id()).dir;
    let mut snapshot = json!({
        "sessionId": session.id().to_string(),
        "startTime": info.start_time,
        "modifiedTime": info.modified_time,
        "isRemote": false,
        "alreadyInUse": false,
        "workspacePath": dir.to_string_lossy(),
        "workingDirectory": info.cwd.to_string_lossy(),
        "currentMode": info.mode.as_str(),
        "selectedModel": info.model,
        "sessionLimits": null,
        "workspace": workspace_fields(&dir, session.id())?,
    });
    if let Some(summary) = &info.summary {
        snapshot["summary"] = json!(summary);
    }
    Ok(snapshot)
}

/// `session.metadata.isProcessing`: `{processing}`, true while a message runs.
pub(crate) fn is_processing(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(json!({"processing": session.handle().is_busy()}))
}

/// `session.metadata.recordContextChange` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecordContextParams {
    session_id: String,
    context: WorkingDirectoryContext,
}

/// The schema's `SessionWorkingDirectoryContext`, recorded as `session.context_changed`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WorkingDirectoryContext {
    cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    git_root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repository: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repository_host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    head_commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_commit: Option<String>,
}

/// `session.metadata.recordContextChange`: records the context as `session.context_changed`
/// after the messages sent before it, and answers `{}`. As in the runtime, the session's own
/// working directory is authoritative: a context whose `cwd` is another directory records
/// nothing (and still answers `{}`).
pub(crate) async fn record_context_change(
    ctx: &Ctx<'_>,
    params: RecordContextParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let reported = std::path::Path::new(&params.context.cwd);
    let reported = reported
        .canonicalize()
        .unwrap_or_else(|_| reported.to_path_buf());
    if reported != session.info().cwd {
        return Ok(json!({}));
    }
    let data = serde_json::value::to_raw_value(&params.context)
        .map_err(|e| RpcError::internal(e.to_string()))?;
    session
        .handle()
        .record("session.context_changed", data)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok(json!({}))
}
