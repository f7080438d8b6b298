//! The MCP servers of a session run from the command line: the settings files' `mcpServers`,
//! then `$COPILOT_HOME/mcp-config.json`, then `--mcp-config FILE` (a server of the same name
//! is replaced by the later source), started before the session and given to it. Names in
//! `$COPILOT_HOME/settings.json`'s `disabledMcpServers` (what `mcp.config.disable` writes) are
//! left out of the first two sources, as the Copilot CLI leaves them out of new sessions; a
//! server given by `--mcp-config` is asked for by name and always starts.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use turnstile_loop::SessionParts;
use turnstile_mcp::{McpHost, McpServers, StartOptions};
use turnstile_sandbox::Sandboxing;

use turnstile_home::copilot_home;
use turnstile_home::mcp_config::UserMcpConfig;

use crate::config::{Effective, McpServerSettings};

pub use turnstile_home::mcp_config::MCP_CONFIG_FILE;

/// The servers configured for a session, from every source in order.
pub fn configured(effective: &Effective, extra: Option<&Path>) -> Result<McpServers> {
    let mut servers = McpServers::default();
    for s in &effective.mcp_servers {
        let (name, settings) = &s.value;
        let mut one = Map::new();
        one.insert(name.clone(), settings_value(settings));
        let from = McpServers::from_value(&Value::Object(one), &s.source.to_string())?;
        servers = servers.overlay(from);
    }
    if let Some(home) = copilot_home() {
        let path = home.join(MCP_CONFIG_FILE);
        if let Some(file) = McpServers::read_file(&path)? {
            servers = servers.overlay(file);
        }
        let disabled = UserMcpConfig::in_home(&home).disabled()?;
        servers.servers.retain(|s| !disabled.contains(&s.name));
    }
    if let Some(path) = extra {
        let file = McpServers::read_file(path)?
            .with_context(|| format!("--mcp-config {}: no such file", path.display()))?;
        servers = servers.overlay(file);
    }
    Ok(servers)
}

/// A settings file's server entry back in the configuration's JSON shape.
fn settings_value(s: &McpServerSettings) -> Value {
    let mut entry: Map<String, Value> = s.other.clone().into_iter().collect();
    let mut put = |key: &str, value: Value| {
        if !value.is_null() {
            entry.insert(key.to_owned(), value);
        }
    };
    put("type", json!(s.kind));
    put("command", json!(s.command));
    put("args", json!(s.args));
    put("env", json!(s.env));
    put("url", json!(s.url));
    put("headers", json!(s.headers));
    put("tools", json!(s.tools));
    Value::Object(entry)
}

/// The MCP servers a session's settings name, and the sandbox their processes enter.
pub struct Configured {
    /// The servers.
    pub servers: McpServers,
    /// The session's sandbox for the processes the user configured
    /// (`turnstile_loop::session::configured_processes`).
    pub sandbox: Sandboxing,
}

/// Starts the configured servers and gives them to the session: it offers their tools after
/// the built-ins, the session announces their status and stops them when it ends. A server
/// that fails to start is reported on stderr and by the session; the others still run.
pub async fn attach(configured: &Configured, parts: &mut SessionParts) -> Result<()> {
    let servers = &configured.servers;
    if servers.is_empty() {
        return Ok(());
    }
    let mut options = StartOptions::new(&parts.config.cwd);
    options.sandbox = configured.sandbox.clone();
    let host = Arc::new(McpHost::start(servers, &options).await);
    for server in host.servers() {
        if let Some(error) = &server.error {
            eprintln!(
                "warning: MCP server '{}' is not available: {error}",
                server.config.name
            );
        }
    }
    parts.config.mcp = Some(host);
    Ok(())
}
