//! `session.mcp.*`: a session's MCP servers, their status and tools, in the schema's shapes
//! (`McpServerList` with the runtime's `host`, `McpListToolsResult`); one server disabled or
//! enabled, as the Copilot CLI does it (a name the session does not have is ignored); a
//! reload is `mcp_launch.rs`. One server started, stopped or restarted is `mcp_servers.rs`, resources
//! `mcp_resources.rs`.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_loop::McpChange;
use turnstile_mcp::{HostedServer, ServerState};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.mcp.list`: every configured server with its status (and why it failed), and the
/// host's view as the runtime answers it (`host`). Asking starts the servers that wait for
/// the session's first use (a plugin's), as the runtime initializes its MCP host then.
pub(crate) async fn list(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let servers = match session.handle().mcp() {
        Some(host) => {
            host.start_pending().await;
            host.servers()
        }
        None => Vec::new(),
    };
    let entries: Vec<Value> = servers
        .iter()
        .map(|s| {
            // `transport` as the runtime answers (the schema's `McpServer` does not name it).
            let mut entry = json!({
                "name": s.config.name,
                "status": s.state.as_str(),
                "transport": s.config.transport.kind(),
            });
            if let Some(error) = &s.error {
                entry["error"] = json!(error.to_string());
            }
            if let Some(origin) = &s.config.origin {
                entry["source"] = json!(origin.source());
            }
            if let Some(plugin) = s.config.origin.as_ref().and_then(|o| o.plugin()) {
                entry["sourcePlugin"] = json!(plugin.name);
                entry["pluginName"] = json!(plugin.name);
            }
            entry
        })
        .collect();
    // The runtime answers a session that was never given a server without a `host` (it has
    // none); turnstile's host keeps every server it was given, so no servers means none ever.
    if servers.is_empty() {
        return Ok(json!({ "servers": entries }));
    }
    Ok(json!({ "servers": entries, "host": host_view(&servers) }))
}

/// The runtime's `host` object: the servers with a live client, the disabled and the failed
/// ones; turnstile has no policy filter, OAuth or background loading, so those stay empty.
fn host_view(servers: &[HostedServer]) -> Value {
    let names = |state: ServerState| -> Vec<&str> {
        servers
            .iter()
            .filter(|s| s.state == state)
            .map(|s| s.config.name.as_str())
            .collect()
    };
    let clients: Vec<&str> = servers
        .iter()
        .filter(|s| s.is_running())
        .map(|s| s.config.name.as_str())
        .collect();
    let failed: serde_json::Map<String, Value> = servers
        .iter()
        .filter(|s| s.state == ServerState::Failed)
        .map(|s| {
            let error = s.error.as_ref().map(ToString::to_string);
            (s.config.name.clone(), json!({ "message": error }))
        })
        .collect();
    json!({
        "clients": clients,
        "disabledServers": names(ServerState::Disabled),
        "failedServers": failed,
        "filteredServers": [],
        "mcp3pEnabled": true,
        "needsAuthServers": {},
        "pendingConnections": [],
    })
}

/// `session.mcp.listTools` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListToolsParams {
    session_id: String,
    server_name: String,
}

/// `session.mcp.listTools`: the tools a connected server offers (its own names), sorted by
/// name as they are offered to the model. A server that is not connected, or that the session
/// does not have, is the Copilot CLI's `-32603` `MCP server "x" is not connected`.
pub(crate) fn list_tools(ctx: &Ctx<'_>, params: ListToolsParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    if !has_host(&session) {
        return Err(RpcError::internal(
            "Request session.mcp.listTools failed with message: MCP host not initialized",
        ));
    }
    let connection = session
        .handle()
        .mcp()
        .and_then(|host| host.server(&params.server_name))
        .and_then(|server| server.connection)
        .ok_or_else(|| {
            RpcError::internal(format!(
                "Request session.mcp.listTools failed with message: MCP server \"{}\" is not connected",
                params.server_name
            ))
        })?;
    let tools: Vec<Value> = connection
        .listing()
        .tools
        .iter()
        .map(|t| {
            let mut tool = json!({"name": t.name});
            if !t.description.is_empty() {
                tool["description"] = json!(t.description);
            }
            tool
        })
        .collect();
    Ok(json!({ "tools": tools }))
}

/// `session.mcp.enable` / `disable` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ServerNameParams {
    session_id: String,
    server_name: String,
}

/// `session.mcp.enable`: starts a disabled (or failed) server again; its tools are offered
/// from the next model request on.
pub(crate) async fn enable(ctx: &Ctx<'_>, params: ServerNameParams) -> Result<Value, RpcError> {
    change(
        ctx,
        &params.session_id,
        McpChange::Enable(params.server_name),
    )
    .await
}

/// `session.mcp.disable`: stops a server; its tools are no longer offered.
pub(crate) async fn disable(ctx: &Ctx<'_>, params: ServerNameParams) -> Result<Value, RpcError> {
    change(
        ctx,
        &params.session_id,
        McpChange::Disable(params.server_name),
    )
    .await
}

async fn change(ctx: &Ctx<'_>, id: &str, change: McpChange) -> Result<Value, RpcError> {
    if let McpChange::Enable(name) | McpChange::Disable(name) = &change
        && name.is_empty()
    {
        return Err(RpcError::invalid_params(
            "invalid params: serverName: must not be empty",
        ));
    }
    let session = open_session(ctx, id)?;
    // A session never given a server has no MCP host in the Copilot CLI, which refuses these.
    if !has_host(&session) {
        let method = match &change {
            McpChange::Enable(_) => "enable",
            _ => "disable",
        };
        return Err(RpcError::internal(format!(
            "Request session.mcp.{method} failed with message: No MCP host initialized"
        )));
    }
    session
        .handle()
        .change_mcp(change)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    // The runtime answers `{}` (the schema says `null`; the clients take either).
    Ok(json!({}))
}

/// Whether the session has an MCP host as the Copilot CLI counts one: a session never given a
/// server has none.
fn has_host(session: &crate::sessions::OpenSession) -> bool {
    session
        .handle()
        .mcp()
        .is_some_and(|host| !host.servers().is_empty())
}
