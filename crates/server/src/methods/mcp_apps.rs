//! `session.mcp.apps.*`: MCP Apps (SEP-1865, `ui://` views). A session has them only with
//! the `mcp-apps` session capability, which turnstile does not grant (it serves no
//! `sessionCapabilities`), so it answers as the Copilot CLI 1.0.81-0 answers a session
//! without it: the host context is kept and answered, `diagnose` reports the capability off
//! and what the server offers, and the view's calls are refused in the CLI's words.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::lifecycle::SessionIdParams;
use super::{Ctx, open_session};
use crate::mcp_session_state::MAX_HOST_CONTEXT_BYTES;
use crate::rpc::RpcError;

/// `session.mcp.apps.setHostContext` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct HostContextParams {
    session_id: String,
    context: Map<String, Value>,
}

/// `session.mcp.apps.diagnose`, `listTools`, `callTool` and `readResource` params: the server
/// named (the rest of a view's call is accepted and unused, the call being refused).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerParams {
    session_id: String,
    server_name: String,
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

/// The most tool names `diagnose` gives as a sample.
const SAMPLE_TOOL_NAMES: usize = 5;

/// `session.mcp.apps.diagnose`: the capability off; what the named server offers (its tools,
/// those with `_meta.ui` and a few of their names, sorted) when it is connected.
pub(crate) fn diagnose(ctx: &Ctx<'_>, params: ServerParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let connection = session
        .handle()
        .mcp()
        .and_then(|host| host.server(&params.server_name))
        .filter(|s| s.is_running())
        .and_then(|s| s.connection);
    let server = match connection {
        Some(connection) => {
            let listing = connection.listing();
            let with_ui: Vec<&str> = listing
                .tools
                .iter()
                .filter(|t| t.has_ui)
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
        "capability": {"sessionHasMcpApps": false, "featureFlagEnabled": false, "advertised": false},
        "server": server,
    }))
}

/// `session.mcp.apps.listTools`, `callTool`, `readResource`: refused without the capability.
pub(crate) fn refused(
    ctx: &Ctx<'_>,
    method: &str,
    params: ServerParams,
) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Err(RpcError::internal(format!(
        "Request session.mcp.apps.{method} failed with message: The \"mcp-apps\" capability is not available in this session"
    )))
}
