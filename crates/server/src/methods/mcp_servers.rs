//! `session.mcp.startServer|stopServer|restartServer|isServerRunning`: one server of a live
//! session at a time, with the Copilot CLI's answers: `{}` for a start, stop or restart (also
//! for a stop of a server the session does not have, or a start of one that runs), `-32603`
//! `Cannot start MCP server "x": no configuration is registered for it` for a start or restart
//! of an unknown name without a `config`, `{running}` for the question.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_loop::McpChange;
use turnstile_mcp::{HostedServer, McpServers, NotRegistered, ServerConfig};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.mcp.startServer` / `restartServer` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StartParams {
    session_id: String,
    server_name: String,
    config: Option<Value>,
}

/// `session.mcp.stopServer` / `isServerRunning` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct NameParams {
    session_id: String,
    server_name: String,
}

/// `session.mcp.startServer`: starts a configured server that is not running, or a new one
/// from `config`; its tools are offered from the next model request.
pub(crate) async fn start(ctx: &Ctx<'_>, params: StartParams) -> Result<Value, RpcError> {
    start_or_restart(ctx, params, false).await
}

/// `session.mcp.restartServer`: stops a server and starts it again (from `config` if given).
pub(crate) async fn restart(ctx: &Ctx<'_>, params: StartParams) -> Result<Value, RpcError> {
    start_or_restart(ctx, params, true).await
}

async fn start_or_restart(
    ctx: &Ctx<'_>,
    params: StartParams,
    restart: bool,
) -> Result<Value, RpcError> {
    let (verb, method) = if restart {
        ("restart", "restartServer")
    } else {
        ("start", "startServer")
    };
    let (name, config) = start_args(method, params.server_name, params.config)?;
    known_or_given(ctx, &params.session_id, verb, method, &name, &config)?;
    let change_of = if restart {
        McpChange::Restart { name, config }
    } else {
        McpChange::Start { name, config }
    };
    change(ctx, &params.session_id, method, change_of).await
}

/// `session.mcp.stopServer`: stops a server, keeping its configuration for a later start.
pub(crate) async fn stop(ctx: &Ctx<'_>, params: NameParams) -> Result<Value, RpcError> {
    change(
        ctx,
        &params.session_id,
        "stopServer",
        McpChange::Stop(params.server_name),
    )
    .await
}

/// `session.mcp.isServerRunning`: whether the server is connected (false for an unknown name).
pub(crate) fn is_running(ctx: &Ctx<'_>, params: NameParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let running = session
        .handle()
        .mcp()
        .and_then(|host| host.server(&params.server_name))
        .is_some_and(|s| HostedServer::is_running(&s));
    Ok(json!({ "running": running }))
}

/// The runtime's answer to a request it could not carry out, worded as the Copilot CLI words it.
fn failed(method: &str, message: impl std::fmt::Display) -> RpcError {
    RpcError::new(
        codes::INTERNAL_ERROR,
        format!("Request session.mcp.{method} failed with message: {message}"),
    )
}

type StartArgs = (String, Option<Box<ServerConfig>>);

/// The server's name and its configuration, read as an `mcpServers` entry would be.
fn start_args(method: &str, name: String, config: Option<Value>) -> Result<StartArgs, RpcError> {
    if name.is_empty() {
        return Err(RpcError::invalid_params(
            "invalid params: serverName: must not be empty",
        ));
    }
    let Some(config) = config else {
        return Ok((name, None));
    };
    let origin = format!("session.mcp.{method} params.config");
    let servers = McpServers::from_value(&json!({ name.clone(): config }), &origin)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?;
    let config = servers.servers.into_iter().next().map(Box::new);
    Ok((name, config))
}

/// Refuses a name the session has no configuration for when no `config` is given.
fn known_or_given(
    ctx: &Ctx<'_>,
    id: &str,
    verb: &str,
    method: &str,
    name: &str,
    config: &Option<Box<ServerConfig>>,
) -> Result<(), RpcError> {
    let session = open_session(ctx, id)?;
    let known = session
        .handle()
        .mcp()
        .is_some_and(|host| host.server(name).is_some());
    if known || config.is_some() {
        return Ok(());
    }
    Err(failed(
        method,
        format!("Cannot {verb} MCP server {name:?}: {NotRegistered}"),
    ))
}

async fn change(
    ctx: &Ctx<'_>,
    id: &str,
    method: &str,
    change: McpChange,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, id)?;
    session
        .handle()
        .change_mcp(change)
        .await
        .map_err(|e| failed(method, e))?;
    // The runtime answers `{}`.
    Ok(json!({}))
}
