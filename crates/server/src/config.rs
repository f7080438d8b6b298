//! What the server is started with: where sessions live, the default model, the permission
//! policy for clients that do not decide permissions themselves, and transport limits.

use std::path::PathBuf;
use std::time::Duration;

use turnstile_journal::{Durability, StateRoot};
use turnstile_loop::AgentMode;
use turnstile_loop::autopilot::DEFAULT_MAX_CONTINUES;
use turnstile_loop::hooks::HookTrust;
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::OpenAiConfig;

use crate::framing::DEFAULT_MAX_FRAME_BYTES;

/// Default budget of frame bytes being received by all connections together (256 MiB: four
/// frames of the largest size).
pub const DEFAULT_INFLIGHT_FRAME_BYTES: usize = 256 << 20;

/// Default wait of a large frame for room in the budget.
pub const DEFAULT_FRAME_BUDGET_WAIT: Duration = Duration::from_secs(30);

/// Default time a TCP connection has to authenticate (`connect` with the token) before it
/// is closed: an SDK client sends `connect` first thing, so this is only ever reached by a
/// connection that is doing nothing.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default wait of a takeover for the holder to be idle.
pub const DEFAULT_TAKEOVER_WAIT: Duration = Duration::from_secs(10);

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where sessions live (`$COPILOT_HOME/session-state` for the SDK clients).
    pub state_root: StateRoot,
    /// The model of sessions created without `provider`: its name, endpoint and wire format
    /// (an OpenAI-compatible server, the Copilot endpoint of `COPILOT_API_URL`, or any
    /// provider the settings name), and the limits on answers every session gets.
    pub default_model: OpenAiConfig,
    /// Permission policy for clients that do not handle permission requests.
    pub permissions: PermissionPolicy,
    /// MCP servers every session starts besides its own `mcpServers` param (none for
    /// `turnstile serve`, which like the Copilot CLI gives an SDK session only the servers its
    /// client names; an embedder may set some).
    pub mcp_servers: turnstile_mcp::McpServers,
    /// When journals are fsynced.
    pub durability: Durability,
    /// Let file tools reach outside a session's working directory.
    pub allow_outside_cwd: bool,
    /// Tool processes run in the kernel sandbox (false with `--no-sandbox`).
    pub sandbox: bool,
    /// Whose hook files sessions asking for `enableFileHooks` may run.
    pub hook_trust: HookTrust,
    /// Nudges before an autopilot send gives up.
    pub max_autopilot_continues: u32,
    /// Most built-in tool calls of one turn running at once (`--max-parallel-tools`).
    pub max_parallel_tools: usize,
    /// Most sub-agents of a session working at once (`--max-parallel-agents`).
    pub max_parallel_agents: usize,
    /// Close sessions idle for this long (`--session-idle-timeout`); `None` keeps them open.
    pub session_idle_timeout: Option<Duration>,
    /// Largest frame body accepted.
    pub max_frame_bytes: usize,
    /// Bytes of frame bodies all connections together may be receiving at once (raised to
    /// `max_frame_bytes` when smaller, so any accepted frame can fit).
    pub inflight_frame_bytes: usize,
    /// How long a large frame waits for room in that budget before it is refused.
    pub frame_budget_wait: Duration,
    /// Most TCP connections served at once (`--max-connections`); the one beyond is answered
    /// with a `SERVER_BUSY` error and closed. Defaults to
    /// [`crate::limits::default_max_connections`] (from `RLIMIT_NOFILE`).
    pub max_connections: usize,
    /// How long a TCP connection may go without authenticating before it is closed
    /// (`--connect-timeout`); one that never sends a frame is closed when it runs out.
    /// `None` waits for ever (stdio never waits: its client needs no token).
    pub connect_timeout: Option<Duration>,
    /// A GitHub token handed over through `--auth-token-env` (reported by `auth.getStatus`).
    pub auth_token: Option<String>,
    /// The GitHub API a session's own token is looked up at (`COPILOT_DEBUG_GITHUB_API_URL`,
    /// else `https://api.github.com`).
    pub github_api_url: String,
    /// `session.provider.getEndpoint` answers (it hands out the model's credential): set by
    /// `COPILOT_ALLOW_GET_PROVIDER_ENDPOINT=true`, as in the Copilot CLI.
    pub allow_get_provider_endpoint: bool,
    /// Working directory of sessions that name none.
    pub default_cwd: PathBuf,
    /// Agent mode of sends that name none, until `session.mode.set` (`--mode`).
    pub default_mode: AgentMode,
    /// Reasoning effort of sessions that name none (`--effort`).
    pub default_reasoning_effort: Option<String>,
    /// Built-in tools every session is limited to (`--available-tools`); a session's own
    /// `availableTools` narrows it further.
    pub available_tools: Option<Vec<String>>,
    /// Built-in tools no session gets (`--excluded-tools`), besides a session's own.
    pub excluded_tools: Vec<String>,
    /// Directories named with `--add-dir`, listed by `session.permissions.paths.list`.
    pub additional_dirs: Vec<PathBuf>,
    /// How long a `session.resume` of a session another turnstile server holds waits for it
    /// to be idle and handed over before it is refused (`--takeover-wait`).
    pub takeover_wait: Duration,
    /// The journal store sessions live in besides the state directory (`--store nats://…`);
    /// `None` keeps them in the state directory only.
    pub remote_store: Option<std::sync::Arc<dyn crate::remote_store::RemoteStore>>,
    /// The models' context window in tokens (`--context-window`), for sessions whose provider
    /// names none; `None` looks the model up in the known-models table.
    pub context_window: Option<u64>,
    /// Watchers of every session's events besides its clients (live OpenTelemetry traces);
    /// `None` watches nothing.
    pub watchers: Option<std::sync::Arc<dyn crate::watchers::SessionWatchers>>,
}

impl ServerConfig {
    /// Defaults around a state root: model `gpt-4.1` at `http://127.0.0.1:8000/v1`, nothing
    /// allowed without asking, turn durability, the process's working directory.
    pub fn new(state_root: StateRoot) -> Self {
        ServerConfig {
            state_root,
            default_model: OpenAiConfig::new("http://127.0.0.1:8000/v1", "gpt-4.1"),
            permissions: PermissionPolicy::default(),
            mcp_servers: turnstile_mcp::McpServers::default(),
            durability: Durability::Turn,
            allow_outside_cwd: false,
            sandbox: true,
            hook_trust: HookTrust::default(),
            max_autopilot_continues: DEFAULT_MAX_CONTINUES,
            max_parallel_tools: turnstile_loop::session::DEFAULT_PARALLEL_TOOLS,
            max_parallel_agents: turnstile_loop::session::DEFAULT_PARALLEL_AGENTS,
            session_idle_timeout: None,
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            inflight_frame_bytes: DEFAULT_INFLIGHT_FRAME_BYTES,
            frame_budget_wait: DEFAULT_FRAME_BUDGET_WAIT,
            max_connections: crate::limits::default_max_connections(),
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            auth_token: None,
            github_api_url: turnstile_providers::DEFAULT_GITHUB_API_URL.to_owned(),
            allow_get_provider_endpoint: false,
            default_cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            default_mode: AgentMode::Interactive,
            default_reasoning_effort: None,
            available_tools: None,
            excluded_tools: Vec::new(),
            additional_dirs: Vec::new(),
            takeover_wait: DEFAULT_TAKEOVER_WAIT,
            remote_store: None,
            context_window: None,
            watchers: None,
        }
    }
}
