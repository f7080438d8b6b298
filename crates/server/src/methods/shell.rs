//! `session.shell.executeUserRequested` and `session.shell.cancelUserRequested`: a command
//! the user runs in the session's shell, recorded and given to the model as the Copilot CLI
//! does (`turnstile_loop`'s `session/user_shell.rs`).

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.shell.executeUserRequested` params (the schema's
/// `ShellExecuteUserRequestedRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteParams {
    session_id: String,
    /// The client's cancellation handle; the schema requires it, a call without one can
    /// still be cancelled by its `toolCallId`.
    request_id: Option<String>,
    command: String,
}

/// `session.shell.cancelUserRequested` params (the schema's `ShellCancelUserRequestedRequest`;
/// a `toolCallId` names the command as well).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelParams {
    session_id: String,
    request_id: Option<String>,
    tool_call_id: Option<String>,
}

/// Runs the command after the messages sent before it; answers when it ends with
/// `{toolCallId, success, output, exitCode}`, and `error` when it failed.
pub(crate) async fn execute(ctx: &Ctx<'_>, params: ExecuteParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    if params.command.trim().is_empty() {
        return Err(RpcError::invalid_params("command must not be empty"));
    }
    let done = session
        .handle()
        .run_user_shell(params.request_id, params.command)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    let mut answer = json!({
        "toolCallId": done.tool_call_id,
        "success": done.success,
        "output": done.output,
        "exitCode": done.exit_code,
    });
    if let Some(error) = done.error {
        answer["error"] = Value::String(error);
    }
    Ok(answer)
}

/// Cancels the command a request id (or tool call id) names: `{cancelled: true}` when one was
/// running or waiting, `{cancelled: false}` otherwise.
pub(crate) fn cancel(ctx: &Ctx<'_>, params: CancelParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let Some(id) = params.request_id.or(params.tool_call_id) else {
        return Err(RpcError::invalid_params("missing field `requestId`"));
    };
    Ok(json!({"cancelled": session.handle().cancel_user_shell(&id)}))
}
