//! `mcp.config.*`: the user's MCP servers in the Copilot home (`mcp-config.json`, and the
//! names disabled for new sessions in `settings.json`), listed and edited as the Copilot CLI
//! does (see [`crate::user_mcp_config`]). Every answer but `list` is `null`; a refusal is an
//! internal error (-32603) with the CLI's message, `Request METHOD failed with message: WHY`.

use serde::Deserialize;
use serde_json::Value;

use super::Ctx;
use crate::rpc::RpcError;
use crate::user_mcp_config::{UserConfigError, UserMcpConfig};

/// `mcp.config.add` and `mcp.config.update` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ServerParams {
    name: String,
    #[serde(default)]
    config: Option<Value>,
}

/// `mcp.config.remove` params.
#[derive(Debug, Deserialize)]
pub(crate) struct NameParams {
    name: String,
}

/// `mcp.config.enable` and `mcp.config.disable` params.
#[derive(Debug, Deserialize)]
pub(crate) struct NamesParams {
    names: Vec<String>,
}

fn files(ctx: &Ctx<'_>) -> UserMcpConfig {
    UserMcpConfig::beside(ctx.server.config().state_root.dir())
}

/// The CLI's words for a refusal: its handler's error wrapped with the method's name.
fn refused(method: &'static str) -> impl Fn(UserConfigError) -> RpcError {
    move |e| RpcError::internal(format!("Request {method} failed with message: {e}"))
}

/// `mcp.config.list`: `{servers: {NAME: CONFIG}}`.
pub(crate) fn list(ctx: &Ctx<'_>) -> Result<Value, RpcError> {
    files(ctx).list().map_err(refused("mcp.config.list"))
}

/// `mcp.config.add`.
pub(crate) fn add(ctx: &Ctx<'_>, p: ServerParams) -> Result<Value, RpcError> {
    files(ctx)
        .add(&p.name, p.config.as_ref())
        .map_err(refused("mcp.config.add"))?;
    Ok(Value::Null)
}

/// `mcp.config.update`.
pub(crate) fn update(ctx: &Ctx<'_>, p: ServerParams) -> Result<Value, RpcError> {
    files(ctx)
        .update(&p.name, p.config.as_ref())
        .map_err(refused("mcp.config.update"))?;
    Ok(Value::Null)
}

/// `mcp.config.remove`.
pub(crate) fn remove(ctx: &Ctx<'_>, p: NameParams) -> Result<Value, RpcError> {
    files(ctx)
        .remove(&p.name)
        .map_err(refused("mcp.config.remove"))?;
    Ok(Value::Null)
}

/// `mcp.config.enable`.
pub(crate) fn enable(ctx: &Ctx<'_>, p: NamesParams) -> Result<Value, RpcError> {
    files(ctx)
        .enable(&p.names)
        .map_err(refused("mcp.config.enable"))?;
    Ok(Value::Null)
}

/// `mcp.config.disable`.
pub(crate) fn disable(ctx: &Ctx<'_>, p: NamesParams) -> Result<Value, RpcError> {
    files(ctx)
        .disable(&p.names)
        .map_err(refused("mcp.config.disable"))?;
    Ok(Value::Null)
}

/// `mcp.config.reload`: turnstile keeps no cache of the files (each call reads them), so
/// there is nothing to drop.
pub(crate) fn reload() -> Value {
    Value::Null
}
