//! What a session does with its MCP servers: announces each server's status and the summary
//! at the start (ephemeral, as the runtime announces them); keeps the tools it offers in step
//! with the servers (rebuilt before a model request when a server's tools changed, or a client
//! enabled, disabled, started, stopped, restarted or reloaded servers;
//! `session.tools_updated` says so); warns in the journal about a server that failed to
//! start, about what the caps or the naming left out, and about one that went away during a
//! call, each once.

use std::sync::Arc;

use turnstile_journal::payload::{
    McpServerStatusChanged, McpServerSummary, McpServersLoaded, McpToolsListChanged,
    SessionToolsUpdated, SessionWarning,
};
use turnstile_mcp::{HostedServer, McpHost, ServerState};

use super::actor::Actor;
use super::{LoopError, McpChange};
use turnstile_tools::ToolFailure;
use turnstile_tools::mcp::{SERVER_GONE_CODE, with_mcp_tools};

/// `warningType` of the session's MCP warnings.
const WARNING_TYPE: &str = "mcp";

impl Actor {
    fn host(&self) -> Option<Arc<McpHost>> {
        self.parts.config.mcp.clone()
    }

    fn warn_mcp(&self, message: String) -> Result<(), LoopError> {
        self.emitter.emit(&SessionWarning {
            warning_type: WARNING_TYPE.into(),
            message,
            ..Default::default()
        })?;
        Ok(())
    }

    /// One server's status; a failed one also gets a warning in the journal.
    fn announce_server(&self, server: &HostedServer) -> Result<(), LoopError> {
        let error = server.error.as_ref().map(ToString::to_string);
        self.emitter.emit(&McpServerStatusChanged {
            server_name: server.config.name.clone(),
            status: server.state.as_str().into(),
            error: error.clone(),
        })?;
        if server.state == ServerState::Failed {
            self.warn_mcp(format!(
                "MCP server '{}' is not available: {}; its tools are not offered",
                server.config.name,
                error.as_deref().unwrap_or("it failed to start")
            ))?;
        }
        Ok(())
    }

    /// Announces the servers' status (nothing without servers) and builds the tools offered.
    pub(super) fn announce_mcp(&self) -> Result<(), LoopError> {
        let Some(host) = self.host() else {
            return Ok(());
        };
        self.announce_servers(&host)?;
        self.rebuild_tools(&host)
    }

    /// At a message's start: the servers waiting for the session's first use (a plugin's)
    /// start, as the runtime starts them, and every server's status is announced again.
    pub(super) async fn start_pending_mcp(&self) -> Result<(), LoopError> {
        let Some(host) = self.host() else {
            return Ok(());
        };
        if !host.has_pending() || host.start_pending().await.is_empty() {
            return Ok(());
        }
        self.announce_servers(&host)?;
        self.rebuild_tools(&host)
    }

    /// Every server's status, then the summary (`session.mcp_servers_loaded`).
    fn announce_servers(&self, host: &McpHost) -> Result<(), LoopError> {
        let servers = host.servers();
        if servers.is_empty() {
            return Ok(());
        }
        let mut summaries = Vec::with_capacity(servers.len());
        for server in &servers {
            self.announce_server(server)?;
            let plugin = server.config.origin.as_ref().and_then(|o| o.plugin());
            summaries.push(McpServerSummary {
                name: server.config.name.clone(),
                status: server.state.as_str().into(),
                error: server.error.as_ref().map(ToString::to_string),
                transport: Some(server.config.transport.kind().into()),
                source: server.config.origin.as_ref().map(|o| o.source().into()),
                plugin_name: plugin.map(|p| p.name.clone()),
                plugin_version: plugin.and_then(|p| p.version.clone()),
                ..Default::default()
            });
        }
        self.emitter
            .emit(&McpServersLoaded { servers: summaries })?;
        Ok(())
    }

    /// `tools_now` from the base tools and the servers' tools as they are now, with a
    /// warning for each new thing to say about them.
    fn rebuild_tools(&self, host: &McpHost) -> Result<(), LoopError> {
        // Read before building: a change while building bumps it again and is not missed.
        let version = host.version();
        let (tools, warnings) = with_mcp_tools(&self.base_tools, host);
        *super::lock::lock(&self.tools_now) = Arc::new(tools);
        *super::lock::lock(&self.mcp_version) = Some(version);
        for warning in warnings {
            if super::lock::lock(&self.mcp_warned).insert(warning.clone()) {
                self.warn_mcp(warning)?;
            }
        }
        Ok(())
    }

    /// Before a model request: lists again the tools of the servers that said they changed
    /// and rebuilds the tools offered if anything changed since they were built.
    pub(super) async fn refresh_mcp_tools(&self) -> Result<(), LoopError> {
        let Some(host) = self.host() else {
            return Ok(());
        };
        for (server, refreshed) in host.refresh_changed().await {
            match refreshed {
                Ok(()) => {
                    self.emitter.emit(&McpToolsListChanged {
                        server_name: server.clone(),
                    })?;
                    self.emitter.emit(&McpServerStatusChanged {
                        server_name: server,
                        status: ServerState::Connected.as_str().into(),
                        error: None,
                    })?;
                }
                Err(e) => self.warn_mcp(format!(
                    "MCP server '{server}' said its tools changed, but listing them again failed ({e}); its earlier tools are still offered"
                ))?,
            }
        }
        if *super::lock::lock(&self.mcp_version) == Some(host.version()) {
            return Ok(());
        }
        self.rebuild_tools(&host)?;
        self.emitter.emit(&SessionToolsUpdated {
            model: self.parts.config.model.clone(),
        })?;
        Ok(())
    }

    /// A client's enable, disable, start, stop, restart or reload; the tools offered follow
    /// at the next request.
    pub(super) async fn change_mcp(&self, change: McpChange) -> Result<bool, LoopError> {
        let Some(host) = self.host() else {
            return Ok(false);
        };
        match change {
            McpChange::Disable(name) => {
                if !host.disable(&name).await {
                    return Ok(false);
                }
                self.emitter.emit(&McpServerStatusChanged {
                    server_name: name,
                    status: ServerState::Disabled.as_str().into(),
                    error: None,
                })?;
            }
            McpChange::Enable(name) => {
                let Some(before) = host.server(&name) else {
                    return Ok(false);
                };
                let live = before.connection.as_ref().is_some_and(|c| !c.is_closed());
                if before.state == ServerState::Connected && live {
                    return Ok(false);
                }
                self.announce_pending(&name)?;
                if let Some(server) = host.enable(&name).await {
                    self.forget_gone(Some(&name));
                    self.announce_server(&server)?;
                }
            }
            McpChange::Stop(name) => {
                if !host.stop(&name).await {
                    return Ok(false);
                }
                self.announce_stopped(name)?;
            }
            McpChange::Start { name, config } => {
                let known = host.server(&name);
                if known.as_ref().is_some_and(HostedServer::is_running) {
                    return Ok(false);
                }
                if config.is_none() && known.is_none() {
                    return Ok(false);
                }
                self.announce_pending(&name)?;
                let Ok(Some(server)) = host.start_server(&name, config.map(|c| *c)).await else {
                    return Ok(false);
                };
                self.forget_gone(Some(&name));
                self.announce_server(&server)?;
            }
            McpChange::Restart { name, config } => {
                let before = host.server(&name);
                if before.is_none() && config.is_none() {
                    return Ok(false);
                }
                if before.as_ref().is_some_and(HostedServer::is_running) {
                    self.announce_stopped(name.clone())?;
                }
                self.announce_pending(&name)?;
                if let Ok(server) = host.restart_server(&name, config.map(|c| *c)).await {
                    self.forget_gone(Some(&name));
                    self.announce_server(&server)?;
                }
            }
            McpChange::Reload => {
                host.reload().await;
                self.forget_gone(None);
                self.announce_servers(&host)?;
            }
        }
        Ok(true)
    }

    /// A server about to start (`pending`, the runtime's word).
    fn announce_pending(&self, name: &str) -> Result<(), LoopError> {
        self.emitter.emit(&McpServerStatusChanged {
            server_name: name.to_owned(),
            status: "pending".into(),
            error: None,
        })?;
        Ok(())
    }

    /// A server a client stopped.
    fn announce_stopped(&self, name: String) -> Result<(), LoopError> {
        self.emitter.emit(&McpServerStatusChanged {
            server_name: name,
            status: ServerState::Stopped.as_str().into(),
            error: None,
        })?;
        Ok(())
    }

    /// A server started again may be warned about again when it goes away (`None`: all).
    fn forget_gone(&self, server: Option<&str>) {
        if let Ok(mut gone) = self.mcp_gone.lock() {
            match server {
                Some(name) => {
                    gone.remove(name);
                }
                None => gone.clear(),
            }
        }
    }

    /// Records a warning the first time a call finds its server gone.
    pub(super) fn warn_server_gone(
        &self,
        server: &str,
        failure: &ToolFailure,
    ) -> Result<(), LoopError> {
        if failure.code.as_deref() != Some(SERVER_GONE_CODE) {
            return Ok(());
        }
        let first = self
            .mcp_gone
            .lock()
            .map(|mut gone| gone.insert(server.to_owned()))
            .unwrap_or(false);
        if first {
            self.warn_mcp(format!(
                "MCP server '{server}' stopped answering ({}); calls of its tools fail until it is enabled again or the servers are reloaded",
                failure.message
            ))?;
        }
        Ok(())
    }
}
