//! `session.mcp.oauth.*` and `session.mcp.headers.*`: the host's part in a remote server's
//! credentials. turnstile does no MCP OAuth and asks no client for headers (an http server's
//! token goes in its configuration's `headers`), so no request is ever pending; each method
//! answers as the Copilot CLI 1.0.81-0 answers when it has none (`docs/decisions.md`).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_mcp::{McpHost, Transport, authorization_metadata_found};

use super::{Ctx, open_session};
use crate::rpc::RpcError;
use crate::sessions::OpenSession;

/// `session.mcp.oauth.handlePendingRequest` and
/// `session.mcp.headers.handlePendingHeadersRefreshRequest` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PendingParams {
    session_id: String,
    #[serde(rename = "requestId")]
    _request_id: String,
    #[serde(rename = "result")]
    _result: Value,
}

/// `session.mcp.oauth.respond` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RespondParams {
    session_id: String,
    #[serde(rename = "requestId")]
    _request_id: String,
}

/// `session.mcp.oauth.authenticationStateChanged` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StateChangedParams {
    session_id: String,
    server_name: Option<String>,
    #[serde(rename = "refreshSessionToken")]
    _refresh_session_token: Option<bool>,
}

/// `session.mcp.oauth.login` params (the consent screen's options are accepted and unused).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoginParams {
    session_id: String,
    server_name: String,
}

/// A pending OAuth or headers-refresh request answered: never one pending, so never accepted.
pub(crate) fn handle_pending(ctx: &Ctx<'_>, params: PendingParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Ok(json!({ "success": false }))
}

/// `session.mcp.oauth.respond`: never a request pending, so never accepted.
pub(crate) fn respond(ctx: &Ctx<'_>, params: RespondParams) -> Result<Value, RpcError> {
    open_session(ctx, &params.session_id)?;
    Ok(json!({ "success": false }))
}

/// `session.mcp.oauth.authenticationStateChanged`: no server waits for credentials, so a
/// connected server is fine (`null`) and any other named one did not recover, in the CLI's
/// words; a session never given a server has no host to recover; without a name, `null`.
pub(crate) fn state_changed(ctx: &Ctx<'_>, params: StateChangedParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let Some(name) = params.server_name else {
        return Ok(Value::Null);
    };
    let Some(host) = hosted(&session) else {
        return Err(failed(
            "authenticationStateChanged",
            "MCP host did not initialize after OAuth credentials changed",
        ));
    };
    if host.server(&name).is_some_and(|s| s.is_running()) {
        return Ok(Value::Null);
    }
    Err(failed(
        "authenticationStateChanged",
        &format!("MCP server {name} did not recover after OAuth credentials changed"),
    ))
}

/// The session's MCP host, when it was ever given a server (the CLI has no host otherwise).
fn hosted(session: &OpenSession) -> Option<&Arc<McpHost>> {
    session
        .handle()
        .mcp()
        .filter(|host| !host.servers().is_empty())
}

/// How long each OAuth metadata request of a login waits.
const DISCOVERY_LIMIT: Duration = Duration::from_secs(10);

/// `session.mcp.oauth.login`: refused in the CLI's words for a session without servers, an
/// unknown or a local server, and a remote one whose authorization server is not found (its
/// metadata looked up as the CLI looks it up); one that names an authorization server is told
/// turnstile does no OAuth (its token belongs in the configuration's headers).
pub(crate) async fn login(ctx: &Ctx<'_>, params: LoginParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let name = &params.server_name;
    let Some(host) = hosted(&session) else {
        return Err(failed("login", "MCP host is not available on this session"));
    };
    let why = match host.server(name).map(|s| s.config.transport) {
        None => format!("MCP server '{name}' is not configured"),
        Some(Transport::Stdio { .. }) => format!(
            "MCP server '{name}' is not a remote server — OAuth login is only supported for HTTP/SSE transports"
        ),
        Some(Transport::Http { url, .. }) => {
            if authorization_metadata_found(&url, DISCOVERY_LIMIT).await {
                format!(
                    "turnstile does no MCP OAuth; give MCP server '{name}' its token in the configuration's headers"
                )
            } else {
                format!("Failed to discover authorization server metadata for {url}")
            }
        }
    };
    Err(failed("login", &why))
}

fn failed(method: &str, why: &str) -> RpcError {
    RpcError::internal(format!(
        "Request session.mcp.oauth.{method} failed with message: {why}"
    ))
}
