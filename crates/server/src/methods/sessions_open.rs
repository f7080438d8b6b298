//! `sessions.open`: of its kinds, `resumeLast` when nothing is there to resume. turnstile's
//! sessions open through `session.create` and `session.resume` (which start the session's
//! event stream on the calling connection); `sessions.open` answers what it can without
//! opening one: that no session matches.

use serde::Deserialize;
use serde_json::{Value, json};

use super::Ctx;
use super::listing::summaries;
use crate::rpc::RpcError;

/// `sessions.open` params: the kind, and for `resumeLast` the context that chooses.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenParams {
    kind: String,
    context: Option<OpenContext>,
}

/// The `cwd` of a `resumeLast`'s `context` (turnstile records no git context to match on).
#[derive(Debug, Deserialize)]
pub(crate) struct OpenContext {
    cwd: Option<String>,
}

/// `sessions.open` `{kind: "resumeLast", context?}`: `{status: "not_found"}` when no session
/// with events (in `context.cwd`, when given) is on disk or in the store; when one is, the
/// answer names it and asks for `session.resume`. Other kinds are refused, naming the
/// methods that do them.
pub(crate) async fn open(ctx: &Ctx<'_>, params: OpenParams) -> Result<Value, RpcError> {
    if params.kind != "resumeLast" {
        return Err(RpcError::invalid_params(format!(
            "kind {:?}: turnstile opens sessions with session.create and session.resume; sessions.open serves resumeLast only",
            params.kind
        )));
    }
    let cwd = params.context.and_then(|c| c.cwd);
    let last = summaries(ctx)
        .await?
        .into_iter()
        .filter(|s| cwd.is_none() || s.cwd == cwd)
        .find_map(|s| s.id);
    match last {
        None => Ok(json!({"status": "not_found"})),
        Some(id) => Err(RpcError::internal(format!(
            "Request sessions.open failed with message: the last session is {id}; open it with session.resume"
        ))),
    }
}
