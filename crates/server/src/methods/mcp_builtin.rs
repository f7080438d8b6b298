//! `session.mcp.removeGitHub|configureGitHub|registerExternalClient|unregisterExternalClient`:
//! what the Copilot CLI does inside its own process (its built-in GitHub server, MCP clients
//! handed in as objects). turnstile has neither, so each answers as the CLI answers over the
//! wire: nothing removed, an auth info it cannot use refused in its words, and the external
//! clients refused as host effects it does not support.

use serde::Deserialize;
use serde_json::{Value, json};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// `session.mcp.configureGitHub` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ConfigureParams {
    session_id: String,
    auth_info: Value,
}

/// `session.mcp.registerExternalClient` / `unregisterExternalClient` params (the in-process
/// objects are accepted and unused).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExternalParams {
    session_id: String,
    #[serde(rename = "serverName")]
    _server_name: String,
}

/// `session.mcp.removeGitHub`: no built-in GitHub server, so nothing removed.
pub(crate) fn remove_github(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({ "removed": false }))
}

/// `session.mcp.configureGitHub`: an auth info of a known shape (an object with a `type`)
/// changes nothing, there being no built-in GitHub server; any other is refused as the CLI
/// refuses it.
pub(crate) fn configure_github(ctx: &Ctx<'_>, params: ConfigureParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    match &params.auth_info {
        Value::Object(info) if info.get("type").is_some_and(Value::is_string) => {
            Ok(json!({ "changed": false }))
        }
        Value::Null => Err(failed(
            "configureGitHub",
            "Cannot read properties of null (reading 'type')",
        )),
        other => Err(failed(
            "configureGitHub",
            &format!("unexpected auth info type: {other}"),
        )),
    }
}

/// `session.mcp.registerExternalClient`: an in-process client cannot cross the wire.
pub(crate) fn register_external(ctx: &Ctx<'_>, params: ExternalParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Err(unsupported_effect("registerExternalClient", "register"))
}

/// `session.mcp.unregisterExternalClient`: the companion of the above.
pub(crate) fn unregister_external(
    ctx: &Ctx<'_>,
    params: ExternalParams,
) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Err(unsupported_effect("unregisterExternalClient", "unregister"))
}

fn unsupported_effect(method: &str, verb: &str) -> RpcError {
    failed(
        method,
        &format!("Unsupported native session host effect 'mcp_{verb}_external_client'"),
    )
}

fn failed(method: &str, why: &str) -> RpcError {
    RpcError::internal(format!(
        "Request session.mcp.{method} failed with message: {why}"
    ))
}
