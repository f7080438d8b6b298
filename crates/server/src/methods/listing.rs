//! The session listings: `session.list`, `session.getLastId`, `session.getMetadata`, read
//! from the session index (or the store's, when the server runs on one).

use serde::Deserialize;
use serde_json::{Value, json};

use turnstile_journal::SessionSummary;

use super::Ctx;
use super::session_id_params::SessionIdParams;
use crate::rpc::{RpcError, codes};
use crate::sessions::summarize;

/// `session.list` params.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListParams {
    filter: Option<ListFilter>,
}

/// `filter` of `session.list` (the schema's `SessionListFilter`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListFilter {
    cwd: Option<String>,
    git_root: Option<String>,
    repository: Option<String>,
    branch: Option<String>,
}

/// `session.list`: every session on disk, most recently modified first.
pub(crate) async fn list(ctx: &Ctx<'_>, params: ListParams) -> Result<Value, RpcError> {
    let filter = params.filter.unwrap_or_default();
    let sessions: Vec<Value> = summaries(ctx)
        .await?
        .iter()
        .filter(|s| filter.cwd.is_none() || s.cwd == filter.cwd)
        // turnstile records no git context: a filter on it matches nothing.
        .filter(|_| {
            filter.git_root.is_none() && filter.repository.is_none() && filter.branch.is_none()
        })
        .filter_map(metadata_value)
        .collect();
    Ok(json!({"sessions": sessions}))
}

/// `session.getLastId`: the most recently modified session.
pub(crate) async fn last_id(ctx: &Ctx<'_>) -> Result<Value, RpcError> {
    let newest = summaries(ctx).await?.into_iter().find_map(|s| s.id);
    Ok(match newest {
        Some(id) => json!({"sessionId": id.to_string()}),
        None => json!({}),
    })
}

/// `session.getMetadata`.
pub(crate) async fn metadata(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    // Not a UUID: no such session, and no path is ever built from it.
    let Ok(id) = turnstile_journal::parse_session_id(params.id()) else {
        return Ok(json!({}));
    };
    if let Some(store) = &ctx.server.config().remote_store {
        // One key of the store's index, not the whole index.
        let stored = store.summary(id).await.map_err(|e| {
            RpcError::new(
                codes::SESSION_FAILED,
                format!("cannot read session {id} from {}: {e}", store.describe()),
            )
        })?;
        // As in the listing: a session without events is not offered.
        let stored = stored.filter(|s| s.events > 0 && s.id == Some(id));
        return Ok(match stored.as_ref().and_then(metadata_value) {
            Some(session) => json!({"session": session}),
            None => json!({}),
        });
    }
    let paths = ctx.server.config().state_root.session(id);
    if !paths.events.is_file() {
        return Ok(json!({}));
    }
    let summary = SessionSummary::read(&paths)
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok(match metadata_value(&summary) {
        Some(session) => json!({"session": session}),
        None => json!({}),
    })
}

/// Summaries of every readable session, newest first (an unreadable one is skipped, logged).
pub(crate) async fn summaries(ctx: &Ctx<'_>) -> Result<Vec<SessionSummary>, RpcError> {
    if let Some(store) = &ctx.server.config().remote_store {
        let mut all = store.list().await.map_err(|e| {
            RpcError::new(
                codes::SESSION_FAILED,
                format!("cannot list the sessions of {}: {e}", store.describe()),
            )
        })?;
        all.retain(|s| s.events > 0);
        return Ok(all);
    }
    let root = &ctx.server.config().state_root;
    if !root.dir().exists() {
        return Ok(Vec::new());
    }
    // The session index spares reading every journal; a journal it cannot summarize (damage)
    // fails the whole indexed listing, so then each is read on its own and the bad one skipped.
    match SessionSummary::list_indexed(root) {
        Ok((mut all, _)) => {
            all.retain(|s| s.events > 0);
            return Ok(all);
        }
        Err(e) => {
            tracing::warn!(error = %e, "the session index listing failed; reading each journal")
        }
    }
    let ids = root
        .session_ids()
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    let mut all: Vec<SessionSummary> = ids
        .into_iter()
        .filter_map(|id| match SessionSummary::read(&root.session(id)) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "session skipped in the listing");
                None
            }
        })
        .filter(|s| s.events > 0)
        .collect();
    all.sort_by(|a, b| b.updated.cmp(&a.updated));
    Ok(all)
}

/// A summary as the schema's `LocalSessionMetadataValue`.
fn metadata_value(s: &SessionSummary) -> Option<Value> {
    let id = s.id?;
    let start = s.created.clone().unwrap_or_default();
    let mut value = json!({
        "sessionId": id.to_string(),
        "startTime": start,
        "modifiedTime": s.updated.clone().unwrap_or(start),
        "isRemote": false,
    });
    if let Some(prompt) = &s.first_prompt {
        value["summary"] = json!(summarize(prompt));
    }
    if let Some(cwd) = &s.cwd {
        value["context"] = json!({"cwd": cwd});
    }
    Some(value)
}
