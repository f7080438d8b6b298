//! `session.mcp.list` and `session.mcp.listTools`: a session's MCP servers, their status and
//! tools, in the schema's shapes (`McpServerList`, `McpListToolsResult`).

use serde::Deserialize;
use serde_json::{Value, json};

use super::lifecycle::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.mcp.list`: every configured server with its status (and why it failed).
pub(crate) fn list(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let servers: Vec<Value> = session
        .handle()
        .mcp()
        .map(|host| host.servers())
        .unwrap_or_default()
        .into_iter()
        .map(|s| {
            let mut entry = json!({"name": s.config.name, "status": s.state.as_str()});
            if let Some(error) = &s.error {
                entry["error"] = json!(error.to_string());
            }
            entry
        })
        .collect();
    Ok(json!({ "servers": servers }))
}

/// `session.mcp.listTools` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListToolsParams {
    session_id: String,
    server_name: String,
}

/// `session.mcp.listTools`: the tools a connected server offers (its own names), sorted by
/// name as they are offered to the model.
pub(crate) fn list_tools(ctx: &Ctx<'_>, params: ListToolsParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let server = session
        .handle()
        .mcp()
        .and_then(|host| host.server(&params.server_name))
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "invalid params: serverName: no MCP server {:?} in session {}",
                params.server_name, params.session_id
            ))
        })?;
    let Some(connection) = server.connection else {
        let why = server.error.map(|e| format!(": {e}")).unwrap_or_default();
        return Err(RpcError::new(
            codes::SESSION_FAILED,
            format!("MCP server '{}' is not connected{why}", params.server_name),
        ));
    };
    let tools: Vec<Value> = connection
        .tools()
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
