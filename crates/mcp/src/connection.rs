//! One live MCP server: started (stdio child or streamable HTTP), its tools listed once,
//! calls with a time limit, stopped. A server that died answers every later call at once
//! with [`McpError::Closed`].

use std::sync::Mutex;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, Transport};
use crate::error::McpError;
use crate::result::CallOutcome;
use crate::stdio::{self, ChildGuard};

/// How long a start may take when the configuration gives no `timeout` (the runtime's).
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a call may take when the configuration gives no `timeout`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// The most tools one server may offer (a hostile server cannot grow the request unbounded).
pub const MAX_TOOLS: usize = 512;

/// What a start needs besides the server's configuration.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The working directory of a stdio server without a `cwd` of its own.
    pub cwd: std::path::PathBuf,
    /// The start's limit when the configuration has none.
    pub start_timeout: Duration,
    /// The calls' limit when the configuration has none.
    pub call_timeout: Duration,
}

impl StartOptions {
    /// The defaults for servers working in `cwd`.
    pub fn new(cwd: impl Into<std::path::PathBuf>) -> Self {
        StartOptions {
            cwd: cwd.into(),
            start_timeout: DEFAULT_START_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// One tool a server offers, as it described it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    /// The tool's own name on its server.
    pub name: String,
    /// Its title, if the server gave one.
    pub title: Option<String>,
    /// Its description (empty if none).
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
    /// The server says the tool only reads (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// A connected server.
pub struct McpConnection {
    name: String,
    transport: &'static str,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    child: Mutex<Option<ChildGuard>>,
    tools: Vec<McpToolInfo>,
    call_timeout: Duration,
    /// Cancelled when the connection ends (the server closed it or `stop` was called).
    closed: CancellationToken,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("tools", &self.tools.len())
            .finish()
    }
}

fn client_config() -> ClientConfig {
    let mut info = ClientConfig::default();
    info.client_info.name = "turnstile".into();
    info.client_info.version = env!("CARGO_PKG_VERSION").into();
    info
}

impl McpConnection {
    /// Starts the server, runs the initialize handshake and lists its tools, all within the
    /// start limit; a failure leaves no process behind.
    pub async fn start(config: &ServerConfig, options: &StartOptions) -> Result<Self, McpError> {
        let limit = config.timeout.unwrap_or(options.start_timeout);
        let call_timeout = config.timeout.unwrap_or(options.call_timeout);
        let mut child = None;
        let started = tokio::time::timeout(limit, async {
            let service = match &config.transport {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let cwd = cwd.clone().unwrap_or_else(|| options.cwd.clone());
                    let (transport, guard) = stdio::spawn(command, args, env, &cwd)?;
                    let guard = child.insert(guard);
                    match client_config().serve(transport).await {
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
                    crate::http::connect(url, headers, client_config()).await?
                }
            };
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| McpError::Initialize(format!("listing tools failed: {e}")))?;
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
        let mut tools: Vec<McpToolInfo> = listed
            .into_iter()
            .filter(|t| config.offers(&t.name))
            .take(MAX_TOOLS)
            .map(|t| McpToolInfo {
                read_only: t
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
                title: t.title.clone(),
                description: t.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: Value::Object((*t.input_schema).clone()),
                name: t.name.into_owned(),
            })
            .collect();
        // The runtime offers a server's tools sorted by name.
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools.dedup_by(|a, b| a.name == b.name);
        let peer = service.peer().clone();
        Ok(McpConnection {
            name: config.name.clone(),
            transport: config.transport.kind(),
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            child: Mutex::new(child),
            tools,
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

    /// The tools offered, sorted by name, filtered by the configuration's `tools`.
    pub fn tools(&self) -> &[McpToolInfo] {
        &self.tools
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
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
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
            Ok(Ok(result)) => Ok(CallOutcome::from_result(&result)),
            Ok(Err(e)) => Err(self.classify(e)),
        }
    }

    fn classify(&self, e: ServiceError) -> McpError {
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
