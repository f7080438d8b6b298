//! Opening and closing sessions: `session.create`, `session.resume`, `session.detach`
//! (alias `session.destroy`) and `session.delete` (the listings are `listing.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::layout::LayoutError;
use turnstile_journal::writer_lock::WriterLock;
use turnstile_journal::{
    Event, JournalReader, LockError, ReadMode, SessionSummary, Timestamp, Uuid, WriteError,
};
use turnstile_loop::hooks::{CommandHooks, HookRunner};
use turnstile_loop::prompt::SystemMessageConfig;
use turnstile_loop::session::LoopError;
use turnstile_loop::tools::{ToolRegistry, ToolSpec};
use turnstile_loop::{InfiniteSessions, SessionConfig, SessionHandle, SessionParts};
use turnstile_mcp::{McpHost, McpServers, StartOptions};

use super::Ctx;
use super::{open_session, session_id};
use crate::client_bridge::{ClientBridge, ClientCapabilities};
use crate::handover;
use crate::permission_state::SessionPermissions;
use crate::provider::{self, ProviderParams};
use crate::remote_store::{AttachMode, RemoteSession, StoreError};
use crate::rpc::{RpcError, codes};
use crate::section_transform::ClientTransformer;
use crate::sessions::{OpenSession, SessionInfo, lifecycle_params, summarize};

/// A tool the client implements (`tools[]` of create/resume).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolParams {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
    overrides_built_in_tool: Option<bool>,
    /// Runs without a `custom-tool` permission request.
    skip_permission: Option<bool>,
}

/// `defaultAgent` of create/resume: what the main agent is not given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DefaultAgentParams {
    excluded_tools: Option<Vec<String>>,
}

/// The params `session.create` and `session.resume` share (the SDKs send many more; the
/// ones this engine has no use for are ignored, see docs/protocol.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenParams {
    session_id: Option<String>,
    model: Option<String>,
    provider: Option<ProviderParams>,
    working_directory: Option<String>,
    tools: Option<Vec<ToolParams>>,
    system_message: Option<SystemMessageConfig>,
    streaming: Option<bool>,
    request_permission: Option<bool>,
    hooks: Option<bool>,
    enable_file_hooks: Option<bool>,
    available_tools: Option<Vec<String>>,
    excluded_tools: Option<Vec<String>>,
    reasoning_effort: Option<String>,
    default_agent: Option<DefaultAgentParams>,
    /// Keep a dead engine's pending permission and client tool requests open (`true`) or
    /// close them as interrupted.
    continue_pending_work: Option<bool>,
    /// MCP servers of the session, by name, in the Copilot CLI's format (on top of the
    /// server's own, from its configuration files).
    mcp_servers: Option<Value>,
    infinite_sessions: Option<InfiniteSessionParams>,
}

/// `infiniteSessions` of `session.create`/`session.resume` (the SDK's `InfiniteSessionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfiniteSessionParams {
    enabled: Option<bool>,
    background_compaction_threshold: Option<f64>,
    buffer_exhaustion_threshold: Option<f64>,
}

impl InfiniteSessionParams {
    /// The loop's settings, the runtime's defaults for what is left out; a threshold outside
    /// 0–1 is refused by name.
    fn settings(&self) -> Result<InfiniteSessions, RpcError> {
        let defaults = InfiniteSessions::default();
        let share = |name: &str, value: Option<f64>, default: f64| match value {
            None => Ok(default),
            Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
            Some(v) => Err(RpcError::invalid_params(format!(
                "infiniteSessions.{name} is {v}; it is a share of the context window, from 0.0 to 1.0"
            ))),
        };
        Ok(InfiniteSessions {
            enabled: self.enabled.unwrap_or(defaults.enabled),
            background_threshold: share(
                "backgroundCompactionThreshold",
                self.background_compaction_threshold,
                defaults.background_threshold,
            )?,
            buffer_exhaustion_threshold: share(
                "bufferExhaustionThreshold",
                self.buffer_exhaustion_threshold,
                defaults.buffer_exhaustion_threshold,
            )?,
        })
    }
}

/// `session.create`.
pub(crate) async fn create(ctx: &Ctx<'_>, params: OpenParams) -> Result<Value, RpcError> {
    let id = match params.session_id.as_deref() {
        Some(text) => session_id(text)?,
        None => Uuid::new_v4(),
    };
    if ctx.server.open_or_wait(id).await.is_some() {
        return Err(RpcError::new(
            codes::SESSION_IN_USE,
            format!("session {id} already exists and is open"),
        ));
    }
    let servers = mcp_servers(ctx, &params)?;
    let (mut parts, bridge, info) = build(ctx, id, &params)?;
    let root = ctx.server.config().state_root.clone();
    let remote = attach_remote(ctx, id, AttachMode::Create).await?;
    parts.config.journal_sink = remote.as_ref().and_then(|r| r.sink());
    // Under the store's lease: a create that loses the session id starts no server.
    parts.config.mcp = start_mcp(&servers, &parts.config.cwd).await;
    let (handle, events) = match SessionHandle::create_subscribed(&root, Some(id), parts) {
        Ok(opened) => opened,
        Err(e) => {
            give_up_remote(id, remote).await;
            return Err(loop_error(id, e));
        }
    };
    let session = register(
        ctx,
        vec![Arc::clone(ctx.peer)],
        handle,
        events,
        bridge,
        info,
        remote,
    )
    .await?;
    ctx.server
        .broadcast_lifecycle(&lifecycle_params("session.created", id, &session.info()));
    Ok(opened(id))
}

/// `session.resume`: takes the journal's lock, closes what a crash or a disconnect left open
/// (interrupted tool calls, an open turn) and continues with the client's new settings.
///
/// A session already open in this server is opened in this connection too, as in the Copilot
/// CLI: every connection that has it open gets its events. When it is idle it is reopened
/// with the new client's settings (tools, hooks, provider), the other connections staying on
/// it; when it is running a message the connection joins it as it is.
pub(crate) async fn resume(ctx: &Ctx<'_>, params: OpenParams) -> Result<Value, RpcError> {
    let Some(text) = params.session_id.as_deref() else {
        return Err(RpcError::invalid_params(
            "invalid params: missing field `sessionId`",
        ));
    };
    let root = ctx.server.config().state_root.clone();
    // Ids are checked before any path is built from them.
    let Ok(id) = turnstile_journal::parse_session_id(text) else {
        return Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!("Session not found: {text}. Session ids are UUIDs."),
        ));
    };
    let mut clients = vec![Arc::clone(ctx.peer)];
    if let Some(open) = ctx.server.open_or_wait(id).await {
        if open.handle().is_busy() {
            tracing::info!(session = %id, "joined a session running a message; its settings stay");
            open.attach(Arc::clone(ctx.peer));
            return Ok(opened(id));
        }
        clients.extend(
            open.clients()
                .into_iter()
                .filter(|p| p.id() != ctx.peer.id()),
        );
        ctx.server
            .close_session(&open, "reopened by session.resume")
            .await;
    }
    // With a remote store, the working copy is made from the store under the writer's lease.
    let remote = attach_remote(ctx, id, AttachMode::Resume).await?;
    if !root.session(id).events.is_file() {
        give_up_remote(id, remote).await;
        return Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!(
                "Session not found: {id}. There is no such session in {}.",
                root.dir().display()
            ),
        ));
    }
    let servers = mcp_servers(ctx, &params)?;
    let cwd = working_dir(
        &ctx.server.config().default_cwd,
        params.working_directory.as_deref(),
    )?;
    let mcp = start_mcp(&servers, &cwd).await;
    let resumed = match resume_or_take_over(ctx, id, &params, remote.as_ref(), mcp.as_ref()).await {
        Ok(resumed) => resumed,
        Err(e) => {
            give_up_remote(id, remote).await;
            return Err(e);
        }
    };
    let Resumed {
        handle,
        report,
        events,
        bridge,
        mut info,
    } = resumed;
    if report.was_active {
        tracing::info!(
            session = %id,
            interrupted = report.closed_tool_calls.len(),
            "resumed a session that ended mid-work"
        );
    }
    if let Ok(summary) = SessionSummary::read(&root.session(id)) {
        info.start_time = summary.created.unwrap_or(info.start_time);
        info.summary = summary.first_prompt.as_deref().map(summarize);
    }
    register(ctx, clients, handle, events, bridge, info, remote).await?;
    Ok(opened(id))
}

/// Resumes the journal; when another process holds it, asks that process to hand it over.
async fn resume_or_take_over(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
    remote: Option<&Arc<dyn RemoteSession>>,
    mcp: Option<&Arc<McpHost>>,
) -> Result<Resumed, RpcError> {
    let root = &ctx.server.config().state_root;
    let sink = remote.and_then(|r| r.sink());
    match resume_from_disk(ctx, id, params, sink.clone(), mcp)? {
        Ok(opened) => Ok(opened),
        Err(e) if held_by_another_writer(&e) => {
            let wait = ctx.server.config().takeover_wait;
            match handover::ask(&root.session(id).dir, wait).await {
                Some(handover::Answer::Released) => {
                    resume_from_disk(ctx, id, params, sink, mcp)?.map_err(|e| loop_error(id, e))
                }
                Some(handover::Answer::Busy) => {
                    let mut error = loop_error(id, e);
                    error.message = format!(
                        "{}; it stayed busy for {}s, so it was not handed over: try again once it is idle",
                        error.message,
                        wait.as_secs_f32()
                    );
                    Err(error)
                }
                None => Err(loop_error(id, e)),
            }
        }
        Err(e) => Err(loop_error(id, e)),
    }
}

/// The session attached to the server's remote store, if it has one (`--store`).
async fn attach_remote(
    ctx: &Ctx<'_>,
    id: Uuid,
    mode: AttachMode,
) -> Result<Option<Arc<dyn RemoteSession>>, RpcError> {
    let Some(store) = ctx.server.config().remote_store.clone() else {
        return Ok(None);
    };
    let root = &ctx.server.config().state_root;
    match store.attach(id, root, mode).await {
        Ok(attached) => Ok(Some(attached)),
        Err(StoreError::NotFound { .. }) => Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!(
                "Session not found: {id}. There is no such session in {}.",
                store.describe()
            ),
        )),
        Err(e) => Err(RpcError::new(
            codes::SESSION_FAILED,
            format!("cannot open session {id} in {}: {e}", store.describe()),
        )),
    }
}

/// Gives the store's lease up after opening failed.
async fn give_up_remote(id: Uuid, remote: Option<Arc<dyn RemoteSession>>) {
    if let Some(remote) = remote
        && let Err(e) = remote.detach().await
    {
        tracing::warn!(session = %id, error = %e, "the store's lease was not given up");
    }
}

/// A session resumed from its journal, with what the server keeps beside it.
struct Resumed {
    handle: SessionHandle,
    report: turnstile_loop::ResumeReport,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<turnstile_journal::Event>>,
    bridge: Arc<ClientBridge>,
    info: SessionInfo,
}

/// Builds the parts from the params (a bad param is the outer error) and resumes the journal
/// (the inner error is the loop's, to tell a held lock from other failures).
fn resume_from_disk(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
    sink: Option<Arc<dyn turnstile_journal::JournalSink>>,
    mcp: Option<&Arc<McpHost>>,
) -> Result<Result<Resumed, LoopError>, RpcError> {
    let (mut parts, bridge, info) = build(ctx, id, params)?;
    parts.config.journal_sink = sink;
    parts.config.mcp = mcp.cloned();
    let root = &ctx.server.config().state_root;
    let options = turnstile_loop::ResumeOptions {
        continue_pending_work: params.continue_pending_work == Some(true),
        continue_pending_work_named: params.continue_pending_work.is_some(),
        // Released once the session is registered (`register`), so the client can answer the
        // requests announced again.
        hold_pending_work: true,
    };
    Ok(
        SessionHandle::resume_with(root, id, parts, options).map(|(handle, report, events)| {
            Resumed {
                handle,
                report,
                events,
                bridge,
                info,
            }
        }),
    )
}

/// Whether opening failed because another process holds the writer lock.
fn held_by_another_writer(e: &LoopError) -> bool {
    matches!(e, LoopError::Journal(WriteError::Locked(_)))
}

fn opened(id: Uuid) -> Value {
    json!({"sessionId": id.to_string(), "capabilities": {}})
}

/// Starts forwarding to `clients` and registers the session; a caller that left meanwhile is
/// dropped from it (and the session closed when nobody else has it open).
async fn register(
    ctx: &Ctx<'_>,
    clients: Vec<Arc<crate::peer::Peer>>,
    handle: SessionHandle,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<turnstile_journal::Event>>,
    bridge: Arc<ClientBridge>,
    info: SessionInfo,
    remote: Option<Arc<dyn RemoteSession>>,
) -> Result<Arc<OpenSession>, RpcError> {
    let id = handle.id();
    let session = OpenSession::start(
        ctx.server.broadcaster(),
        clients,
        handle,
        events,
        bridge,
        info,
        remote,
    );
    if !ctx.server.insert_session(Arc::clone(&session)) {
        session.close("opened twice").await;
        session.mark_closed();
        return Err(RpcError::new(
            codes::SESSION_IN_USE,
            format!("session {id} was opened by another request at the same time"),
        ));
    }
    session.handle().release_pending_work();
    // A connection that left while we were opening is gone from the server already.
    for peer in session.clients() {
        if peer.is_closed() {
            session.detach(peer.id());
        }
    }
    if session.clients().is_empty() {
        ctx.server
            .remember_closed(id, "its last client disconnected");
        ctx.server
            .close_session(&session, "the client disconnected")
            .await;
    }
    if ctx.peer.is_closed() {
        return Err(RpcError::new(
            codes::SESSION_FAILED,
            "the client disconnected",
        ));
    }
    handover::listen(
        ctx.server.clone(),
        Arc::downgrade(&session),
        ctx.server.config().state_root.session(id).dir,
        session.handover_token(),
    );
    Ok(session)
}

/// The session's MCP servers: the server's configured ones with the params' `mcpServers` on
/// top.
fn mcp_servers(ctx: &Ctx<'_>, params: &OpenParams) -> Result<McpServers, RpcError> {
    let mut servers = ctx.server.config().mcp_servers.clone();
    if let Some(value) = &params.mcp_servers {
        let asked = McpServers::from_value(value, "params")
            .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?;
        servers = servers.overlay(asked);
    }
    Ok(servers)
}

/// Starts the session's MCP servers (`None` when there are none). A server that fails to
/// start does not fail the call: the session announces it and offers the others' tools.
async fn start_mcp(servers: &McpServers, cwd: &Path) -> Option<Arc<McpHost>> {
    if servers.is_empty() {
        return None;
    }
    Some(Arc::new(
        McpHost::start(servers, &StartOptions::new(cwd)).await,
    ))
}

/// Builds the loop's parts, the bridge and the tracked info from the params.
fn build(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
) -> Result<(SessionParts, Arc<ClientBridge>, SessionInfo), RpcError> {
    let config = ctx.server.config();
    let cwd = working_dir(&config.default_cwd, params.working_directory.as_deref())?;
    let chosen = provider::choose(
        &config.default_model,
        params.model.as_deref(),
        params.provider.as_ref(),
    )?;
    let mut registry = builtin_tools(
        params.available_tools.as_deref(),
        params.excluded_tools.as_deref(),
    );
    // The server's own filters (`--available-tools`, `--excluded-tools`) apply on top.
    let server_filtered = builtin_tools(
        config.available_tools.as_deref(),
        Some(&config.excluded_tools),
    );
    let names: Vec<String> = registry.names().into_iter().map(str::to_owned).collect();
    for name in names {
        if server_filtered.get(&name).is_none() {
            registry.unregister(&name);
        }
    }
    // The session adds the MCP tools after the built-ins (and keeps them in step with the
    // servers).
    let client_tools = client_tools(&registry, params.tools.as_deref().unwrap_or_default())?;
    let capabilities = ClientCapabilities {
        tools: client_tools,
        permissions: params.request_permission.unwrap_or(false),
        hooks: params.hooks.unwrap_or(false),
    };
    let bridge = Arc::new(ClientBridge::new(
        id.to_string(),
        Arc::clone(ctx.peer),
        capabilities.clone(),
    ));
    let mut session_config = SessionConfig::new(&cwd, chosen.model.clone());
    session_config.durability = config.durability;
    // The loop records mode changes from this one (`session.mode_changed`).
    session_config.mode = config.default_mode;
    session_config.max_autopilot_continues = config.max_autopilot_continues;
    session_config.permissions = config.permissions.clone();
    session_config.allow_outside_cwd = config.allow_outside_cwd;
    // The SDKs stream deltas only when asked to.
    session_config.streaming = params.streaming.unwrap_or(false);
    // The loop builds the prompt from the client's systemMessage (append, replace, customize
    // with sections).
    session_config.system_message = params.system_message.clone().unwrap_or_default();
    session_config.reasoning_effort = params
        .reasoning_effort
        .clone()
        .or_else(|| config.default_reasoning_effort.clone());
    if let Some(infinite) = &params.infinite_sessions {
        session_config.infinite_sessions = infinite.settings()?;
    }
    // The window: the provider's `maxPromptTokens`, else the server's `--context-window`,
    // else the known-models table (in the loop).
    session_config.token_limit = params
        .provider
        .as_ref()
        .and_then(|p| p.max_prompt_tokens)
        .filter(|n| *n >= 1.0)
        .map(|n| n as u64)
        .or(config.context_window);
    session_config.excluded_tools = params
        .default_agent
        .as_ref()
        .and_then(|a| a.excluded_tools.clone())
        .unwrap_or_default();
    let hooks: Option<Arc<dyn HookRunner>> = if capabilities.hooks {
        Some(Arc::clone(&bridge) as Arc<dyn HookRunner>)
    } else if params.enable_file_hooks == Some(true) {
        let (hooks, warnings) = CommandHooks::load(&cwd, &config.hook_trust)
            .map_err(|e| RpcError::invalid_params(format!("cannot load the hook files: {e}")))?;
        for warning in warnings {
            tracing::warn!(%warning, "hook files not loaded");
        }
        Some(Arc::new(hooks) as Arc<dyn HookRunner>)
    } else {
        None
    };
    let permissions = Arc::new(SessionPermissions::new(
        Arc::clone(&session_config.live_permissions),
        &cwd,
        &config.additional_dirs,
        config.state_root.session(id).dir,
    ));
    super::permissions::open_with_location_rules(config.state_root.dir(), &cwd, &permissions);
    let parts = SessionParts {
        config: session_config,
        provider: chosen.provider,
        tools: Arc::new(registry),
        hooks,
        external_tools: (!capabilities.tools.is_empty())
            .then(|| Arc::clone(&bridge) as Arc<dyn turnstile_loop::client::ExternalTools>),
        permission_asker: capabilities
            .permissions
            .then(|| Arc::clone(&bridge) as Arc<dyn turnstile_loop::client::PermissionAsker>),
        section_transformer: Some(Arc::new(ClientTransformer::new(
            id.to_string(),
            Arc::clone(ctx.peer),
        ))),
    };
    let now = Timestamp::now().to_text();
    let info = SessionInfo {
        mode: config.default_mode,
        model: chosen.model,
        start_time: now.clone(),
        modified_time: now,
        summary: None,
        name: None,
        reasoning_effort: params
            .reasoning_effort
            .clone()
            .or_else(|| config.default_reasoning_effort.clone()),
        permissions,
    };
    Ok((parts, bridge, info))
}

fn working_dir(default: &Path, asked: Option<&str>) -> Result<PathBuf, RpcError> {
    let dir = match asked {
        Some(d) if !d.is_empty() => default.join(d),
        _ => default.to_path_buf(),
    };
    let dir = dir.canonicalize().map_err(|e| {
        RpcError::invalid_params(format!(
            "workingDirectory {} cannot be used: {e}",
            dir.display()
        ))
    })?;
    if !dir.is_dir() {
        return Err(RpcError::invalid_params(format!(
            "workingDirectory {} is not a directory",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Whether a tool filter entry names the built-in `name` (`bash`, `builtin:bash`, `builtin:*`).
fn names_builtin(entry: &str, name: &str) -> bool {
    entry == name || entry == "builtin:*" || entry.strip_prefix("builtin:") == Some(name)
}

/// The built-in tools after `availableTools`/`excludedTools` (exclusion wins).
fn builtin_tools(available: Option<&[String]>, excluded: Option<&[String]>) -> ToolRegistry {
    let mut registry = ToolRegistry::builtin(true);
    let names: Vec<String> = registry.names().into_iter().map(str::to_owned).collect();
    for name in names {
        let kept = available.is_none_or(|list| list.iter().any(|e| names_builtin(e, &name)));
        let dropped = excluded.is_some_and(|list| list.iter().any(|e| names_builtin(e, &name)));
        if !kept || dropped {
            registry.unregister(&name);
        }
    }
    registry
}

/// Validates the client's tools.
fn client_tools(registry: &ToolRegistry, tools: &[ToolParams]) -> Result<Vec<ToolSpec>, RpcError> {
    let mut specs: Vec<ToolSpec> = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let name = &tool.name;
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(RpcError::invalid_params(format!(
                "tools[{i}].name {name:?} must be 1 to 64 characters of [a-zA-Z0-9_-]"
            )));
        }
        if specs.iter().any(|s| &s.name == name) {
            return Err(RpcError::invalid_params(format!(
                "tools[{i}]: tool {name:?} is declared twice"
            )));
        }
        if registry.get(name).is_some() && tool.overrides_built_in_tool != Some(true) {
            return Err(RpcError::invalid_params(format!(
                "tools[{i}]: {name:?} is the name of a built-in tool; set overridesBuiltInTool to replace it"
            )));
        }
        let parameters = match &tool.parameters {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "tools[{i}].parameters must be a JSON Schema object"
                )));
            }
        };
        specs.push(ToolSpec {
            name: name.clone(),
            description: tool.description.clone().unwrap_or_default(),
            parameters,
            skip_permission: tool.skip_permission == Some(true),
        });
    }
    Ok(specs)
}

/// Maps a loop error at open time to a JSON-RPC error.
fn loop_error(id: Uuid, e: LoopError) -> RpcError {
    let code = match &e {
        LoopError::Layout(LayoutError::NotFound { .. })
        | LoopError::Journal(WriteError::Layout(LayoutError::NotFound { .. })) => {
            codes::SESSION_NOT_FOUND
        }
        LoopError::Layout(LayoutError::AlreadyExists { .. })
        | LoopError::Journal(WriteError::Layout(LayoutError::AlreadyExists { .. }))
        | LoopError::Journal(WriteError::Locked(_)) => codes::SESSION_IN_USE,
        _ => codes::SESSION_FAILED,
    };
    RpcError::new(code, format!("session {id}: {e}"))
}

/// `sessionId` alone.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionIdParams {
    session_id: String,
}

impl SessionIdParams {
    /// The session id as sent.
    pub(crate) fn id(&self) -> &str {
        &self.session_id
    }
}

/// `session.detach` (`destroy`): this connection no longer has the session
/// open; once no connection has it, it is closed (a running message is aborted). The journal
/// stays and the session can be resumed.
pub(crate) async fn detach(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let peer = ctx.peer.id();
    if session.is_open_in(peer) {
        if session.clients().len() == 1 {
            // The last client sees the session close (`session.shutdown`), as with the
            // Copilot CLI, so it stays attached until the close is done.
            ctx.server
                .close_session(&session, "detached by the client")
                .await;
            session.detach(peer);
        } else if session.detach(peer) == 0 {
            ctx.server
                .close_session(&session, "detached by the client")
                .await;
        }
    }
    Ok(json!({"success": true}))
}

/// `session.delete`: removes a session from disk. A session open in this server is closed
/// first, for every connection that has it open (as the Copilot CLI does); one held by
/// another process is refused with the holder named.
pub(crate) async fn delete(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    // The runtime's answer for an unknown session; a non-UUID is one, and builds no path.
    let not_found = |text: &str| {
        failure(format!(
            "Error: Session file not found for {text} (no such session in {})",
            ctx.server.config().state_root.dir().display()
        ))
    };
    let Ok(id) = turnstile_journal::parse_session_id(&params.session_id) else {
        return Ok(not_found(&params.session_id));
    };
    // A stored journal is the record other hosts resume and audit from: it is never deleted
    // through one server (decisions.md).
    if let Some(store) = &ctx.server.config().remote_store {
        return Ok(failure(format!(
            "session {id} is kept in {}; a stored session is not deleted through the SDK server (export it with `turnstile export` first, then remove it from the stream with the store's own tools)",
            store.describe()
        )));
    }
    if let Some(open) = ctx.server.open_or_wait(id).await {
        ctx.server.remember_closed(id, "it was deleted");
        ctx.server.close_session(&open, "deleted").await;
    }
    let paths = ctx.server.config().state_root.session(id);
    if !paths.dir.is_dir() {
        return Ok(not_found(&id.to_string()));
    }
    // Hold the writer lock while deleting: a process writing the journal keeps it.
    let lock = match WriterLock::acquire(&paths.lock) {
        Ok(lock) => lock,
        Err(e @ LockError::Held { .. }) => return Ok(failure(e.to_string())),
        Err(e) => return Ok(failure(format!("cannot lock session {id}: {e}"))),
    };
    let removed = std::fs::remove_dir_all(&paths.dir);
    drop(lock);
    if let Err(e) = removed {
        return Ok(failure(format!(
            "cannot delete {}: {e}",
            paths.dir.display()
        )));
    }
    ctx.server
        .broadcast_lifecycle(&json!({"type": "session.deleted", "sessionId": id.to_string()}));
    Ok(json!({"success": true}))
}

fn failure(error: String) -> Value {
    json!({"success": false, "error": error})
}

/// Reads the persisted events of a session (a torn last line, being written right now, is
/// left out). Events a rewind removed, and its marker, are left out too: the runtime cuts them
/// from its file.
pub(crate) fn persisted_events(path: &Path) -> Result<Vec<Value>, RpcError> {
    let reader = JournalReader::open(path, ReadMode::Lenient)
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    let mut events = Vec::new();
    for record in reader {
        match record {
            Ok(record) => events.push(record.event),
            Err(turnstile_journal::ReadError::TornTail { .. }) => break,
            Err(e) => return Err(RpcError::new(codes::SESSION_FAILED, e.to_string())),
        }
    }
    Ok(turnstile_replay::visible_events(events)
        .iter()
        .map(Event::to_live_value)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_filters() {
        let all = builtin_tools(None, None);
        assert!(all.get("bash").is_some());
        let only = builtin_tools(Some(&["builtin:view".into(), "grep".into()]), None);
        assert_eq!(only.names(), vec!["view", "grep"]);
        let without = builtin_tools(None, Some(&["builtin:bash".into()]));
        assert!(without.get("bash").is_none() && without.get("view").is_some());
        let none = builtin_tools(None, Some(&["builtin:*".into()]));
        assert!(none.is_empty());
    }

    #[test]
    fn client_tools_are_checked() {
        let registry = builtin_tools(None, None);
        let tool = |name: &str, over: Option<bool>| ToolParams {
            name: name.into(),
            description: None,
            parameters: None,
            overrides_built_in_tool: over,
            skip_permission: None,
        };
        assert!(client_tools(&registry, &[tool("weather", None)]).is_ok());
        assert!(client_tools(&registry, &[tool("bash", None)]).is_err());
        assert!(client_tools(&registry, &[tool("bash", Some(true))]).is_ok());
        assert!(client_tools(&registry, &[tool("a b", None)]).is_err());
        assert!(client_tools(&registry, &[tool("x", None), tool("x", None)]).is_err());
    }
}
