//! One live MCP server: started (stdio child or streamable HTTP), its tools listed (again
//! when it says they changed), calls with a time limit, stopped. A server that died answers
//! every later call at once with [`McpError::Closed`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, MetaObject, RequestMetaObject};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use turnstile_sandbox::Sandboxing;

use crate::client::{Client, client};
use crate::config::{ServerConfig, Transport};
use crate::error::McpError;
use crate::listing::{self, ToolListing};
use crate::result::CallOutcome;
use crate::stdio::{self, ChildGuard};

/// How long a start may take when the configuration gives no `timeout` (the runtime's).
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a call may take when the configuration gives no `timeout`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// What a start needs besides the server's configuration.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The working directory of a stdio server without a `cwd` of its own.
    pub cwd: std::path::PathBuf,
    /// The start's limit when the configuration has none.
    pub start_timeout: Duration,
    /// The calls' limit when the configuration has none.
    pub call_timeout: Duration,
    /// What a stdio server's process enters before it runs (the session's sandbox for the
    /// processes the user configured); unconfined by default.
    pub sandbox: Sandboxing,
}

impl StartOptions {
    /// The defaults for servers working in `cwd`.
    pub fn new(cwd: impl Into<std::path::PathBuf>) -> Self {
        StartOptions {
            cwd: cwd.into(),
            start_timeout: DEFAULT_START_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            sandbox: Sandboxing::Off,
        }
    }
}

/// A connected server.
pub struct McpConnection {
    name: String,
    transport: &'static str,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Client>>>,
    child: Mutex<Option<ChildGuard>>,
    config: ServerConfig,
    listing: RwLock<Arc<ToolListing>>,
    tools_changed: Arc<AtomicBool>,
    call_timeout: Duration,
    /// Cancelled when the connection ends (the server closed it or `stop` was called).
    closed: CancellationToken,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("tools", &self.listing().tools.len())
            .finish()
    }
}

impl McpConnection {
    /// Starts the server, runs the initialize handshake and lists its tools, all within the
    /// start limit; a failure leaves no process behind.
    pub async fn start(config: &ServerConfig, options: &StartOptions) -> Result<Self, McpError> {
        let limit = config.timeout.unwrap_or(options.start_timeout);
        let call_timeout = config.timeout.unwrap_or(options.call_timeout);
        let mut child = None;
        let tools_changed = Arc::new(AtomicBool::new(false));
        let started = tokio::time::timeout(limit, async {
            let service = match &config.transport {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let cwd = cwd.clone().unwrap_or_else(|| options.cwd.clone());
                    let (transport, guard) =
                        stdio::spawn(command, args, env, &cwd, &options.sandbox)?;
                    let guard = child.insert(guard);
                    match client(&tools_changed).serve(transport).await {
                        Ok(service) => service,
                        Err(e) => {
                            let tail = guard.stderr_at_exit().await;
                            return Err(if tail.is_empty() {
                                McpError::Initialize(e.to_string())
                            } else {
                                McpError::Initialize(format!("{e} (stderr: {tail})"))
                            });
                        }
                    }
                }
                Transport::Http { url, headers } => {
                    crate::http::connect(url, headers, client(&tools_changed)).await?
                }
            };
            let tools = listing::list_tools(service.peer(), config).await?;
            Ok::<_, McpError>((service, tools))
        })
        .await;
        let (service, listed) = match started {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                if let Some(mut child) = child {
                    child.kill();
                }
                return Err(e);
            }
            Err(_) => {
                if let Some(mut child) = child {
                    child.kill();
                }
                return Err(McpError::StartTimeout(limit));
            }
        };
        let peer = service.peer().clone();
        Ok(McpConnection {
            name: config.name.clone(),
            transport: config.transport.kind(),
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            child: Mutex::new(child),
            config: config.clone(),
            listing: RwLock::new(Arc::new(listed)),
            tools_changed,
            call_timeout,
            closed: CancellationToken::new(),
        })
    }

    /// The config key of the server.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `stdio` or `http`.
    pub fn transport(&self) -> &'static str {
        self.transport
    }

    /// The last listing: the tools offered (sorted by name, filtered by the configuration's
    /// `tools`, within the caps, [`crate::MAX_TOOLS`] and the others) and what the caps left out.
    pub fn listing(&self) -> Arc<ToolListing> {
        self.listing
            .read()
            .map(|l| Arc::clone(&l))
            .unwrap_or_default()
    }

    /// Whether the server said its tools changed since they were last listed.
    pub fn tools_changed(&self) -> bool {
        self.tools_changed.load(Ordering::SeqCst)
    }

    /// Lists the tools again (within the call limit) after the server said they changed;
    /// `Ok(false)` when it had not.
    pub async fn refresh_tools(&self) -> Result<bool, McpError> {
        if !self.tools_changed.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        let listed = tokio::time::timeout(
            self.call_timeout,
            listing::list_tools(&self.peer, &self.config),
        )
        .await
        .map_err(|_| McpError::CallTimeout(self.call_timeout))??;
        if let Ok(mut listing) = self.listing.write() {
            *listing = Arc::new(listed);
        }
        Ok(true)
    }

    /// The process id of a stdio server.
    pub fn pid(&self) -> Option<u32> {
        self.child
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(ChildGuard::pid))
    }

    /// Whether the server is known to be gone.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.peer.is_transport_closed()
    }

    /// Calls a tool; `cancel` (the session's abort) stops waiting. A server that does not
    /// answer within the limit, or goes away, is an error, never a wait without end.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<CallOutcome, McpError> {
        self.call_with_meta(tool, arguments, None, cancel).await
    }

    /// [`Self::call`] with the request's `_meta` (`None`: the request carries none), as a
    /// `preMcpToolCall` hook chose it.
    pub async fn call_with_meta(
        &self,
        tool: &str,
        arguments: Value,
        meta: Option<serde_json::Map<String, Value>>,
        cancel: &CancellationToken,
    ) -> Result<CallOutcome, McpError> {
        let result = self.call_result(tool, arguments, meta, cancel).await?;
        Ok(CallOutcome::from_result(&result))
    }

    /// Calls a tool and answers the server's result as it sent it, within the same limits.
    pub(crate) async fn call_result(
        &self,
        tool: &str,
        arguments: Value,
        meta: Option<serde_json::Map<String, Value>>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.meta = meta.map(|m| RequestMetaObject(MetaObject(m)));
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(McpError::Request(format!(
                    "the arguments must be a JSON object, got {other}"
                )));
            }
        };
        let call = self.peer.call_tool(params);
        let result = tokio::select! {
            r = tokio::time::timeout(self.call_timeout, call) => r,
            _ = cancel.cancelled() => return Err(McpError::Request("cancelled".into())),
            _ = self.closed.cancelled() => return Err(McpError::Closed),
        };
        match result {
            Err(_) => Err(McpError::CallTimeout(self.call_timeout)),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(self.classify(e)),
        }
    }

    /// The peer to send requests to, with the limit every request waits at most.
    pub(crate) fn requests(&self) -> (&Peer<RoleClient>, Duration) {
        (&self.peer, self.call_timeout)
    }

    pub(crate) fn classify(&self, e: ServiceError) -> McpError {
        match e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.closed.cancel();
                McpError::Closed
            }
            ServiceError::Cancelled { .. } if self.peer.is_transport_closed() => {
                self.closed.cancel();
                McpError::Closed
            }
            ServiceError::Timeout { timeout } => McpError::CallTimeout(timeout),
            ServiceError::McpError(e) => McpError::Request(e.message.to_string()),
            other => McpError::Request(other.to_string()),
        }
    }

    /// Stops the server: the connection is closed, a stdio server's process group killed.
    /// Calls waiting on it end with [`McpError::Closed`].
    pub async fn stop(&self) {
        self.closed.cancel();
        // The group first, while the child is not reaped: its id cannot have been reused.
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            child.kill();
        }
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_secs(2)).await;
        }
    }
}

impl Drop for McpConnection {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.get_mut().ok().and_then(Option::take) {
            child.kill();
        }
    }
}
