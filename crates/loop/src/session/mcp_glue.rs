//! What a session says about its MCP servers: each server's status and the summary at the
//! start (ephemeral, as the runtime announces them), a `session.warning` for a server that
//! failed to start (so the journal says why its tools are missing) and for one that went away
//! during a call, once per server.

use turnstile_journal::payload::{
    McpServerStatusChanged, McpServerSummary, McpServersLoaded, SessionWarning,
};
use turnstile_mcp::ServerState;

use super::LoopError;
use super::actor::Actor;
use crate::tools::ToolFailure;
use crate::tools::mcp::SERVER_GONE_CODE;

/// `warningType` of the session's MCP warnings.
const WARNING_TYPE: &str = "mcp";

impl Actor {
    /// Announces the servers' status (nothing without servers).
    pub(super) fn announce_mcp(&self) -> Result<(), LoopError> {
        let Some(host) = &self.parts.config.mcp else {
            return Ok(());
        };
        let servers = host.servers();
        if servers.is_empty() {
            return Ok(());
        }
        let mut summaries = Vec::with_capacity(servers.len());
        for server in &servers {
            let error = server.error.as_ref().map(ToString::to_string);
            self.emitter.emit(&McpServerStatusChanged {
                server_name: server.config.name.clone(),
                status: server.state.as_str().into(),
                error: error.clone(),
            })?;
            if server.state == ServerState::Failed {
                self.emitter.emit(&SessionWarning {
                    warning_type: WARNING_TYPE.into(),
                    message: format!(
                        "MCP server '{}' is not available: {}; its tools are not offered",
                        server.config.name,
                        error.as_deref().unwrap_or("it failed to start")
                    ),
                    ..Default::default()
                })?;
            }
            summaries.push(McpServerSummary {
                name: server.config.name.clone(),
                status: server.state.as_str().into(),
                error,
                transport: Some(server.config.transport.kind().into()),
                ..Default::default()
            });
        }
        self.emitter
            .emit(&McpServersLoaded { servers: summaries })?;
        Ok(())
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
            self.emitter.emit(&SessionWarning {
                warning_type: WARNING_TYPE.into(),
                message: format!(
                    "MCP server '{server}' stopped answering ({}); calls of its tools fail until the session is restarted",
                    failure.message
                ),
                ..Default::default()
            })?;
        }
        Ok(())
    }
}
