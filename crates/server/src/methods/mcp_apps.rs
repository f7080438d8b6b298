//! `session.mcp.apps.*`: MCP Apps (SEP-1865, `ui://` views) over a session's connected
//! servers, as the Copilot CLI 1.0.81-0 serves them. A session has them once a client gives
//! it the `mcp-apps` capability (`session.options.update`'s `sessionCapabilities`); without
//! it `listTools`, `callTool` and `readResource` are refused in the CLI's words. A view may
//! list and call only the tools of its own server (`originServerName`, required), and only
//! those whose `_meta.ui.visibility` is unset or names `"app"`. The host context is kept for
//! the views and `diagnose` reports the wiring of one server.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use turnstile_mcp::{McpConnection, app_tool};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::mcp_session_state::MAX_HOST_CONTEXT_BYTES;
use crate::rpc::RpcError;
use crate::sessions::OpenSession;

/// The most tool names `diagnose` gives as a sample.
const SAMPLE_TOOL_NAMES: usize = 5;

/// `session.mcp.apps.setHostContext` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct HostContextParams {
    session_id: String,
    context: Map<String, Value>,
}

/// `session.mcp.apps.diagnose` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct DiagnoseParams {
    session_id: String,
    server_name: String,
}

/// `session.mcp.apps.listTools` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListToolsParams {
    session_id: String,
    server_name: String,
    origin_server_name: Option<String>,
}

/// `session.mcp.apps.callTool` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CallToolParams {
    session_id: String,
    server_name: String,
    tool_name: String,
    arguments: Option<Map<String, Value>>,
    origin_server_name: Option<String>,
}

/// `session.mcp.apps.readResource` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReadResourceParams {
    session_id: String,
    server_name: String,
    uri: String,
}

/// `session.mcp.apps.getHostContext`: `{context}`, `{}` until a client set one.
pub(crate) fn get_host_context(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(json!({ "context": session.mcp().host_context() }))
}

/// `session.mcp.apps.setHostContext`: replaces the context (`null`); one over
/// [`MAX_HOST_CONTEXT_BYTES`] is refused.
pub(crate) fn set_host_context(
    ctx: &Ctx<'_>,
    params: HostContextParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    session
        .mcp()
        .set_host_context(params.context)
        .map_err(|size| {
            RpcError::invalid_params(format!(
                "invalid params: context: {size} bytes, at most {MAX_HOST_CONTEXT_BYTES} are kept"
            ))
        })?;
    Ok(Value::Null)
}

/// `session.mcp.apps.diagnose`: the capability (turnstile has no feature flag to turn on;
/// the capability is advertised when the session has it) and what the server offers: its
/// tools, those with `_meta.ui`, a few of their names.
pub(crate) fn diagnose(ctx: &Ctx<'_>, params: DiagnoseParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let apps = session.mcp().has_apps();
    let server = match session.mcp_connection(&params.server_name) {
        Some(connection) => {
            let listing = connection.listing();
            let with_ui: Vec<&str> = listing
                .tools
                .iter()
                .filter(|t| t.ui().is_some())
                .map(|t| t.name.as_str())
                .collect();
            json!({
                "connected": true,
                "toolCount": listing.tools.len(),
                "toolsWithUiMeta": with_ui.len(),
                "sampleToolNames": with_ui.iter().take(SAMPLE_TOOL_NAMES).collect::<Vec<_>>(),
            })
        }
        None => {
            json!({"connected": false, "toolCount": 0, "toolsWithUiMeta": 0, "sampleToolNames": []})
        }
    };
    Ok(json!({
        "capability": {"sessionHasMcpApps": apps, "featureFlagEnabled": false, "advertised": apps},
        "server": server,
    }))
}

/// `session.mcp.apps.listTools`: `{tools}`, the server's tools a view may call, sorted by
/// name, as the server described them.
pub(crate) fn list_tools(ctx: &Ctx<'_>, params: ListToolsParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let method = "listTools";
    with_apps(&session, method)?;
    same_server(
        method,
        params.origin_server_name.as_deref(),
        &params.server_name,
        "tools/list",
        "list tools",
    )?;
    let connection = connected(&session, method, &params.server_name)?;
    let tools: Vec<Value> = connection
        .listing()
        .tools
        .iter()
        .filter(|t| t.callable_by_apps())
        .map(app_tool)
        .collect();
    Ok(json!({ "tools": tools }))
}

/// `session.mcp.apps.callTool`: the server's `CallToolResult` as it sent it, for a tool of
/// the view's own server that apps may call.
pub(crate) async fn call_tool(ctx: &Ctx<'_>, params: CallToolParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let method = "callTool";
    let (server, tool) = (&params.server_name, &params.tool_name);
    with_apps(&session, method)?;
    same_server(
        method,
        params.origin_server_name.as_deref(),
        server,
        "tools/call",
        &format!("call {tool}"),
    )?;
    let connection = connected(&session, method, server)?;
    let listing = connection.listing();
    let Some(info) = listing.tools.iter().find(|t| t.name == *tool) else {
        return Err(failed(
            method,
            &format!("MCP tool not found on {server}: {tool}"),
        ));
    };
    if !info.callable_by_apps() {
        return Err(failed(
            method,
            &format!("Tool {tool} on {server} is not callable from MCP Apps"),
        ));
    }
    let tool_meta = info.meta.clone();
    let given = params.arguments;
    let arguments = Value::Object(given.clone().unwrap_or_default());
    // The session's close stops its servers, which ends the wait; the call limit bounds it
    // otherwise.
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let result = connection
        .call_for_app(tool, arguments, &cancel)
        .await
        .map_err(|e| {
            failed(
                method,
                &format!("MCP tools/call failed for {server} ({tool}): {e}"),
            )
        })?;
    session.handle().announce(&ToolCallComplete {
        server_name: server.clone(),
        tool_name: tool.clone(),
        arguments: given,
        success: result.get("isError") != Some(&Value::Bool(true)),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        result: result.clone(),
        tool_meta,
    });
    Ok(result)
}

/// `mcp_app.tool_call_complete` (ephemeral), as the CLI announces an app's call.
#[derive(Debug, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallComplete {
    server_name: String,
    tool_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Map<String, Value>>,
    success: bool,
    duration_ms: u64,
    result: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_meta: Option<Value>,
}

impl turnstile_journal::payload::Payload for ToolCallComplete {
    const TYPE: &'static str = "mcp_app.tool_call_complete";
}

/// `session.mcp.apps.readResource`: `{contents}` of a resource of a connected server (a view's
/// `ui://` bundle), within the resource caps.
pub(crate) async fn read_resource(
    ctx: &Ctx<'_>,
    params: ReadResourceParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let method = "readResource";
    with_apps(&session, method)?;
    let connection = connected(&session, method, &params.server_name)?;
    let mut read = connection.read_resource(&params.uri).await.map_err(|e| {
        let (server, uri) = (&params.server_name, &params.uri);
        failed(
            method,
            &format!("MCP resources/read failed for {server} ({uri}): {e}"),
        )
    })?;
    // The answer's own key (rmcp adds protocol ones the schema's answer does not have).
    if let Some(map) = read.as_object_mut() {
        map.retain(|k, _| k == "contents");
    }
    Ok(read)
}

fn with_apps(session: &OpenSession, method: &str) -> Result<(), RpcError> {
    if session.mcp().has_apps() {
        return Ok(());
    }
    Err(failed(
        method,
        "The \"mcp-apps\" capability is not available in this session",
    ))
}

/// SEP-1865's same-server rule: a view may reach only its own server.
fn same_server(
    method: &str,
    origin: Option<&str>,
    server: &str,
    request: &str,
    what: &str,
) -> Result<(), RpcError> {
    match origin {
        None => Err(failed(
            method,
            "originServerName is required: hosts MUST pass the server name of the ui:// view that issued the request (SEP-1865 same-server constraint)",
        )),
        Some(origin) if origin != server => Err(failed(
            method,
            &format!(
                "Cross-server MCP App {request} is not allowed: app loaded from \"{origin}\" cannot {what} on \"{server}\""
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// The server's live connection, or the CLI's refusal (with its hint for a name the session
/// does not have).
fn connected(
    session: &OpenSession,
    method: &str,
    name: &str,
) -> Result<std::sync::Arc<McpConnection>, RpcError> {
    if let Some(connection) = session.mcp_connection(name) {
        return Ok(connection);
    }
    let known = session
        .handle()
        .mcp()
        .is_some_and(|host| host.server(name).is_some());
    let hint = if known {
        ""
    } else {
        " (no MCP server by that name is configured for this session. Session MCP configuration is not persisted, so a resumed session must be given mcpServers again.)"
    };
    Err(failed(
        method,
        &format!("MCP server not connected: {name}{hint}"),
    ))
}

fn failed(method: &str, why: &str) -> RpcError {
    RpcError::internal(format!(
        "Request session.mcp.apps.{method} failed with message: {why}"
    ))
}
