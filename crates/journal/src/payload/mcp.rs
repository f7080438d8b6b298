//! Ephemeral notices about a session's MCP servers: each server's status as it changes, and
//! the summary once they are all loaded.

use serde::{Deserialize, Serialize};

use super::payload;

/// `session.mcp_server_status_changed` (ephemeral): one server's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatusChanged {
    /// The server's config key.
    pub server_name: String,
    /// `connected`, `failed`, `needs-auth`, `pending`, `disabled`, `stopped`, `not_configured`.
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
payload!(McpServerStatusChanged, "session.mcp_server_status_changed");

/// One server of `session.mcp_servers_loaded`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerSummary {
    /// The server's config key.
    pub name: String,
    /// Its status (as in [`McpServerStatusChanged::status`]).
    pub status: String,
    /// Where its configuration came from: `user`, `workspace`, `plugin`, `builtin`, `managed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A managed catalog's name for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What a connected server advertised (opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metadata: Option<serde_json::Value>,
    /// `stdio`, `http`, `sse` or `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The plugin that supplied it, when `source` is `plugin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_name: Option<String>,
    /// That plugin's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_version: Option<String>,
}

/// `session.mcp_servers_loaded` (ephemeral): every configured server's status after the start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServersLoaded {
    /// The servers, in configuration order.
    pub servers: Vec<McpServerSummary>,
}
payload!(McpServersLoaded, "session.mcp_servers_loaded");

/// `mcp.tools.list_changed` (ephemeral): a server said its tools changed
/// (`notifications/tools/list_changed`) and they were listed again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolsListChanged {
    /// The server's config key.
    pub server_name: String,
}
payload!(McpToolsListChanged, "mcp.tools.list_changed");
