//! Routes a request to its method, after the connection-token check, and parses its params.
//!
//! [`SERVED`] is the one table of the methods this server answers: each entry is a name and its
//! handler, so routing ([`call`]) and the list (`docs/protocol.md`, written from it by
//! `scripts/protocol-methods.py`, and checked against it by this file's test) cannot disagree.
//! Adding a method is its function in a `methods` file plus one line here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::methods::{
    Ctx, accounts, agent, commands, compaction_control, context_info, event_log, extensions, fork,
    github_auth, history, instructions, lifecycle, listing, llm_inference, log, mcp, mcp_apps,
    mcp_builtin, mcp_config, mcp_launch, mcp_oauth, mcp_resources, mcp_sampling, mcp_servers,
    metadata, name_auto, options, pending, permission_mode, permissions, plan, plan_todos,
    provider_endpoint, queue, reasoning_effort, rewind, schedule, server as server_methods,
    server_gates, session, session_services, sessions_delete, sessions_enrich, sessions_open,
    sessions_state, shell, shutdown, skills, suspend, tools_list, ui, unsupported, usage,
    user_settings, working_directory, workspace_checkpoints, workspace_diff, workspace_paste,
    workspaces,
};
use crate::peer::Peer;
use crate::rpc::{RpcError, kind_of};
use crate::server::Server;

/// A handler's answer, still to be awaited. Boxed so that methods that wait and methods that
/// do not share one type (a sync handler runs at the first poll, as it did when called
/// directly).
pub(crate) type Answer<'a> = Pin<Box<dyn Future<Output = Result<Value, RpcError>> + Send + 'a>>;

/// What answers a method: the call's context and its params as sent in.
pub(crate) type Handler = for<'a> fn(&'a Ctx<'a>, Value) -> Answer<'a>;

/// One served method.
pub(crate) struct Method {
    /// The name a client calls.
    pub(crate) name: &'static str,
    /// What answers it.
    pub(crate) handler: Handler,
}

/// A [`Method`] from `name => |ctx, params| body`, where the body may `.await` and `?`.
macro_rules! method {
    ($name:literal => |$ctx:ident, $params:ident| $body:expr) => {
        Method {
            name: $name,
            handler: |$ctx, $params| Box::pin(async move { $body }),
        }
    };
}

/// Every method this server answers (besides the unsupported ones' explained `-32601`), each
/// name once; `docs/protocol.md` lists them.
// scripts/protocol-methods.py reads the names from this table's text (in this order, which its
// list of the methods the schema lacks follows): keep it a literal table whose only string
// literals are the method names.
pub(crate) const SERVED: &[Method] = &[
    method!("connect" => |ctx, params| server_methods::connect(ctx, parse(params)?)),
    method!("ping" => |_ctx, params| server_methods::ping(parse(params)?)),
    method!("status.get" => |_ctx, _params| Ok(server_methods::status())),
    method!("auth.getStatus" => |ctx, _params| Ok(server_methods::auth_status(ctx))),
    method!("models.list" => |ctx, _params| server_methods::models(ctx).await),
    method!("runtime.shutdown" => |ctx, _params| Ok(server_methods::shutdown(ctx))),
    method!("user.settings.get" => |ctx, _params| Ok(user_settings::get(ctx))),
    method!("user.settings.set" => |ctx, params| user_settings::set(ctx, parse(params)?)),
    method!("user.settings.reload" => |_ctx, _params| Ok(user_settings::reload())),
    method!("account.login" => |ctx, params| accounts::login(ctx, parse(params)?).await),
    method!("account.getCurrentAuth" => |ctx, _params| Ok(accounts::current(ctx))),
    method!("account.getQuota" => |ctx, params| accounts::quota(ctx, parse(params)?).await),
    method!("account.getAllUsers" => |_ctx, _params| Ok(accounts::all_users())),
    method!("account.logout" => |ctx, params| accounts::logout(ctx, parse(params)?)),
    method!("session.create" => |ctx, params| lifecycle::create(ctx, parse(params)?).await),
    method!("session.resume" => |ctx, params| lifecycle::resume(ctx, parse(params)?).await),
    method!("session.detach" => |ctx, params| lifecycle::detach(ctx, parse(params)?).await),
    method!("session.destroy" => |ctx, params| lifecycle::detach(ctx, parse(params)?).await),
    method!("session.delete" => |ctx, params| lifecycle::delete(ctx, parse(params)?).await),
    method!("session.list" => |ctx, params| listing::list(ctx, parse(params)?).await),
    method!("session.getLastId" => |ctx, _params| listing::last_id(ctx).await),
    method!("session.getMetadata" => |ctx, params| listing::metadata(ctx, parse(params)?).await),
    method!("session.shutdown" => |ctx, params| shutdown::shutdown(ctx, parse(params)?).await),
    method!("session.suspend" => |ctx, params| suspend::suspend(ctx, parse(params)?).await),
    method!("session.send" => |ctx, params| session::send(ctx, parse(params)?)),
    method!("session.sendAndWait" => |ctx, params| {
        session::send_and_wait(ctx, parse(params)?).await
    }),
    method!("session.abort" => |ctx, params| session::abort(ctx, parse(params)?)),
    method!("session.getMessages" => |ctx, params| session::messages(ctx, parse(params)?)),
    method!("session.mode.get" => |ctx, params| session::mode_get(ctx, parse(params)?)),
    method!("session.mode.set" => |ctx, params| session::mode_set(ctx, parse(params)?).await),
    method!("session.model.getCurrent" => |ctx, params| {
        session::model_current(ctx, parse(params)?)
    }),
    method!("session.model.switchTo" => |ctx, params| {
        session::model_switch(ctx, parse(params)?).await
    }),
    method!("session.log" => |ctx, params| log::log(ctx, parse(params)?).await),
    method!("session.history.compact" => |ctx, params| history::compact(ctx, parse(params)?).await),
    method!("session.history.truncate" => |ctx, params| {
        rewind::truncate(ctx, parse(params)?).await
    }),
    method!("session.history.listRewindPoints" => |ctx, params| {
        rewind::list_points(ctx, parse(params)?)
    }),
    method!("session.history.previewRewind" => |ctx, params| rewind::preview(ctx, parse(params)?)),
    method!("session.history.rewind" => |ctx, params| rewind::rewind(ctx, parse(params)?).await),
    method!("session.history.cancelBackgroundCompaction" => |ctx, params| {
        compaction_control::cancel_background(ctx, parse(params)?)
    }),
    method!("session.history.abortManualCompaction" => |ctx, params| {
        compaction_control::abort_manual(ctx, parse(params)?)
    }),
    method!("session.history.summarizeForHandoff" => |ctx, params| {
        compaction_control::summarize_for_handoff(ctx, parse(params)?)
    }),
    method!("session.options.update" => |ctx, params| options::update(ctx, params).await),
    method!("session.name.get" => |ctx, params| session::name_get(ctx, parse(params)?)),
    method!("session.name.set" => |ctx, params| session::name_set(ctx, parse(params)?).await),
    method!("session.name.setAuto" => |ctx, params| name_auto::set_auto(ctx, parse(params)?).await),
    method!("session.model.setReasoningEffort" => |ctx, params| {
        reasoning_effort::set(ctx, parse(params)?).await
    }),
    method!("session.instructions.getSources" => |ctx, params| {
        instructions::get_sources(ctx, parse(params)?)
    }),
    method!("session.getForeground" => |_ctx, _params| Ok(session::foreground_get())),
    method!("session.setForeground" => |_ctx, _params| Ok(session::foreground_set())),
    method!("session.plan.read" => |ctx, params| plan::read(ctx, parse(params)?)),
    method!("session.plan.update" => |ctx, params| plan::update(ctx, parse(params)?).await),
    method!("session.plan.delete" => |ctx, params| plan::delete(ctx, parse(params)?).await),
    method!("session.schedule.list" => |ctx, params| schedule::list(ctx, parse(params)?)),
    method!("session.schedule.stop" => |ctx, params| schedule::stop(ctx, parse(params)?)),
    method!("session.plan.readSqlTodos" => |ctx, params| plan_todos::read(ctx, parse(params)?)),
    method!("session.plan.readSqlTodosWithDependencies" => |ctx, params| {
        plan_todos::read_with_dependencies(ctx, parse(params)?)
    }),
    method!("session.workspaces.listFiles" => |ctx, params| {
        workspaces::list_files(ctx, parse(params)?)
    }),
    method!("session.workspaces.readFile" => |ctx, params| {
        workspaces::read_file(ctx, parse(params)?)
    }),
    method!("session.workspaces.createFile" => |ctx, params| {
        workspaces::create_file(ctx, parse(params)?).await
    }),
    method!("session.workspaces.getWorkspace" => |ctx, params| {
        workspaces::get_workspace(ctx, parse(params)?)
    }),
    method!("session.workspaces.listCheckpoints" => |ctx, params| {
        workspace_checkpoints::list(ctx, parse(params)?)
    }),
    method!("session.workspaces.readCheckpoint" => |ctx, params| {
        workspace_checkpoints::read(ctx, parse(params)?)
    }),
    method!("session.workspaces.diff" => |ctx, params| {
        workspace_diff::diff(ctx, parse(params)?).await
    }),
    method!("session.workspaces.saveLargePaste" => |ctx, params| {
        workspace_paste::save(ctx, parse(params)?)
    }),
    method!("session.shell.executeUserRequested" => |ctx, params| {
        shell::execute(ctx, parse(params)?).await
    }),
    method!("session.shell.cancelUserRequested" => |ctx, params| {
        shell::cancel(ctx, parse(params)?)
    }),
    method!("sessions.list" => |ctx, params| listing::list(ctx, parse(params)?).await),
    method!("sessions.save" => |_ctx, params| sessions_state::save(parse(params)?)),
    method!("sessions.close" => |ctx, params| sessions_state::close(ctx, parse(params)?).await),
    method!("sessions.releaseLock" => |ctx, params| {
        sessions_state::release_lock(ctx, parse(params)?)
    }),
    method!("sessions.checkInUse" => |ctx, params| {
        sessions_state::check_in_use(ctx, parse(params)?)
    }),
    method!("sessions.getSizes" => |ctx, _params| sessions_state::get_sizes(ctx).await),
    method!("sessions.findByPrefix" => |ctx, params| {
        sessions_state::find_by_prefix(ctx, parse(params)?).await
    }),
    method!("sessions.findByTaskId" => |_ctx, _params| Ok(sessions_state::find_by_task_id())),
    method!("sessions.getLastForContext" => |ctx, params| {
        sessions_state::last_for_context(ctx, parse(params)?).await
    }),
    method!("sessions.bulkDelete" => |ctx, params| {
        sessions_delete::bulk_delete(ctx, parse(params)?).await
    }),
    method!("sessions.pruneOld" => |ctx, params| {
        sessions_delete::prune_old(ctx, parse(params)?).await
    }),
    method!("sessions.enrichMetadata" => |ctx, params| {
        sessions_enrich::enrich(ctx, parse(params)?)
    }),
    method!("sessions.fork" => |ctx, params| fork::fork(ctx, parse(params)?).await),
    method!("session.agent.list" => |ctx, params| agent::list(ctx, parse(params)?)),
    method!("session.agent.getCurrent" => |ctx, params| agent::get_current(ctx, parse(params)?)),
    method!("session.agent.select" => |ctx, params| agent::select(ctx, parse(params)?).await),
    method!("session.agent.deselect" => |ctx, params| agent::deselect(ctx, parse(params)?).await),
    method!("session.agent.reload" => |ctx, params| agent::reload(ctx, parse(params)?)),
    method!("session.commands.list" => |ctx, params| commands::list(ctx, parse(params)?)),
    method!("session.commands.invoke" => |ctx, params| commands::invoke(ctx, parse(params)?).await),
    method!("session.commands.execute" => |ctx, params| {
        commands::execute(ctx, parse(params)?).await
    }),
    method!("session.queue.pendingItems" => |ctx, params| queue::pending_items(ctx, parse(params)?)),
    method!("session.queue.removeMostRecent" => |ctx, params| queue::remove_most_recent(ctx, parse(params)?)),
    method!("session.queue.clear" => |ctx, params| queue::clear(ctx, parse(params)?)),
    method!("session.commands.enqueue" => |ctx, params| commands::enqueue(ctx, parse(params)?)),
    method!("session.commands.respondToQueuedCommand" => |ctx, params| {
        commands::respond_to_queued(ctx, parse(params)?)
    }),
    method!("session.commands.handlePendingCommand" => |ctx, params| {
        commands::handle_pending(ctx, parse(params)?)
    }),
    method!("mcp.config.list" => |ctx, _params| mcp_config::list(ctx)),
    method!("mcp.config.add" => |ctx, params| mcp_config::add(ctx, parse(params)?)),
    method!("mcp.config.update" => |ctx, params| mcp_config::update(ctx, parse(params)?)),
    method!("mcp.config.remove" => |ctx, params| mcp_config::remove(ctx, parse(params)?)),
    method!("mcp.config.enable" => |ctx, params| mcp_config::enable(ctx, parse(params)?)),
    method!("mcp.config.disable" => |ctx, params| mcp_config::disable(ctx, parse(params)?)),
    method!("mcp.config.reload" => |_ctx, _params| Ok(mcp_config::reload())),
    method!("session.mcp.list" => |ctx, params| mcp::list(ctx, parse(params)?).await),
    method!("session.mcp.listTools" => |ctx, params| mcp::list_tools(ctx, parse(params)?)),
    method!("session.mcp.enable" => |ctx, params| mcp::enable(ctx, parse(params)?).await),
    method!("session.mcp.disable" => |ctx, params| mcp::disable(ctx, parse(params)?).await),
    method!("session.mcp.reload" => |ctx, params| mcp_launch::reload(ctx, parse(params)?).await),
    method!("session.mcp.startServer" => |ctx, params| {
        mcp_servers::start(ctx, parse(params)?).await
    }),
    method!("session.mcp.stopServer" => |ctx, params| mcp_servers::stop(ctx, parse(params)?).await),
    method!("session.mcp.restartServer" => |ctx, params| {
        mcp_servers::restart(ctx, parse(params)?).await
    }),
    method!("session.mcp.isServerRunning" => |ctx, params| {
        mcp_servers::is_running(ctx, parse(params)?)
    }),
    method!("session.mcp.resources.list" => |ctx, params| {
        mcp_resources::list(ctx, parse(params)?).await
    }),
    method!("session.mcp.resources.listTemplates" => |ctx, params| {
        mcp_resources::list_templates(ctx, parse(params)?).await
    }),
    method!("session.mcp.resources.read" => |ctx, params| {
        mcp_resources::read(ctx, parse(params)?).await
    }),
    method!("session.mcp.reloadWithConfig" => |ctx, params| {
        mcp_launch::reload_with_config(ctx, parse(params)?).await
    }),
    method!("session.mcp.executeSampling" => |ctx, params| {
        mcp_sampling::execute(ctx, parse(params)?).await
    }),
    method!("session.mcp.cancelSamplingExecution" => |ctx, params| {
        mcp_sampling::cancel(ctx, parse(params)?)
    }),
    method!("session.mcp.setEnvValueMode" => |ctx, params| {
        mcp_launch::set_env_value_mode(ctx, parse(params)?)
    }),
    method!("session.mcp.removeGitHub" => |ctx, params| {
        mcp_builtin::remove_github(ctx, parse(params)?)
    }),
    method!("session.mcp.configureGitHub" => |ctx, params| {
        mcp_builtin::configure_github(ctx, parse(params)?)
    }),
    method!("session.mcp.registerExternalClient" => |ctx, params| {
        mcp_builtin::register_external(ctx, parse(params)?)
    }),
    method!("session.mcp.unregisterExternalClient" => |ctx, params| {
        mcp_builtin::unregister_external(ctx, parse(params)?)
    }),
    method!("session.mcp.oauth.handlePendingRequest" => |ctx, params| {
        mcp_oauth::handle_pending(ctx, parse(params)?)
    }),
    method!("session.mcp.oauth.authenticationStateChanged" => |ctx, params| {
        mcp_oauth::state_changed(ctx, parse(params)?)
    }),
    method!("session.mcp.oauth.login" => |ctx, params| mcp_oauth::login(ctx, parse(params)?).await),
    method!("session.mcp.oauth.respond" => |ctx, params| mcp_oauth::respond(ctx, parse(params)?)),
    method!("session.mcp.headers.handlePendingHeadersRefreshRequest" => |ctx, params| {
        mcp_oauth::handle_pending(ctx, parse(params)?)
    }),
    method!("session.mcp.apps.readResource" => |ctx, params| {
        mcp_apps::read_resource(ctx, parse(params)?).await
    }),
    method!("session.mcp.apps.listTools" => |ctx, params| {
        mcp_apps::list_tools(ctx, parse(params)?)
    }),
    method!("session.mcp.apps.callTool" => |ctx, params| {
        mcp_apps::call_tool(ctx, parse(params)?).await
    }),
    method!("session.mcp.apps.setHostContext" => |ctx, params| {
        mcp_apps::set_host_context(ctx, parse(params)?)
    }),
    method!("session.mcp.apps.getHostContext" => |ctx, params| {
        mcp_apps::get_host_context(ctx, parse(params)?)
    }),
    method!("session.mcp.apps.diagnose" => |ctx, params| mcp_apps::diagnose(ctx, parse(params)?)),
    method!("session.skills.list" => |ctx, params| skills::list(ctx, parse(params)?)),
    method!("session.skills.getInvoked" => |ctx, params| skills::get_invoked(ctx, parse(params)?)),
    method!("session.skills.enable" => |ctx, params| skills::enable(ctx, parse(params)?)),
    method!("session.skills.disable" => |ctx, params| skills::disable(ctx, parse(params)?)),
    method!("session.skills.reload" => |ctx, params| skills::reload(ctx, parse(params)?)),
    method!("session.skills.ensureLoaded" => |ctx, params| {
        skills::ensure_loaded(ctx, parse(params)?)
    }),
    method!("session.plugins.list" => |ctx, params| extensions::plugins(ctx, parse(params)?)),
    method!("session.extensions.list" => |ctx, params| extensions::list(ctx, parse(params)?)),
    method!("session.extensions.enable" => |ctx, params| {
        extensions::unavailable(ctx, "enable", params)
    }),
    method!("session.extensions.disable" => |ctx, params| {
        extensions::unavailable(ctx, "disable", params)
    }),
    method!("session.extensions.reload" => |ctx, params| {
        extensions::unavailable(ctx, "reload", params)
    }),
    method!("session.gitHubAuth.setCredentials" => |ctx, params| {
        github_auth::set_credentials(ctx, parse(params)?)
    }),
    method!("session.gitHubAuth.getStatus" => |ctx, params| {
        github_auth::status(ctx, parse(params)?).await
    }),
    method!("session.provider.getEndpoint" => |ctx, params| {
        provider_endpoint::get(ctx, parse(params)?).await
    }),
    method!("session.eventLog.read" => |ctx, params| event_log::read(ctx, parse(params)?).await),
    method!("session.eventLog.tail" => |ctx, params| event_log::tail(ctx, parse(params)?)),
    method!("session.eventLog.registerInterest" => |ctx, params| {
        event_log::register_interest(ctx, parse(params)?)
    }),
    method!("session.eventLog.releaseInterest" => |ctx, params| {
        event_log::release_interest(ctx, parse(params)?)
    }),
    method!("session.tools.handlePendingToolCall" => |ctx, params| {
        pending::tool_call(ctx, parse(params)?)
    }),
    method!("session.ui.elicitation" => |ctx, params| ui::elicitation(ctx, parse(params)?).await),
    method!("session.ui.handlePendingElicitation" => |ctx, params| {
        ui::handle_pending(ctx, parse(params)?)
    }),
    method!("session.permissions.handlePendingPermissionRequest" => |ctx, params| {
        pending::permission(ctx, parse(params)?)
    }),
    method!("session.permissions.pendingRequests" => |ctx, params| {
        pending::pending_permissions(ctx, parse(params)?)
    }),
    method!("session.permissions.setApproveAll" => |ctx, params| {
        permissions::set_approve_all(ctx, parse(params)?)
    }),
    method!("session.permissions.getMode" => |ctx, params| {
        permission_mode::get_mode(ctx, parse(params)?)
    }),
    method!("session.permissions.setMode" => |ctx, params| {
        permission_mode::set_mode(ctx, parse(params)?)
    }),
    method!("session.permissions.setRequired" => |ctx, params| {
        permissions::set_required(ctx, parse(params)?)
    }),
    method!("session.permissions.configure" => |ctx, params| {
        permissions::configure(ctx, parse(params)?)
    }),
    method!("session.permissions.modifyRules" => |ctx, params| {
        permissions::modify_rules(ctx, parse(params)?)
    }),
    method!("session.permissions.resetSessionApprovals" => |ctx, params| {
        permissions::reset_session_approvals(ctx, parse(params)?)
    }),
    method!("session.permissions.notifyPromptShown" => |ctx, params| {
        permissions::notify_prompt_shown(ctx, parse(params)?)
    }),
    method!("session.permissions.paths.list" => |ctx, params| {
        permissions::paths_list(ctx, parse(params)?)
    }),
    method!("session.permissions.paths.add" => |ctx, params| {
        permissions::paths_add(ctx, parse(params)?)
    }),
    method!("session.permissions.paths.updatePrimary" => |ctx, params| {
        permissions::paths_update_primary(ctx, parse(params)?)
    }),
    method!("session.permissions.paths.isPathWithinAllowedDirectories" => |ctx, params| {
        permissions::paths_allowed(ctx, parse(params)?)
    }),
    method!("session.permissions.paths.isPathWithinWorkspace" => |ctx, params| {
        permissions::paths_workspace(ctx, parse(params)?)
    }),
    method!("session.permissions.urls.setUnrestrictedMode" => |ctx, params| {
        permissions::urls_set_unrestricted(ctx, parse(params)?)
    }),
    method!("session.permissions.locations.resolve" => |ctx, params| {
        permissions::locations_resolve(ctx, parse(params)?)
    }),
    method!("session.permissions.locations.apply" => |ctx, params| {
        permissions::locations_apply(ctx, parse(params)?)
    }),
    method!("session.permissions.locations.addToolApproval" => |ctx, params| {
        permissions::locations_add_tool_approval(ctx, parse(params)?)
    }),
    method!("session.permissions.folderTrust.isTrusted" => |ctx, params| {
        permissions::folder_is_trusted(ctx, parse(params)?)
    }),
    method!("session.permissions.folderTrust.addTrusted" => |ctx, params| {
        permissions::folder_add_trusted(ctx, parse(params)?)
    }),
    method!("session.metadata.snapshot" => |ctx, params| metadata::snapshot(ctx, parse(params)?)),
    method!("session.metadata.isProcessing" => |ctx, params| {
        metadata::is_processing(ctx, parse(params)?)
    }),
    method!("session.metadata.setWorkingDirectory" => |ctx, params| {
        working_directory::set_working_directory(ctx, parse(params)?).await
    }),
    method!("session.metadata.recordContextChange" => |ctx, params| {
        metadata::record_context_change(ctx, parse(params)?).await
    }),
    method!("session.metadata.contextInfo" => |ctx, params| {
        context_info::context_info(ctx, parse(params)?).await
    }),
    method!("session.metadata.recomputeContextTokens" => |ctx, params| {
        context_info::recompute(ctx, parse(params)?).await
    }),
    method!("session.usage.getMetrics" => |ctx, params| usage::get_metrics(ctx, parse(params)?).await),
    method!("session.tools.initializeAndValidate" => |ctx, params| {
        session_services::initialize_and_validate(ctx, parse(params)?)
    }),
    method!("session.lsp.initialize" => |ctx, params| {
        session_services::lsp_initialize(ctx, parse(params)?)
    }),
    method!("session.telemetry.setFeatureOverrides" => |ctx, params| {
        session_services::set_feature_overrides(ctx, parse(params)?)
    }),
    method!("session.extensions.sendAttachmentsToMessage" => |ctx, _params| {
        server_gates::send_attachments(ctx)
    }),
    method!("tools.list" => |_ctx, params| tools_list::list(params)),
    method!("sessions.open" => |ctx, params| sessions_open::open(ctx, parse(params)?).await),
    method!("sessions.connect" => |_ctx, params| server_gates::sessions_connect(parse(params)?)),
    method!("agentRegistry.spawn" => |_ctx, _params| server_gates::agent_registry_spawn()),
    method!("llmInference.setProvider" => |ctx, _params| llm_inference::set_provider(ctx)),
    method!("llmInference.httpResponseStart" => |ctx, params| {
        llm_inference::response_start(ctx, parse(params)?).await
    }),
    method!("llmInference.httpResponseChunk" => |ctx, params| {
        llm_inference::response_chunk(ctx, parse(params)?).await
    }),
];

/// Handles one request.
pub(crate) async fn call(
    server: &Server,
    peer: &Arc<Peer>,
    method: &str,
    params: Value,
    received: std::time::Instant,
) -> Result<Value, RpcError> {
    // Before `connect` with the token, no method is even looked up: an unknown one is refused
    // the same way, so the refusal says nothing of what is served.
    if method != "connect" && !peer.is_authorized() {
        return Err(crate::auth::required());
    }
    let ctx = Ctx {
        server,
        peer,
        received,
    };
    match SERVED.iter().find(|served| served.name == method) {
        Some(served) => (served.handler)(&ctx, params).await,
        None if unsupported::UNHANDLED_BY_THE_CLI.contains(&method) => Err(RpcError::unhandled(
            method,
            unsupported::reason(method).unwrap_or_default(),
        )),
        None => Err(RpcError::method_not_found(
            method,
            unsupported::reason(method),
        )),
    }
}

/// Parses by-name params into `T`; absent params count as `{}`. Fields `T` does not know are
/// ignored (the SDKs send many options this engine has no use for); a field of the wrong type
/// is an error that names it.
pub(crate) fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = match params {
        Value::Null => Value::Object(Default::default()),
        Value::Object(obj) => Value::Object(obj),
        other => {
            return Err(RpcError::invalid_params(format!(
                "params must be an object (by-name), got {}",
                kind_of(&other)
            )));
        }
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            RpcError::invalid_params(format!("invalid params: {inner}"))
        } else {
            RpcError::invalid_params(format!("invalid params: {path}: {inner}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::codes;
    use serde::Deserialize;
    use serde_json::json;

    /// Every `rpcMethod` of the SDK's schema, with its side (`server`, `session`: the client
    /// calls it; `clientSession`, `clientGlobal`: the server would call the client).
    fn schema_methods() -> Vec<(String, String)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schema/api.schema.json"
        );
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        fn walk(node: &Value, side: &str, out: &mut Vec<(String, String)>) {
            if let Some(method) = node.get("rpcMethod").and_then(Value::as_str) {
                out.push((method.to_owned(), side.to_owned()));
                return;
            }
            if let Value::Object(map) = node {
                for v in map.values() {
                    walk(v, side, out);
                }
            }
        }
        let mut out = Vec::new();
        for side in ["server", "session", "clientSession", "clientGlobal"] {
            walk(&schema[side], side, &mut out);
        }
        out
    }

    #[test]
    fn every_schema_method_is_served_or_explained_and_documented() {
        let docs = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/protocol.md"
        ))
        .unwrap();
        let methods = schema_methods();
        assert!(methods.len() > 300, "the schema was read");
        for (method, side) in &methods {
            assert!(
                docs.contains(&format!("`{method}`")),
                "docs/protocol.md does not list {method}"
            );
            let client_side = side.starts_with("client");
            assert!(
                client_side
                    || SERVED.iter().any(|served| served.name == method)
                    || crate::methods::unsupported::reason(method).is_some(),
                "{method} is neither served nor explained"
            );
        }
        for method in SERVED.iter().map(|served| served.name) {
            assert!(
                docs.contains(&format!("`{method}`")),
                "docs/protocol.md does not list the served {method}"
            );
        }
    }

    /// Routing takes the first entry of a name, so a second one would never answer.
    #[test]
    fn each_served_name_is_one_entry() {
        let mut names: Vec<&str> = SERVED.iter().map(|served| served.name).collect();
        names.sort_unstable();
        for pair in names.windows(2) {
            assert_ne!(pair[0], pair[1], "{} is in SERVED twice", pair[0]);
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct P {
        session_id: String,
        count: Option<u32>,
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<P>(json!({"sessionId": 5})).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(
            e.message.contains("sessionId") && e.message.contains("integer"),
            "{e}"
        );
        let e = parse::<P>(json!({})).unwrap_err();
        assert!(e.message.contains("missing field `sessionId`"), "{e}");
        let e = parse::<P>(json!([1])).unwrap_err();
        assert!(e.message.contains("by-name"), "{e}");
        assert!(parse::<P>(json!({"sessionId": "x", "other": true})).is_ok());
    }
}
