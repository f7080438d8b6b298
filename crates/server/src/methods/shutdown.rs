//! `session.shutdown`: the client ends the session, as the Copilot CLI ends it: the session
//! is closed for every connection (`session.shutdown` recorded and sent, the journal made
//! durable, the lock released), and can be resumed later.

use serde::Deserialize;
use serde_json::Value;

use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.shutdown` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ShutdownParams {
    session_id: String,
    /// `routine` (the default); the journal's `session.shutdown` says `routine`, so an
    /// `error` shutdown, which the runtime records as such, is refused rather than misrecorded.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Why, in the client's words (kept in the server's close reason).
    reason: Option<String>,
}

/// `session.shutdown`: answers `null` once the session is closed.
pub(crate) async fn shutdown(ctx: &Ctx<'_>, params: ShutdownParams) -> Result<Value, RpcError> {
    match params.kind.as_deref() {
        None | Some("routine") => {}
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "type {other:?} is not supported: only a routine shutdown is (use session.log for an error)"
            )));
        }
    }
    let session = open_session(ctx, &params.session_id)?;
    let why = match params.reason.as_deref().map(str::trim) {
        Some(reason) if !reason.is_empty() => format!("the client shut it down ({reason})"),
        _ => "the client shut it down".to_owned(),
    };
    ctx.server.remember_closed(session.id(), &why);
    ctx.server.close_session(&session, &why).await;
    Ok(Value::Null)
}
