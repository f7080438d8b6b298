//! `session.mcp.resources.list|listTemplates|read`: a connected server's resources, proxied
//! one page (or one read) at a time within the caps of `turnstile_mcp::resources`, worded
//! as the Copilot CLI words its answers and failures.

use serde::Deserialize;
use serde_json::Value;
use turnstile_mcp::{McpConnection, ResourceListing};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// `session.mcp.resources.list` / `listTemplates` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListParams {
    session_id: String,
    server_name: String,
    cursor: Option<String>,
}

/// `session.mcp.resources.read` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReadParams {
    session_id: String,
    server_name: String,
    uri: String,
}

/// `session.mcp.resources.list`: one page of the server's resources.
pub(crate) async fn list(ctx: &Ctx<'_>, params: ListParams) -> Result<Value, RpcError> {
    page(ctx, params, ResourceListing::Resources, "list").await
}

/// `session.mcp.resources.listTemplates`: one page of the server's resource templates.
pub(crate) async fn list_templates(ctx: &Ctx<'_>, params: ListParams) -> Result<Value, RpcError> {
    page(ctx, params, ResourceListing::Templates, "listTemplates").await
}

/// `session.mcp.resources.read`: one resource's contents.
pub(crate) async fn read(ctx: &Ctx<'_>, params: ReadParams) -> Result<Value, RpcError> {
    let connection = connected(ctx, &params.session_id, &params.server_name, "read")?;
    let read = connection.read_resource(&params.uri).await.map_err(|e| {
        failed(
            "read",
            format!(
                "MCP resources/read failed for {} ({}): {e}",
                params.server_name, params.uri
            ),
        )
    })?;
    Ok(only(read, &["contents"]))
}

async fn page(
    ctx: &Ctx<'_>,
    params: ListParams,
    which: ResourceListing,
    method: &str,
) -> Result<Value, RpcError> {
    let connection = connected(ctx, &params.session_id, &params.server_name, method)?;
    let page = connection
        .list_resources(which, params.cursor)
        .await
        .map_err(|e| {
            failed(
                method,
                format!(
                    "MCP {} failed for {}: {e}",
                    which.method(),
                    params.server_name
                ),
            )
        })?;
    let items = match which {
        ResourceListing::Resources => "resources",
        ResourceListing::Templates => "resourceTemplates",
    };
    Ok(only(page, &[items, "nextCursor"]))
}

/// The answer's own keys (rmcp adds protocol ones, e.g. `resultType`, the schema's answer
/// does not have).
fn only(mut value: Value, keys: &[&str]) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.retain(|k, _| keys.contains(&k.as_str()));
    }
    value
}

fn connected(
    ctx: &Ctx<'_>,
    id: &str,
    name: &str,
    method: &str,
) -> Result<std::sync::Arc<McpConnection>, RpcError> {
    open_session(ctx, id)?
        .mcp_connection(name)
        .ok_or_else(|| failed(method, format!("MCP server not connected: {name}")))
}

/// The runtime's answer to a request it could not carry out, worded as the Copilot CLI words it.
fn failed(method: &str, message: impl std::fmt::Display) -> RpcError {
    RpcError::new(
        codes::INTERNAL_ERROR,
        format!("Request session.mcp.resources.{method} failed with message: {message}"),
    )
}
