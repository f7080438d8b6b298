//! The server-level `sessions.*` methods about sessions as held and kept: `save`, `close`,
//! `releaseLock`, `checkInUse`, `getSizes`, `findByPrefix`, `findByTaskId`,
//! `getLastForContext`, answered as the Copilot CLI 1.0.81-0 answers them (`{}` where it
//! answers `{}`). A session's journal is its state, written before each event is sent, so
//! `save` has nothing to add; its lock is the writer's, released when the session closes.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use turnstile_journal::writer_lock::WriterLock;
use turnstile_journal::{Uuid, parse_session_id};

use super::listing::summaries;
use super::{Ctx, session_id};
use crate::rpc::{RpcError, codes};

/// `{sessionId}` of the `sessions.*` methods.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IdParams {
    session_id: String,
}

/// `sessions.save`: `{}`; the journal is written before each event is sent, so a session is
/// saved as it goes. An id that is not a UUID is `-32602`.
pub(crate) fn save(params: IdParams) -> Result<Value, RpcError> {
    session_id(&params.session_id)?;
    Ok(json!({}))
}

/// `sessions.close`: closes the session if it is open in this server, for every connection
/// (`session.shutdown` recorded, the lock released); `{}`.
pub(crate) async fn close(ctx: &Ctx<'_>, params: IdParams) -> Result<Value, RpcError> {
    let id = session_id(&params.session_id)?;
    if let Some(session) = ctx.server.session(id) {
        let why = "the client closed it (sessions.close)";
        ctx.server.remember_closed(id, why);
        ctx.server.close_session(&session, why).await;
    }
    Ok(json!({}))
}

/// `sessions.releaseLock`: `{}` once this server holds no lock of the session. The lock is
/// the journal writer's: a session open here is refused (`sessions.close` releases it), since
/// dropping a writer's lock while it writes would let a second writer in.
pub(crate) fn release_lock(ctx: &Ctx<'_>, params: IdParams) -> Result<Value, RpcError> {
    let id = session_id(&params.session_id)?;
    if ctx.server.session(id).is_some() {
        return Err(RpcError::new(
            codes::SESSION_IN_USE,
            format!(
                "session {id} is open in this server: close it with sessions.close, which releases its lock"
            ),
        ));
    }
    Ok(json!({}))
}

/// `sessions.checkInUse` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InUseParams {
    session_ids: Vec<String>,
}

/// The most ids one `checkInUse` looks at (each costs a lock attempt).
const MAX_IN_USE_IDS: usize = 1024;

/// `sessions.checkInUse`: `{inUse}`, the ids whose journal another process's writer holds
/// (as the Copilot CLI, a session open in this server is not listed: it is this runtime's).
pub(crate) fn check_in_use(ctx: &Ctx<'_>, params: InUseParams) -> Result<Value, RpcError> {
    if params.session_ids.len() > MAX_IN_USE_IDS {
        return Err(RpcError::invalid_params(format!(
            "sessionIds: at most {MAX_IN_USE_IDS} at a time"
        )));
    }
    let root = &ctx.server.config().state_root;
    let mut in_use = Vec::new();
    for text in &params.session_ids {
        let Ok(id) = parse_session_id(text) else {
            continue;
        };
        if ctx.server.session(id).is_some() {
            continue;
        }
        let paths = root.session(id);
        if !paths.events.is_file() {
            continue;
        }
        // Taken and let go at once: only a live holder refuses it.
        if WriterLock::acquire(&paths.lock).is_err() {
            in_use.push(text.clone());
        }
    }
    Ok(json!({"inUse": in_use}))
}

/// `sessions.getSizes`: `{sizes}`, each listed session's journal size in bytes.
pub(crate) async fn get_sizes(ctx: &Ctx<'_>) -> Result<Value, RpcError> {
    let mut sizes = Map::new();
    for summary in summaries(ctx).await? {
        if let Some(id) = summary.id {
            sizes.insert(id.to_string(), json!(summary.size));
        }
    }
    Ok(json!({"sizes": sizes}))
}

/// `sessions.findByPrefix` params.
#[derive(Debug, Deserialize)]
pub(crate) struct PrefixParams {
    prefix: String,
}

/// `sessions.findByPrefix`: `{sessionId}` of the one listed session whose id begins with the
/// prefix; `{}` when none or several do.
pub(crate) async fn find_by_prefix(ctx: &Ctx<'_>, params: PrefixParams) -> Result<Value, RpcError> {
    let prefix = params.prefix.trim().to_ascii_lowercase();
    if prefix.is_empty() {
        return Ok(json!({}));
    }
    let found: Vec<Uuid> = summaries(ctx)
        .await?
        .into_iter()
        .filter_map(|s| s.id)
        .filter(|id| id.to_string().starts_with(&prefix))
        .collect();
    Ok(match found.as_slice() {
        [one] => json!({"sessionId": one.to_string()}),
        _ => json!({}),
    })
}

/// `sessions.findByTaskId`: `{}`; turnstile runs no background tasks, so no session has one.
pub(crate) fn find_by_task_id() -> Value {
    json!({})
}

/// `sessions.getLastForContext` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ContextParams {
    context: ContextFilter,
}

/// The context a session must have been in.
#[derive(Debug, Deserialize)]
pub(crate) struct ContextFilter {
    cwd: Option<String>,
}

/// `sessions.getLastForContext`: `{sessionId}` of the most recently modified session in that
/// working directory; `{}` when there is none.
pub(crate) async fn last_for_context(
    ctx: &Ctx<'_>,
    params: ContextParams,
) -> Result<Value, RpcError> {
    let newest = summaries(ctx)
        .await?
        .into_iter()
        .filter(|s| params.context.cwd.is_none() || s.cwd == params.context.cwd)
        .find_map(|s| s.id);
    Ok(match newest {
        Some(id) => json!({"sessionId": id.to_string()}),
        None => json!({}),
    })
}
