//! The MCP servers of one session: started together, each connected or failed with its
//! reason, stopped together.

use std::sync::{Arc, Mutex};

use futures_util::future::join_all;

use crate::config::{McpServers, ServerConfig};
use crate::connection::{McpConnection, StartOptions};
use crate::error::McpError;

/// Where a server stands (the SDK's `McpServerStatus` values turnstile reaches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Connected; its tools are offered.
    Connected,
    /// It failed to start (or its start timed out).
    Failed,
    /// Stopped by the session (or disabled by a client).
    Disabled,
}

impl ServerState {
    /// The schema's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::Disabled => "disabled",
        }
    }
}

/// One server of the host.
#[derive(Debug, Clone)]
pub struct HostedServer {
    /// Its configuration.
    pub config: ServerConfig,
    /// Where it stands.
    pub state: ServerState,
    /// Why it failed, when it did.
    pub error: Option<McpError>,
    /// The live connection, when connected.
    pub connection: Option<Arc<McpConnection>>,
}

/// The servers of a session.
#[derive(Debug, Default)]
pub struct McpHost {
    servers: Mutex<Vec<HostedServer>>,
}

impl McpHost {
    /// Starts every server at once; each start is bounded by its limit, so a hanging server
    /// delays the session by at most that long and ends as `failed`.
    pub async fn start(servers: &McpServers, options: &StartOptions) -> Self {
        let starts = servers.servers.iter().map(|config| async move {
            (config.clone(), McpConnection::start(config, options).await)
        });
        let hosted = join_all(starts)
            .await
            .into_iter()
            .map(|(config, started)| match started {
                Ok(connection) => HostedServer {
                    config,
                    state: ServerState::Connected,
                    error: None,
                    connection: Some(Arc::new(connection)),
                },
                Err(error) => HostedServer {
                    config,
                    state: ServerState::Failed,
                    error: Some(error),
                    connection: None,
                },
            })
            .collect();
        McpHost {
            servers: Mutex::new(hosted),
        }
    }

    /// The servers, in configuration order.
    pub fn servers(&self) -> Vec<HostedServer> {
        self.servers.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<HostedServer> {
        self.servers().into_iter().find(|s| s.config.name == name)
    }

    /// Stops every connected server (their processes are killed).
    pub async fn stop_all(&self) {
        let connections: Vec<Arc<McpConnection>> = match self.servers.lock() {
            Ok(mut servers) => servers
                .iter_mut()
                .filter_map(|s| {
                    s.state = ServerState::Disabled;
                    s.connection.take()
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        join_all(connections.iter().map(|c| c.stop())).await;
    }
}
