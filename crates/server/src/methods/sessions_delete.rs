//! `sessions.bulkDelete` and `sessions.pruneOld`: sessions removed from disk as
//! `session.delete` removes one (closed first when open here, under the writer's lock, refused
//! when another process holds it, never through a remote store), answered with the bytes
//! freed as the Copilot CLI answers.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use turnstile_home::workspace;
use turnstile_journal::{Timestamp, parse_session_id};

use super::listing::summaries;
use super::{Ctx, lifecycle};
use crate::rpc::RpcError;

/// The most sessions one call deletes (each is a lock, a close and a directory removal).
const MAX_DELETE_IDS: usize = 1024;

/// The deepest folder counted in a session directory's size.
const MAX_SIZE_DEPTH: usize = 32;

/// Bytes of the regular files under `dir` (links not followed).
fn dir_size(dir: &Path, depth: usize) -> u64 {
    if depth > MAX_SIZE_DEPTH {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.is_dir() {
            total += dir_size(&entry.path(), depth + 1);
        } else if meta.is_file() {
            total += meta.len();
        }
    }
    total
}

/// Deletes one session as `session.delete` does; the bytes freed, `None` when it was not
/// deleted (no such session, held elsewhere, kept in a store).
async fn delete_one(ctx: &Ctx<'_>, text: &str) -> Option<u64> {
    let id = parse_session_id(text).ok()?;
    let dir = ctx.server.config().state_root.session(id).dir;
    let size = dir_size(&dir, 0);
    let params = serde_json::from_value(json!({"sessionId": id.to_string()})).ok()?;
    let answer = lifecycle::delete(ctx, params).await.ok()?;
    (answer["success"] == true).then_some(size)
}

/// `sessions.bulkDelete` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BulkParams {
    session_ids: Vec<String>,
}

/// `sessions.bulkDelete`: `{freedBytes: {id: bytes}}`, 0 for a session not deleted.
pub(crate) async fn bulk_delete(ctx: &Ctx<'_>, params: BulkParams) -> Result<Value, RpcError> {
    if params.session_ids.len() > MAX_DELETE_IDS {
        return Err(RpcError::invalid_params(format!(
            "sessionIds: at most {MAX_DELETE_IDS} at a time"
        )));
    }
    let mut freed = Map::new();
    for text in &params.session_ids {
        let bytes = delete_one(ctx, text).await.unwrap_or(0);
        freed.insert(text.clone(), json!(bytes));
    }
    Ok(json!({"freedBytes": freed}))
}

/// `sessions.pruneOld` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PruneParams {
    older_than_days: f64,
    dry_run: Option<bool>,
    include_named: Option<bool>,
    exclude_session_ids: Option<Vec<String>>,
}

/// `sessions.pruneOld`: the sessions last modified more than `olderThanDays` ago, not open in
/// this server, not excluded, and (unless `includeNamed`) not named by a user in their
/// `workspace.yaml`: `{deleted, candidates, skipped, freedBytes, dryRun}`; a dry run deletes
/// nothing and reports what it would free.
pub(crate) async fn prune_old(ctx: &Ctx<'_>, params: PruneParams) -> Result<Value, RpcError> {
    if !params.older_than_days.is_finite() || params.older_than_days < 0.0 {
        return Err(RpcError::invalid_params(
            "olderThanDays must be a number of days, 0 or more",
        ));
    }
    let dry_run = params.dry_run.unwrap_or(false);
    let excluded = params.exclude_session_ids.unwrap_or_default();
    let cutoff = Timestamp::now().millis() - (params.older_than_days * 86_400_000.0) as i64;
    let root = ctx.server.config().state_root.clone();
    let mut candidates = Vec::new();
    let mut skipped = Vec::new();
    for summary in summaries(ctx).await? {
        let Some(id) = summary.id else {
            continue;
        };
        let text = id.to_string();
        let modified = summary
            .updated
            .as_deref()
            .and_then(|t| Timestamp::parse(t).ok())
            .map_or(i64::MAX, |t| t.millis());
        if modified > cutoff || excluded.contains(&text) {
            continue;
        }
        let named = workspace::read_entries(&root.session(id).dir)
            .ok()
            .flatten()
            .unwrap_or_default()
            .iter()
            .any(|(key, value)| key == "user_named" && value == "true");
        if ctx.server.session(id).is_some() || (named && params.include_named != Some(true)) {
            skipped.push(text);
            continue;
        }
        candidates.push(text);
    }
    let mut deleted = Vec::new();
    let mut freed = 0;
    for text in &candidates {
        if dry_run {
            if let Ok(id) = parse_session_id(text) {
                freed += dir_size(&root.session(id).dir, 0);
            }
        } else if let Some(bytes) = delete_one(ctx, text).await {
            freed += bytes;
            deleted.push(text.clone());
        } else {
            skipped.push(text.clone());
        }
        if !dry_run && deleted.len() >= MAX_DELETE_IDS {
            break;
        }
    }
    Ok(json!({
        "deleted": deleted,
        "candidates": candidates,
        "skipped": skipped,
        "freedBytes": freed,
        "dryRun": dry_run,
    }))
}
