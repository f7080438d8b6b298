//! The MCP servers of one session: started together, each connected or failed with its
//! reason; one disabled, enabled or all reloaded on a client's word; their tools listed
//! again when they change; stopped together.
//!
//! Every change that alters the tools offered bumps [`McpHost::version`], so the session
//! rebuilds its tool set before the next model request (and only then).
//!
//! Some servers wait for the session's first use ([`McpHost::defer`]: those of plugins, as the
//! runtime starts them when the first message runs or a client asks about its servers); a
//! server the session disables from the start is listed and never started.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::join_all;

use crate::config::{McpServers, ServerConfig};
use crate::connection::{McpConnection, StartOptions};
use crate::error::{McpError, NotRegistered};

/// Where a server stands (the SDK's `McpServerStatus` values turnstile reaches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Connected; its tools are offered.
    Connected,
    /// It failed to start (or its start timed out).
    Failed,
    /// Stopped by the session (or disabled by a client).
    Disabled,
    /// Stopped by a client's `stopServer`: its configuration is kept, so it can be started
    /// again by name.
    Stopped,
    /// Waiting for the session's first use ([`McpHost::start_pending`]).
    Pending,
}

impl ServerState {
    /// The schema's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::Disabled => "disabled",
            // The runtime's word for a server stopped on its own.
            ServerState::Stopped => "not_configured",
            ServerState::Pending => "pending",
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

impl HostedServer {
    /// Whether it is connected and its connection is not known to be gone.
    pub fn is_running(&self) -> bool {
        self.state == ServerState::Connected
            && self.connection.as_ref().is_some_and(|c| !c.is_closed())
    }

    fn of(config: ServerConfig, started: Result<McpConnection, McpError>) -> Self {
        match started {
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
        }
    }
}

/// The servers of a session.
#[derive(Debug)]
pub struct McpHost {
    servers: Mutex<Vec<HostedServer>>,
    /// Held while the pending servers start, so two first uses start each once.
    starting: tokio::sync::Mutex<()>,
    options: StartOptions,
    version: AtomicU64,
}

/// Starts every server of `servers` at once; each start is bounded by its limit.
async fn start_all(servers: &[ServerConfig], options: &StartOptions) -> Vec<HostedServer> {
    let starts = servers.iter().map(|config| async move {
        HostedServer::of(config.clone(), McpConnection::start(config, options).await)
    });
    join_all(starts).await
}

impl McpHost {
    /// Starts every server at once; each start is bounded by its limit, so a hanging server
    /// delays the session by at most that long and ends as `failed`.
    pub async fn start(servers: &McpServers, options: &StartOptions) -> Self {
        McpHost {
            servers: Mutex::new(start_all(&servers.servers, options).await),
            starting: tokio::sync::Mutex::new(()),
            options: options.clone(),
            version: AtomicU64::new(0),
        }
    }

    /// Adds `configs` without starting them: each waits for [`Self::start_pending`], or is
    /// disabled for good when `disabled` names it (a client may still enable it). A name the
    /// host has already is left as it is; at most [`crate::MAX_SERVERS`] in all.
    pub fn defer(&self, configs: Vec<ServerConfig>, disabled: &[String]) {
        let Ok(mut servers) = self.servers.lock() else {
            return;
        };
        for config in configs {
            if servers.len() >= crate::MAX_SERVERS
                || servers.iter().any(|s| s.config.name == config.name)
            {
                continue;
            }
            let state = if disabled.contains(&config.name) {
                ServerState::Disabled
            } else {
                ServerState::Pending
            };
            servers.push(HostedServer {
                config,
                state,
                error: None,
                connection: None,
            });
        }
    }

    /// Whether a server waits for [`Self::start_pending`].
    pub fn has_pending(&self) -> bool {
        self.servers
            .lock()
            .is_ok_and(|s| s.iter().any(|s| s.state == ServerState::Pending))
    }

    /// Starts every pending server at once (each start bounded by its limit); returns them as
    /// they stand after, in order (none when nothing was pending). Two calls at once start each
    /// server once: the second waits for the first and finds nothing pending.
    pub async fn start_pending(&self) -> Vec<HostedServer> {
        let _gate = self.starting.lock().await;
        let pending: Vec<ServerConfig> = match self.servers.lock() {
            Ok(servers) => servers
                .iter()
                .filter(|s| s.state == ServerState::Pending)
                .map(|s| s.config.clone())
                .collect(),
            Err(_) => return Vec::new(),
        };
        if pending.is_empty() {
            return Vec::new();
        }
        let started = start_all(&pending, &self.options).await;
        let mut unplaced = Vec::new();
        if let Ok(mut servers) = self.servers.lock() {
            for server in started {
                // A server a client changed meanwhile (disabled, started) keeps that, and this
                // start's process goes.
                match servers.iter_mut().find(|s| {
                    s.config.name == server.config.name && s.state == ServerState::Pending
                }) {
                    Some(slot) => *slot = server,
                    None => unplaced.extend(server.connection),
                }
            }
        }
        join_all(unplaced.iter().map(|c| c.stop())).await;
        self.changed();
        self.servers()
            .into_iter()
            .filter(|s| pending.iter().any(|p| p.name == s.config.name))
            .collect()
    }

    /// The servers, in configuration order.
    pub fn servers(&self) -> Vec<HostedServer> {
        self.servers.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<HostedServer> {
        self.servers().into_iter().find(|s| s.config.name == name)
    }

    /// Bumped by every change of the tools offered (a server disabled, enabled, reloaded, or
    /// its tools listed again).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    fn changed(&self) {
        self.version.fetch_add(1, Ordering::SeqCst);
    }

    /// Stops the server `name` and offers none of its tools; `false` when no server has that
    /// name or it is already disabled.
    pub async fn disable(&self, name: &str) -> bool {
        self.take_down(name, |s| s != ServerState::Disabled, ServerState::Disabled)
            .await
    }

    /// Stops the server `name` if its state passes `from` and leaves it in `to`; `false` when
    /// no server has that name or its state does not pass.
    async fn take_down(
        &self,
        name: &str,
        from: impl Fn(ServerState) -> bool,
        to: ServerState,
    ) -> bool {
        let connection = {
            let Ok(mut servers) = self.servers.lock() else {
                return false;
            };
            let Some(server) = servers
                .iter_mut()
                .find(|s| s.config.name == name && from(s.state))
            else {
                return false;
            };
            server.state = to;
            server.error = None;
            server.connection.take()
        };
        if let Some(connection) = connection {
            connection.stop().await;
        }
        self.changed();
        true
    }

    /// Starts the server `name` again if it is disabled, failed or gone (a live one is left
    /// as it is); `None` when no server has that name, else where it stands after.
    pub async fn enable(&self, name: &str) -> Option<HostedServer> {
        let (config, gone) = {
            let servers = self.servers.lock().ok()?;
            let server = servers.iter().find(|s| s.config.name == name)?;
            let live = server.connection.as_ref().is_some_and(|c| !c.is_closed());
            if server.state == ServerState::Connected && live {
                return Some(server.clone());
            }
            (server.config.clone(), server.connection.clone())
        };
        if let Some(gone) = gone {
            gone.stop().await;
        }
        let started = HostedServer::of(
            config.clone(),
            McpConnection::start(&config, &self.options).await,
        );
        let mut servers = self.servers.lock().ok()?;
        let slot = servers.iter_mut().find(|s| s.config.name == name)?;
        if slot.state == ServerState::Connected
            && slot.connection.as_ref().is_some_and(|c| !c.is_closed())
        {
            // Enabled twice at once: the first start won; this one's process goes.
            drop(started);
            return Some(slot.clone());
        }
        *slot = started.clone();
        drop(servers);
        self.changed();
        Some(started)
    }

    /// Stops the server `name` (a client's `stopServer`): it is [`ServerState::Stopped`] and
    /// none of its tools are offered; `false` when no server has that name or it is neither
    /// connected nor failed (nothing to stop).
    pub async fn stop(&self, name: &str) -> bool {
        let running = |s| matches!(s, ServerState::Connected | ServerState::Failed);
        self.take_down(name, running, ServerState::Stopped).await
    }

    /// Starts the server `name` (a client's `startServer`): with `config`, from that
    /// configuration (a new server is added); without, from the one it has. A running server
    /// is left as it is (`Ok(None)`). A server started is last in the order, as the runtime
    /// lists it. `Err(())` when no configuration is known for `name`.
    pub async fn start_server(
        &self,
        name: &str,
        config: Option<ServerConfig>,
    ) -> Result<Option<HostedServer>, NotRegistered> {
        let known = self.server(name);
        if known.as_ref().is_some_and(HostedServer::is_running) {
            return Ok(None);
        }
        let config = config
            .or_else(|| known.map(|s| s.config))
            .ok_or(NotRegistered)?;
        Ok(Some(self.replace(name, config).await))
    }

    /// Stops the server `name` if it runs and starts it again (a client's `restartServer`),
    /// from `config` when given; last in the order after. `Err(())` when no configuration is
    /// known for `name`.
    pub async fn restart_server(
        &self,
        name: &str,
        config: Option<ServerConfig>,
    ) -> Result<HostedServer, NotRegistered> {
        let config = config
            .or_else(|| self.server(name).map(|s| s.config))
            .ok_or(NotRegistered)?;
        Ok(self.replace(name, config).await)
    }

    /// Stops what runs under `name`, starts `config` and puts it last.
    async fn replace(&self, name: &str, config: ServerConfig) -> HostedServer {
        let old = self.servers.lock().ok().and_then(|mut servers| {
            let at = servers.iter().position(|s| s.config.name == name)?;
            servers.remove(at).connection
        });
        if let Some(old) = old {
            old.stop().await;
        }
        let started = HostedServer::of(
            config.clone(),
            McpConnection::start(&config, &self.options).await,
        );
        if let Ok(mut servers) = self.servers.lock() {
            if let Some(i) = servers.iter().position(|s| s.config.name == name) {
                // Started twice at once: the later start wins; the earlier one's process goes.
                servers.remove(i);
            }
            servers.push(started.clone());
        }
        self.changed();
        started
    }

    /// Takes `configs` as the servers' configuration (`session.mcp.reload` re-reading the
    /// files, `session.mcp.reloadWithConfig`), started by the next [`Self::reload`]: a server
    /// of the same name gets the new configuration, a new name is added (at most
    /// [`crate::MAX_SERVERS`] in all); without `keep_others`, every other server is stopped
    /// and removed.
    pub async fn configure(&self, configs: Vec<ServerConfig>, keep_others: bool) {
        let removed: Vec<Arc<McpConnection>> = match self.servers.lock() {
            Ok(mut servers) => {
                let mut removed = Vec::new();
                if !keep_others {
                    let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut *servers)
                        .into_iter()
                        .partition(|s| configs.iter().any(|c| c.name == s.config.name));
                    *servers = keep;
                    removed.extend(gone.into_iter().filter_map(|s| s.connection));
                }
                for config in configs {
                    if let Some(slot) = servers.iter_mut().find(|s| s.config.name == config.name) {
                        slot.config = config;
                    } else if servers.len() < crate::MAX_SERVERS {
                        servers.push(HostedServer {
                            config,
                            state: ServerState::Stopped,
                            error: None,
                            connection: None,
                        });
                    }
                }
                removed
            }
            Err(_) => return,
        };
        join_all(removed.iter().map(|c| c.stop())).await;
        self.changed();
    }

    /// Stops every server that is not disabled and starts it again (a failed one too): the
    /// connections are new and the tools listed afresh. Disabled servers stay disabled.
    pub async fn reload(&self) {
        let (configs, connections): (Vec<ServerConfig>, Vec<Arc<McpConnection>>) =
            match self.servers.lock() {
                Ok(mut servers) => {
                    let configs = servers
                        .iter()
                        .filter(|s| s.state != ServerState::Disabled)
                        .map(|s| s.config.clone())
                        .collect();
                    let connections = servers
                        .iter_mut()
                        .filter_map(|s| s.connection.take())
                        .collect();
                    (configs, connections)
                }
                Err(_) => return,
            };
        join_all(connections.iter().map(|c| c.stop())).await;
        let started = start_all(&configs, &self.options).await;
        if let Ok(mut servers) = self.servers.lock() {
            for server in started {
                if let Some(slot) = servers
                    .iter_mut()
                    .find(|s| s.config.name == server.config.name)
                {
                    *slot = server;
                }
            }
        }
        self.changed();
    }

    /// Lists again the tools of every connected server that said they changed; returns
    /// those servers' names (a server whose listing failed is left with its old tools and
    /// named with the error).
    pub async fn refresh_changed(&self) -> Vec<(String, Result<(), McpError>)> {
        let changed: Vec<(String, Arc<McpConnection>)> = self
            .servers()
            .into_iter()
            .filter_map(|s| Some((s.config.name, s.connection?)))
            .filter(|(_, c)| c.tools_changed())
            .collect();
        let mut refreshed = Vec::new();
        for (name, connection) in changed {
            match connection.refresh_tools().await {
                Ok(false) => {}
                Ok(true) => refreshed.push((name, Ok(()))),
                Err(e) => refreshed.push((name, Err(e))),
            }
        }
        if refreshed.iter().any(|(_, r)| r.is_ok()) {
            self.changed();
        }
        refreshed
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
