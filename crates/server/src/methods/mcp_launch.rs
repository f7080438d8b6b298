//! How a session's MCP servers are configured and launched again: `session.mcp.reload`
//! (the home's `mcp-config.json` read again, as the Copilot CLI reads it, then every server
//! restarted), `session.mcp.reloadWithConfig` (the servers replaced by the given
//! `mcpServers`), and `session.mcp.setEnvValueMode` (answered: the CLI launches servers alike
//! in both modes, `$NAME` references expanded, see `turnstile_mcp`).

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_loop::McpChange;
use turnstile_mcp::McpServers;

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::mcp_session_state::EnvValueMode;
use crate::rpc::{RpcError, codes};
use crate::user_mcp_config::{MCP_CONFIG_FILE, UserMcpConfig};

/// `session.mcp.setEnvValueMode` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct EnvModeParams {
    session_id: String,
    mode: EnvValueMode,
}

/// `session.mcp.reloadWithConfig` params: `config` is opaque in the schema; its `mcpServers`
/// (the format everywhere) are the servers, anything else counts as none.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReloadWithConfigParams {
    session_id: String,
    config: Value,
}

/// `session.mcp.setEnvValueMode`: `{mode}` as recorded.
pub(crate) fn set_env_value_mode(ctx: &Ctx<'_>, params: EnvModeParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Ok(json!({ "mode": params.mode }))
}

/// `session.mcp.reload`: the servers of the home's `mcp-config.json` (read now, less the
/// names disabled in `settings.json`) added to the session's or replacing those of the same
/// name, then every server not disabled restarted. The client's own servers are kept (the
/// CLI drops them; `docs/decisions.md`). A session never given a server has nothing to
/// reload, as in the CLI.
pub(crate) async fn reload(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let refused = |why: String| {
        RpcError::internal(format!(
            "Request session.mcp.reload failed with message: {why}"
        ))
    };
    // A session never given a server has no MCP host in the CLI, which refuses its reload.
    let Some(host) = session.handle().mcp().filter(|h| !h.servers().is_empty()) else {
        return Err(refused("MCP config reload not available".into()));
    };
    // A damaged file is refused in the CLI's words, nothing changed.
    let home = UserMcpConfig::beside(ctx.server.config().state_root.dir());
    let entries = home.servers().map_err(|e| refused(e.to_string()))?;
    let from_file = McpServers::from_value(&Value::Object(entries), MCP_CONFIG_FILE)
        .map_err(|e| refused(e.to_string()))?;
    let disabled = home.disabled().unwrap_or_default();
    let servers: Vec<_> = from_file
        .servers
        .into_iter()
        .filter(|s| !disabled.contains(&s.name))
        .collect();
    host.configure(servers, true).await;
    restart(ctx, params.id()).await?;
    Ok(json!({}))
}

/// `session.mcp.reloadWithConfig`: the session's servers become `config.mcpServers` (none
/// when it has none), started at once; `{filteredServers: [], allowedServers: [{name}]}` as
/// the CLI answers (no policy filters anything).
pub(crate) async fn reload_with_config(
    ctx: &Ctx<'_>,
    params: ReloadWithConfigParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let servers = match params.config.get("mcpServers") {
        Some(entries) => {
            McpServers::from_value(entries, "params")
                .map_err(|e| RpcError::invalid_params(format!("invalid params: config.{e}")))?
                .servers
        }
        None => Vec::new(),
    };
    let allowed: Vec<Value> = servers.iter().map(|s| json!({"name": s.name})).collect();
    if let Some(host) = session.handle().mcp() {
        host.configure(servers, false).await;
    }
    restart(ctx, &params.session_id).await?;
    Ok(json!({ "filteredServers": [], "allowedServers": allowed }))
}

/// Every server not disabled started again, after the messages sent before.
async fn restart(ctx: &Ctx<'_>, id: &str) -> Result<(), RpcError> {
    let session = open_session(ctx, id)?;
    session
        .handle()
        .change_mcp(McpChange::Reload)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok(())
}
