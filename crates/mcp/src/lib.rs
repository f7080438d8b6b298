//! MCP client connections for turnstile's sessions, with the official Rust SDK (`rmcp`).
//!
//! One job: reach the MCP servers a user configured, in the Copilot CLI's format
//! ([`McpServers`]: `$COPILOT_HOME/mcp-config.json`, the SDK's `mcpServers`), over stdio (a
//! child process in its own group, killed with the session and with the engine) or
//! streamable HTTP; list their tools, call them with a time limit, stop them. Everything that
//! goes wrong is an [`McpError`] value naming the server, never a wait without end.
//!
//! (`tests/servers.rs`, `stdio_lists_calls_and_stops`, goes through the same steps with a real
//! server.)
//!
//! ```ignore
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use turnstile_mcp::{McpConnection, McpServers, StartOptions};
//! let servers = McpServers::from_value(
//!     &serde_json::json!({"files": {"command": "my-mcp-server"}}),
//!     "example",
//! )?;
//! let files = McpConnection::start(&servers.servers[0], &StartOptions::new("/tmp")).await?;
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let outcome = files.call("read", serde_json::json!({"path": "a.txt"}), &cancel).await?;
//! println!("{}", outcome.text);
//! files.stop().await;
//! # Ok(()) }
//! ```

mod apps;
mod client;
mod config;
mod connection;
mod env;
mod error;
mod host;
mod http;
mod listing;
mod oauth_discovery;
mod resources;
mod result;
mod stdio;

pub use apps::{MAX_APP_RESULT_BYTES, app_tool};
pub use config::{MAX_SERVERS, McpServers, PluginOrigin, ServerConfig, ServerOrigin, Transport};
pub use connection::{DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, McpConnection, StartOptions};
pub use error::{ConfigError, McpError, NotRegistered};
pub use host::{HostedServer, McpHost, ServerState};
pub use listing::{
    MAX_DESCRIPTION_BYTES, MAX_LIST_PAGES, MAX_SCHEMA_BYTES, MAX_SERVER_TOOL_BYTES, MAX_TOOLS,
    McpToolInfo, ToolListing,
};
pub use oauth_discovery::{MAX_METADATA_BYTES, authorization_metadata_found};
pub use resources::{MAX_RESOURCE_BYTES, MAX_RESOURCES_PER_PAGE, ResourceListing};
pub use result::{CallOutcome, MAX_RESULT_BYTES};
