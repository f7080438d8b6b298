//! `turnstile --headless [--stdio | --port N]` and `turnstile serve`: the runtime the Copilot
//! SDK clients spawn. JSON-RPC 2.0 with `Content-Length` framing on stdin/stdout (`--stdio`)
//! or on TCP 127.0.0.1 (`--port N`, 0 or absent picks a free port; `CLI server listening on
//! port N` is printed on stdout, as the Copilot CLI prints it). Logs go to stderr only: on
//! stdio, stdout is the protocol.
//!
//! A TCP client is served only after `connect` with the connection token: the one in
//! `COPILOT_CONNECTION_TOKEN` (the SDK clients set it to a fresh UUID for a runtime they
//! start), else one generated at start and printed on stdout after the port.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::StateRoot;
use turnstile_loop::AgentMode;
use turnstile_providers::OpenAiConfig;
use turnstile_server::framing::DEFAULT_MAX_FRAME_BYTES;
use turnstile_server::{
    ConnectionToken, DEFAULT_CONNECT_TIMEOUT, DEFAULT_INFLIGHT_FRAME_BYTES, DEFAULT_TAKEOVER_WAIT,
    Server, ServerConfig, TcpServer, serve_stdio,
};

use crate::config::{Effective, Source};
use crate::served_store::ServedNats;
use crate::store::StoreArgs;

/// Exit code after a second Ctrl-C or SIGTERM (128 + SIGINT).
const EXIT_INTERRUPTED: i32 = 130;

/// The variable holding the connection token TCP clients must present (the Copilot CLI's).
const CONNECTION_TOKEN_VAR: &str = "COPILOT_CONNECTION_TOKEN";

/// Flags of the SDK server; the SDK clients pass `--headless --no-auto-update --stdio
/// [--log-level L] [--auth-token-env VAR] [--no-auto-login] [--session-idle-timeout S]
/// [--remote]`, and whatever their user adds (`cliArgs`): the Copilot CLI's own flags, which
/// are accepted here with their meaning.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Copilot SDK server (turnstile --headless, turnstile serve)")]
pub struct ServeArgs {
    /// Run as the Copilot SDK runtime (JSON-RPC server); what the SDK clients pass.
    #[arg(long)]
    pub headless: bool,
    /// Serve one client on stdin/stdout.
    #[arg(long, conflicts_with = "port")]
    pub stdio: bool,
    /// Serve TCP on 127.0.0.1:N and print `CLI server listening on port N` (0 picks a free port; the default without --stdio); clients must connect with COPILOT_CONNECTION_TOKEN, or the token printed next when it is unset.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Log level on stderr: none, error, warning, info, debug, all (TURNSTILE_LOG overrides).
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Environment variable holding a GitHub token (reported by auth.getStatus; turnstile never logs in to GitHub).
    #[arg(long, value_name = "VAR")]
    pub auth_token_env: Option<String>,
    /// Close sessions idle for this many seconds (0 keeps them open); their journals stay resumable.
    #[arg(long, value_name = "SECONDS")]
    pub session_idle_timeout: Option<u64>,
    /// Accepted for the SDK clients: turnstile never updates itself.
    #[arg(long)]
    pub no_auto_update: bool,
    /// Accepted for the SDK clients: turnstile never logs in.
    #[arg(long)]
    pub no_auto_login: bool,
    /// Accepted for the SDK clients; remote sessions are not supported (a warning is logged).
    #[arg(long)]
    pub remote: bool,
    /// Accepted for the SDK clients and ignored.
    #[arg(long, value_name = "ID", hide = true)]
    pub cli_login_sync_integration_id: Option<String>,
    /// Allow everything: every tool without asking and any path (the Copilot CLI's --allow-all-tools --allow-all-paths --allow-all-urls).
    #[arg(long, visible_alias = "allow-all")]
    pub yolo: bool,
    /// Let file tools reach any path (the Copilot CLI's spelling of --allow-outside-cwd).
    #[arg(long)]
    pub allow_all_paths: bool,
    /// Accepted for the Copilot CLI's users and ignored: web_fetch's hosts are allowed one by
    /// one (--allow-url HOST, a client's approval), or all with --yolo / --allow-all-tools.
    #[arg(long)]
    pub allow_all_urls: bool,
    /// Accepted: the server prints no color.
    #[arg(long)]
    pub no_color: bool,
    /// Write the logs to a file in DIR (`process-<ms>-<pid>.log`, as the Copilot CLI names them) instead of stderr.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// The Copilot home, as COPILOT_HOME (deprecated in the Copilot CLI): sessions live in DIR/session-state (--state-dir wins).
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,
    /// Reasoning effort of sessions that name none.
    #[arg(long, visible_alias = "reasoning-effort", value_name = "LEVEL",
          value_parser = ["none", "minimal", "low", "medium", "high", "xhigh", "max"])]
    pub effort: Option<String>,
    /// Agent mode of sessions' sends that name none: interactive, plan or autopilot.
    #[arg(long, value_name = "MODE", value_parser = ["interactive", "plan", "autopilot"])]
    pub mode: Option<String>,
    /// A directory to list as allowed for file access (repeatable); turnstile's file tools reach only the working directory, or every path with --allow-all-paths.
    #[arg(long, value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// Only these built-in tools, in every session (comma-separated or repeated).
    #[arg(long, value_name = "TOOLS", num_args = 0.., value_delimiter = ',')]
    pub available_tools: Option<Vec<String>>,
    /// MCP servers every session starts besides its client's `mcpServers`, as `{"mcpServers": {...}}` text or `@FILE` (the Copilot CLI's flag; repeatable, a later server replacing one of the same name). Without it a session starts only its client's servers.
    #[arg(long = "additional-mcp-config", value_name = "JSON|@FILE")]
    pub additional_mcp_config: Vec<String>,
    /// These built-in tools in no session (comma-separated or repeated).
    #[arg(long, value_name = "TOOLS", num_args = 0.., value_delimiter = ',')]
    pub excluded_tools: Vec<String>,
    /// Model of sessions created without a provider (the Copilot CLI's --model) [default: the settings file's `model`, else gpt-4.1].
    #[arg(
        long = "default-model",
        visible_alias = "model",
        env = "TURNSTILE_MODEL",
        value_name = "MODEL"
    )]
    pub model: Option<String>,
    /// Base URL (…/v1) of the OpenAI-compatible server of sessions created without a provider (key: TURNSTILE_API_KEY or OPENAI_API_KEY) [default: COPILOT_API_URL when set, the Copilot endpoint with the GitHub token; else http://127.0.0.1:8000/v1].
    #[arg(
        long = "default-base-url",
        env = "TURNSTILE_BASE_URL",
        value_name = "URL"
    )]
    pub base_url: Option<String>,
    #[command(flatten)]
    pub session: crate::session_flags::SessionFlags,
    /// Largest JSON-RPC frame accepted, in bytes; bigger frames are refused and skipped.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME_BYTES, value_name = "BYTES")]
    pub max_frame_bytes: usize,
    /// Seconds a session.resume of a session another turnstile server holds waits for it to go idle and be handed over.
    #[arg(long, default_value_t = DEFAULT_TAKEOVER_WAIT.as_secs(), value_name = "SECONDS")]
    pub takeover_wait: u64,
    /// Most TCP clients served at once; one more is answered with a SERVER_BUSY error and closed [default: half of the descriptor limit (RLIMIT_NOFILE) left after 64 reserved, at most 4096: 480 for 1024].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Seconds a TCP client has to send `connect` with the token before its connection is closed (0 waits for ever).
    #[arg(long, default_value_t = DEFAULT_CONNECT_TIMEOUT.as_secs(), value_name = "SECONDS")]
    pub connect_timeout: u64,
    /// Bytes of frames all clients together may be sending at once; a large frame waits for room, then is refused.
    #[arg(long, default_value_t = DEFAULT_INFLIGHT_FRAME_BYTES, value_name = "BYTES")]
    pub max_inflight_frame_bytes: usize,
}

/// The log file `--log-dir` asks for (created with its directory), named as the Copilot CLI
/// names its own.
pub fn log_file(args: &ServeArgs) -> Result<Option<std::fs::File>> {
    let Some(dir) = &args.log_dir else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--log-dir {}: cannot create the directory", dir.display()))?;
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let path = dir.join(format!("process-{millis}-{}.log", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("--log-dir: cannot create {}", path.display()))?;
    Ok(Some(file))
}

/// The tracing filter for `--log-level` (the SDKs' names), `warn` when absent or unknown.
pub fn log_filter(args: &ServeArgs) -> &'static str {
    match args
        .log_level
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("none" | "off") => "off",
        Some("error") => "error",
        Some("info") => "info",
        Some("debug") => "debug",
        Some("all" | "trace") => "trace",
        _ => "warn",
    }
}

/// Takes `COPILOT_CONNECTION_TOKEN` out of the environment and returns it (`None` when unset
/// or empty), as the Copilot CLI does: no process a session starts (tools, hooks, MCP
/// servers, a provider's key command) inherits the secret that lets a client in.
///
/// # Safety
///
/// No other thread may be running: changing the environment races with any thread reading
/// it (`getenv` in libc included).
pub unsafe fn take_connection_token() -> Result<Option<ConnectionToken>> {
    let value = std::env::var_os(CONNECTION_TOKEN_VAR);
    // SAFETY: the caller guarantees this process has no other thread.
    unsafe { std::env::remove_var(CONNECTION_TOKEN_VAR) };
    let Some(value) = value else {
        return Ok(None);
    };
    let text = value
        .into_string()
        .map_err(|_| anyhow::anyhow!("{CONNECTION_TOKEN_VAR} is not valid UTF-8"))?;
    Ok(ConnectionToken::given(text))
}

/// `turnstile` without a subcommand: serves when `--headless` is given.
pub fn run_headless(
    args: &ServeArgs,
    state_dir: Option<&Path>,
    store: &StoreArgs,
    connection_token: Option<ConnectionToken>,
) -> Result<ExitCode> {
    if !args.headless {
        bail!(
            "no command given: see `turnstile --help` (the Copilot SDK runtime is `turnstile --headless --stdio` or `turnstile --headless --port N`)"
        );
    }
    run(args, state_dir, store, connection_token)
}

/// `turnstile serve`, TCP clients let in by `connection_token` (the user's, from
/// [`take_connection_token`]), or by one generated here when the user gave none.
pub fn run(
    args: &ServeArgs,
    state_dir: Option<&Path>,
    store: &StoreArgs,
    connection_token: Option<ConnectionToken>,
) -> Result<ExitCode> {
    let mut config = server_config(args, state_dir)?;
    let nats = store.nats()?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let otel = crate::otel_live::LiveTraces::from_env();
    config.watchers = otel
        .export()
        .cloned()
        .map(|o| Arc::new(o) as Arc<dyn turnstile_server::watchers::SessionWatchers>);
    let result = runtime.block_on(async {
        if let Some(nats) = nats {
            let store = crate::store::open_nats(nats).await?;
            config.remote_store = Some(Arc::new(ServedNats::new(store)));
        }
        serve(args, config, connection_token).await
    });
    // The sessions' last spans, while the runtime's workers still run their streams' ends.
    drop(otel);
    // The stdin reader may sit in a blocking read that nothing will end: do not wait for it.
    runtime.shutdown_background();
    result
}

fn server_config(args: &ServeArgs, state_dir: Option<&Path>) -> Result<ServerConfig> {
    if args.remote {
        eprintln!("warning: --remote is not supported by turnstile; serving local sessions only");
    }
    // --state-dir names the sessions' directory itself; --config-dir the home above it.
    let from_config_dir = args.config_dir.as_ref().map(|d| d.join("session-state"));
    if args.config_dir.is_some() {
        eprintln!(
            "warning: --config-dir is deprecated in the Copilot CLI; COPILOT_HOME does the same"
        );
    }
    let root = StateRoot::resolve(state_dir.or(from_config_dir.as_deref()))?;
    let mut config = ServerConfig::new(root);
    let mut flags = args.session.config_flags();
    flags.allow_all_tools |= args.yolo;
    flags.model = args.model.clone();
    let effective = crate::config::effective(&flags)?;
    config.default_model = default_model(args, &effective, std::env::var("COPILOT_API_URL").ok())?;
    config.default_model.timeouts = args.session.model_timeouts(&effective);
    // The configured servers are read (a broken file is an error here, as for `run`, and
    // permission patterns may name them), but an SDK session starts only the servers its
    // client gives in `mcpServers`, as with the Copilot CLI (differential scenario
    // `mcp-config-session`).
    let mcp = crate::mcp_servers::configured(&effective, None)?;
    config.mcp_servers = additional_mcp_servers(&args.additional_mcp_config)?;
    let names = [mcp.names(), config.mcp_servers.names()].concat();
    config.permissions = crate::session_flags::policy(&effective, &names)?;
    config.durability = crate::session_flags::durability(&effective);
    config.allow_outside_cwd = args.session.allow_outside_cwd || args.allow_all_paths || args.yolo;
    config.sandbox = crate::session_flags::SessionFlags::sandbox(&effective)?;
    config.default_mode = match args.mode.as_deref() {
        None => AgentMode::Interactive,
        Some(name) => AgentMode::parse(name)
            .with_context(|| format!("--mode {name}: expected interactive, plan or autopilot"))?,
    };
    config.default_reasoning_effort = args.effort.clone();
    config.available_tools = args.available_tools.clone();
    config.excluded_tools = args.excluded_tools.clone();
    for dir in &args.add_dir {
        if !dir.is_dir() {
            bail!("--add-dir {}: not a directory", dir.display());
        }
    }
    config.additional_dirs = args.add_dir.clone();
    config.inflight_frame_bytes = args.max_inflight_frame_bytes;
    config.takeover_wait = Duration::from_secs(args.takeover_wait);
    config.hook_trust = crate::session_flags::hook_trust(args.session.trust_hooks, &effective);
    config.max_autopilot_continues = args.session.max_autopilot_continues;
    (config.max_parallel_tools, config.max_parallel_agents) = args.session.parallel(&effective);
    config.context_window = args.session.context_window;
    config.session_idle_timeout = args
        .session_idle_timeout
        .filter(|s| *s > 0)
        .map(Duration::from_secs);
    config.max_frame_bytes = args.max_frame_bytes;
    if let Some(n) = args.max_connections {
        config.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
    }
    config.connect_timeout =
        (args.connect_timeout > 0).then(|| Duration::from_secs(args.connect_timeout));
    // Where a session's own GitHub token is looked up (`gitHubToken`).
    config.github_api_url = turnstile_providers::github_api_url_from_env();
    config.allow_get_provider_endpoint =
        std::env::var("COPILOT_ALLOW_GET_PROVIDER_ENDPOINT").is_ok_and(|v| v == "true");
    if let Some(var) = &args.auth_token_env {
        config.auth_token = std::env::var(var).ok().filter(|t| !t.is_empty());
        if config.auth_token.is_none() {
            eprintln!("warning: --auth-token-env {var}: the variable is not set");
        }
    }
    Ok(config)
}

/// The servers of `--additional-mcp-config`: each value JSON text or `@FILE`, in order.
fn additional_mcp_servers(values: &[String]) -> Result<turnstile_mcp::McpServers> {
    let mut servers = turnstile_mcp::McpServers::default();
    for value in values {
        let more = match value.strip_prefix('@') {
            Some(path) => turnstile_mcp::McpServers::read_file(Path::new(path))?
                .with_context(|| format!("--additional-mcp-config @{path}: no such file"))?,
            None => turnstile_mcp::McpServers::parse_file_text(
                value,
                Path::new("--additional-mcp-config"),
            )?,
        };
        servers = servers.overlay(more);
    }
    Ok(servers)
}

/// The model of sessions created without a provider. The GitHub token for the Copilot
/// endpoint is `--auth-token-env VAR`'s, else `COPILOT_SDK_AUTH_TOKEN`, `GH_TOKEN`,
/// `GITHUB_TOKEN`, as the Copilot CLI reads it. An endpoint named for this server
/// (`--default-base-url`, then the SDK's `COPILOT_API_URL`) comes first; else the provider the
/// settings files or `COPILOT_PROVIDER_*` name, as `run` would reach it; else a local
/// OpenAI-compatible server. The model name is the effective one in every case (the flag,
/// the environment, the settings' `model`, `gpt-4.1`).
fn default_model(
    args: &ServeArgs,
    effective: &Effective,
    copilot_api_url: Option<String>,
) -> Result<OpenAiConfig> {
    let limits = args.session.model_limits(effective);
    let model = effective.model.value.clone();
    let openai = |base_url: String| {
        let mut config = OpenAiConfig::new(base_url, model.clone());
        config.api_key = OpenAiConfig::api_key_from_env();
        config.limits = limits;
        config
    };
    if let Some(url) = args.base_url.clone().filter(|u| !u.trim().is_empty()) {
        return Ok(openai(url));
    }
    if let Some(url) = copilot_api_url.filter(|u| !u.trim().is_empty()) {
        let token = OpenAiConfig::github_token_from_env(args.auth_token_env.as_deref());
        let mut config = OpenAiConfig::copilot(url, model, token);
        config.limits = limits;
        return Ok(config);
    }
    if effective.base_url.source != Source::Default {
        return crate::provider_flags::model_config(effective, limits);
    }
    Ok(openai(crate::config::DEFAULT_BASE_URL.into()))
}

/// Serves on stdio (no token: the client is whoever started this process) or on TCP.
async fn serve(
    args: &ServeArgs,
    config: ServerConfig,
    connection_token: Option<ConnectionToken>,
) -> Result<ExitCode> {
    let server = Server::new(config);
    let signals = tokio::spawn(stop_on_signals(server.clone()));
    let result = if args.stdio {
        serve_stdio(&server).await;
        Ok(ExitCode::SUCCESS)
    } else {
        // The Copilot CLI lets any client in when no token was given; any local user could
        // then create a session that runs commands as this one, so a token is made instead.
        let generated = connection_token.is_none();
        let token = connection_token.unwrap_or_else(ConnectionToken::generate);
        let shown = generated.then(|| token.reveal().to_owned());
        let tcp = TcpServer::bind(server.clone(), args.port.unwrap_or(0), token).await?;
        let port = tcp.local_addr().port();
        announce(port, shown.as_deref()).context("cannot write to stdout")?;
        tcp.run().await?;
        Ok(ExitCode::SUCCESS)
    };
    signals.abort();
    result
}

/// Prints the port, in the Copilot CLI's words (the SDK clients look for `listening on port
/// N` on stdout), then the token when it was generated here, where the Copilot CLI prints its
/// warning that no token was set. Only stdout sees the token, never the log.
fn announce(port: u16, generated: Option<&str>) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "CLI server listening on port {port}")?;
    if let Some(token) = generated {
        writeln!(
            out,
            "No {CONNECTION_TOKEN_VAR} was set, so clients must connect with this generated token: {token}"
        )?;
    }
    out.flush()
}

/// SIGINT/SIGTERM: close every session cleanly and stop; a second one exits at once.
async fn stop_on_signals(server: Server) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    next_signal(&mut term).await;
    // A client that stops the runtime sends `runtime.shutdown` and then a SIGTERM: no news,
    // but the stdio client stays connected after `runtime.shutdown` (as with the Copilot
    // CLI), so this signal ends the process once the sessions are closed.
    if server.stop_requested() {
        server.shutdown().await;
        std::process::exit(0);
    }
    if !server.shutdown_token().is_cancelled() {
        eprintln!("stopping: closing sessions (signal again to exit at once)");
        server.shutdown_token().cancel();
    }
    next_signal(&mut term).await;
    std::process::exit(EXIT_INTERRUPTED);
}

async fn next_signal(term: &mut Option<tokio::signal::unix::Signal>) {
    match term {
        Some(term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
