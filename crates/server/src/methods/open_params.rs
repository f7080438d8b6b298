//! What `session.create` and `session.resume` ask for (`OpenParams`) and how it becomes the
//! loop's parts: the working directory, the provider, the built-in and client tools, the
//! permission and hook set-up, and the info the server tracks (`build`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::{Timestamp, Uuid};
use turnstile_loop::hooks::{CommandHooks, HookRunner};
use turnstile_loop::prompt::SystemMessageConfig;
use turnstile_loop::session::configured_processes;
use turnstile_loop::{InfiniteSessions, SessionConfig, SessionParts};
use turnstile_providers::{CopilotUser, SharedExchange, SharedTokenSource};
use turnstile_tools::ask_user::ASK_USER;
use turnstile_tools::skills::SkillSet;
use turnstile_tools::{ToolRegistry, ToolSpec};

use super::Ctx;
use crate::account::{self, SessionAccount};
use crate::client_bridge::{ClientBridge, ClientCapabilities};
use crate::client_inference::ClientExchange;
use crate::client_token::{ClientToken, SINGLE_PROVIDER_NAME};
use crate::permission_state::SessionPermissions;
use crate::plan_review::ClientPlanReviewer;
use crate::provider::{self, ProviderParams};
use crate::provider_registry::{self, NamedProviderParams, ProviderModelParams};
use crate::rpc::RpcError;
use crate::section_transform::ClientTransformer;
use crate::sessions::SessionInfo;
use crate::user_input::ClientUserInput;

/// A tool the client implements (`tools[]` of create/resume).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolParams {
    pub(super) name: String,
    pub(super) description: Option<String>,
    pub(super) parameters: Option<Value>,
    pub(super) overrides_built_in_tool: Option<bool>,
    /// Runs without a `custom-tool` permission request.
    pub(super) skip_permission: Option<bool>,
}

/// `defaultAgent` of create/resume: what the main agent is not given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DefaultAgentParams {
    pub(super) excluded_tools: Option<Vec<String>>,
}

/// `githubMcpToolConfig` of create/resume: the journal's type (`session.start` keeps it for a
/// resume that names none).
pub(crate) type GithubMcpToolConfig = turnstile_journal::payload::GitHubMcpToolConfig;

/// The params `session.create` and `session.resume` share (the SDKs send many more; the
/// ones this engine has no use for are ignored, see docs/protocol.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenParams {
    pub(super) session_id: Option<String>,
    pub(super) model: Option<String>,
    pub(super) provider: Option<ProviderParams>,
    pub(super) working_directory: Option<String>,
    pub(super) tools: Option<Vec<ToolParams>>,
    pub(super) system_message: Option<SystemMessageConfig>,
    pub(super) streaming: Option<bool>,
    pub(super) request_permission: Option<bool>,
    pub(super) hooks: Option<bool>,
    pub(super) enable_file_hooks: Option<bool>,
    /// Keep the files tool calls change, for a `conversation-and-files` rewind.
    pub(super) enable_file_change_tracking: Option<bool>,
    pub(super) available_tools: Option<Vec<String>>,
    pub(super) excluded_tools: Option<Vec<String>>,
    pub(super) reasoning_effort: Option<String>,
    pub(super) default_agent: Option<DefaultAgentParams>,
    /// Keep a dead engine's pending permission and client tool requests open (`true`) or
    /// close them as interrupted.
    pub(super) continue_pending_work: Option<bool>,
    /// MCP servers of the session, by name, in the Copilot CLI's format (on top of the
    /// server's own, from its configuration files).
    pub(super) mcp_servers: Option<Value>,
    /// Plugin directories (`plugin.json`): their MCP servers wait for the session's first use.
    pub(super) plugin_directories: Option<Vec<String>>,
    /// MCP servers listed as `disabled` and not started.
    pub(super) disabled_mcp_servers: Option<Vec<String>>,
    /// The runtime's discovery of configuration: here, its built-in GitHub MCP server.
    pub(super) enable_config_discovery: Option<bool>,
    /// The built-in GitHub server's tools (`enableAllTools`: all of them, else read-only).
    pub(super) github_mcp_tool_config: Option<GithubMcpToolConfig>,
    pub(super) infinite_sessions: Option<InfiniteSessionParams>,
    /// Directories whose `<name>/SKILL.md` files are the session's skills.
    pub(super) skill_directories: Option<Vec<String>>,
    /// Skills listed but not offered to the model.
    pub(super) disabled_skills: Option<Vec<String>>,
    /// The client answers the model's questions (`userInput.request`): `ask_user` is offered.
    pub(super) request_user_input: Option<bool>,
    /// The client answers elicitations (`elicitation.requested`): reported as the session's
    /// `capabilities.ui.elicitation`.
    pub(super) request_elicitation: Option<bool>,
    /// Named providers a provider-qualified `model` (`<provider>/<model id>`) is chosen from.
    pub(super) providers: Option<Vec<NamedProviderParams>>,
    /// The models of those providers.
    pub(super) models: Option<Vec<ProviderModelParams>>,
    /// The session's own GitHub token: its account is looked up when the session opens
    /// (`account.rs`), and it is the credential at the Copilot endpoint.
    pub(super) git_hub_token: Option<String>,
    /// The client reviews the model's plans (`exitPlanMode.request`): `exit_plan_mode` is
    /// offered to messages in plan mode.
    pub(super) request_exit_plan_mode: Option<bool>,
    /// Slash commands the client runs (`commands`: name and description).
    pub(super) commands: Option<Vec<crate::client_commands::CommandParams>>,
    /// The session's custom agents (`session.agent.*`).
    pub(super) custom_agents: Option<Vec<crate::custom_agents::AgentParams>>,
    /// The built-in sub-agent types the `task` tool offers (all when left out).
    pub(super) included_builtin_agents: Option<Vec<String>>,
    /// Built-in sub-agent types the `task` tool does not offer (exclusion wins).
    pub(super) excluded_builtin_agents: Option<Vec<String>>,
    /// The SDK client's name, told to the Copilot endpoint in the `User-Agent`.
    pub(super) client_name: Option<String>,
    /// Extra directories whose `.github/instructions/**/*.instructions.md` files join the
    /// system prompt (relative ones are the working directory's).
    pub(super) instruction_directories: Option<Vec<String>>,
    /// What the model can do, as the client says (`supports.vision`).
    pub(super) model_capabilities: Option<ModelCapabilitiesParams>,
    /// The session's limits (`maxAiCredits`), told to the model with every call.
    pub(super) session_limits: Option<turnstile_journal::payload::SessionLimits>,
    /// Anthropic documents are sent with their title and citations enabled.
    pub(super) enable_citations: Option<bool>,
    /// The account of `git_hub_token`, once looked up (`with_account`).
    #[serde(skip)]
    pub(super) github_user: Option<CopilotUser>,
}

/// `modelCapabilities` of create/resume and `session.model.switchTo` (the SDK's
/// `ModelCapabilitiesOverride`; only `supports.vision` changes what turnstile sends).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelCapabilitiesParams {
    supports: Option<ModelSupportsParams>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelSupportsParams {
    vision: Option<bool>,
}

impl ModelCapabilitiesParams {
    /// Whether the model reads pictures, when the client says.
    pub(crate) fn vision(&self) -> Option<bool> {
        self.supports.as_ref().and_then(|s| s.vision)
    }
}

/// The params with the account of their `gitHubToken` looked up (the open's error when the
/// GitHub API refuses the token).
pub(super) async fn with_account(
    ctx: &Ctx<'_>,
    mut params: OpenParams,
    method: &str,
) -> Result<OpenParams, RpcError> {
    params.github_user = account::look_up(
        &ctx.server.config().github_api_url,
        params.git_hub_token.as_deref(),
        method,
    )
    .await?;
    Ok(params)
}

/// The provider a session's model calls go to, with its name: the registry's for a
/// provider-qualified `model`, else `provider` (named `default`, as in the Copilot CLI).
fn chosen_provider(params: &OpenParams) -> Result<Option<(String, ProviderParams)>, RpcError> {
    let from_registry = provider_registry::selected(
        params.model.as_deref(),
        params.providers.as_deref().unwrap_or_default(),
        params.models.as_deref().unwrap_or_default(),
    )?;
    Ok(from_registry.or_else(|| {
        params
            .provider
            .clone()
            .map(|p| (SINGLE_PROVIDER_NAME.to_owned(), p))
    }))
}

/// `infiniteSessions` of `session.create`/`session.resume` (the SDK's `InfiniteSessionConfig`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfiniteSessionParams {
    pub(super) enabled: Option<bool>,
    pub(super) background_compaction_threshold: Option<f64>,
    pub(super) buffer_exhaustion_threshold: Option<f64>,
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

/// Builds the loop's parts, the bridge and the tracked info from the params.
pub(super) fn build(
    ctx: &Ctx<'_>,
    id: Uuid,
    params: &OpenParams,
) -> Result<(SessionParts, Arc<ClientBridge>, SessionInfo), RpcError> {
    let config = ctx.server.config();
    let cwd = working_dir(&config.default_cwd, params.working_directory.as_deref())?;
    let (provider_name, provider_params) = chosen_provider(params)?.unzip();
    let mut defaults = account::with_session_token(
        config.default_model.clone(),
        params.git_hub_token.as_deref(),
    );
    defaults.client_name.clone_from(&params.client_name);
    // A client answers the model calls itself: this session's requests go to it.
    if ctx.server.inference().provider().is_some() {
        defaults.exchange = Some(SharedExchange(Arc::new(ClientExchange {
            inference: Arc::clone(ctx.server.inference()),
            session_id: id.to_string(),
        })));
    }
    // A provider whose client has a token callback asks this connection for every call's token.
    let token_source = provider_name.map(|name| {
        SharedTokenSource(Arc::new(ClientToken {
            peer: Arc::clone(ctx.peer),
            session_id: id.to_string(),
            provider_name: name,
        }))
    });
    let chosen = provider::choose(
        &defaults,
        params.model.as_deref(),
        provider_params.as_ref(),
        token_source,
    )?;
    // Relative skill directories are the working directory's.
    let skill_dirs: Vec<PathBuf> = params
        .skill_directories
        .iter()
        .flatten()
        .map(|d| cwd.join(d))
        .collect();
    let (skills, skill_warnings) = SkillSet::load(
        &skill_dirs,
        params.disabled_skills.as_deref().unwrap_or_default(),
    );
    let skills = Arc::new(skills);
    let mut registry = builtin_tools(
        params.available_tools.as_deref(),
        params.excluded_tools.as_deref(),
        &skills,
    );
    // The server's own filters (`--available-tools`, `--excluded-tools`) apply on top.
    let server_filtered = builtin_tools(
        config.available_tools.as_deref(),
        Some(&config.excluded_tools),
        &skills,
    );
    let names: Vec<String> = registry.names().into_iter().map(str::to_owned).collect();
    for name in names {
        if server_filtered.get(&name).is_none() {
            registry.unregister(&name);
        }
    }
    offer_agent_types(&mut registry, params);
    let offers_ask_user = params.request_user_input == Some(true)
        && filter_keeps(
            params.available_tools.as_deref(),
            params.excluded_tools.as_deref(),
            ASK_USER,
        )
        && filter_keeps(
            config.available_tools.as_deref(),
            Some(&config.excluded_tools),
            ASK_USER,
        );
    if offers_ask_user {
        registry.offer_ask_user(Arc::new(ClientUserInput::new(
            id.to_string(),
            Arc::clone(ctx.peer),
        )));
    }
    if params.request_exit_plan_mode == Some(true) {
        let plan_file = config
            .state_root
            .session(id)
            .dir
            .join(turnstile_home::plan::PLAN_FILE);
        registry.offer_exit_plan_mode(Arc::new(ClientPlanReviewer::new(
            id.to_string(),
            Arc::clone(ctx.peer),
            plan_file,
        )));
    }
    // The session adds the MCP tools after the built-ins (and keeps them in step with the
    // servers).
    let client_tools = client_tools(&registry, params.tools.as_deref().unwrap_or_default())?;
    let capabilities = ClientCapabilities {
        tools: client_tools,
        permissions: params.request_permission.unwrap_or(false),
        hooks: params.hooks.unwrap_or(false),
        elicitation: params.request_elicitation.unwrap_or(false),
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
    session_config.max_parallel_tools = config.max_parallel_tools;
    session_config.max_parallel_agents = config.max_parallel_agents;
    session_config.permissions = config.permissions.clone();
    session_config.allow_outside_cwd = config.allow_outside_cwd;
    session_config.sandbox = config.sandbox;
    // A client that answers permissions is asked for reads inside the working directory too,
    // as the Copilot CLI asks its SDK clients (docs/decisions.md).
    session_config.ask_reads_in_cwd = capabilities.permissions;
    // The SDKs stream deltas only when asked to.
    session_config.streaming = params.streaming.unwrap_or(false);
    session_config.file_change_tracking = params.enable_file_change_tracking == Some(true);
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
    session_config.token_limit = provider_params
        .as_ref()
        .and_then(|p| p.max_prompt_tokens)
        .filter(|n| *n >= 1.0)
        .map(|n| n as u64)
        .or(config.context_window);
    session_config.skills = skills;
    session_config.skill_warnings = skill_warnings;
    if let Some(vision) = params.model_capabilities.as_ref().and_then(|c| c.vision()) {
        session_config.vision = vision;
    }
    session_config.instruction_directories = params
        .instruction_directories
        .iter()
        .flatten()
        .filter(|d| !d.is_empty())
        .map(|d| cwd.join(d))
        .collect();
    if let Some(limits) = &params.session_limits
        && !turnstile_loop::session::valid_limits(limits)
    {
        return Err(RpcError::invalid_params(
            "Session limit must be a finite number of AI credits.",
        ));
    }
    session_config.session_limits = params.session_limits.clone();
    session_config.github_mcp_tool_config = params.github_mcp_tool_config.clone();
    session_config.enable_citations = params.enable_citations == Some(true);
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
        let hooks = if hooks.is_empty() {
            hooks
        } else {
            hooks.confined(configured_processes(
                &config.permissions,
                &cwd,
                config.state_root.dir(),
                config.sandbox,
            ))
        };
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
        // Always the bridge: a client continuing pending work answers the client tool calls
        // left waiting through it whether or not it declares tools itself, and a client
        // joining later may bring tools (a bridge without tools offers none).
        external_tools: Some(Arc::clone(&bridge) as Arc<dyn turnstile_loop::client::ExternalTools>),
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
        cwd: cwd.clone(),
        start_time: now.clone(),
        modified_time: now,
        summary: None,
        name: None,
        reasoning_effort: params
            .reasoning_effort
            .clone()
            .or_else(|| config.default_reasoning_effort.clone()),
        permissions,
        account: Arc::new(SessionAccount {
            user: params.github_user.clone(),
            endpoint: chosen.config,
        }),
        installed_auth: None,
    };
    Ok((parts, bridge, info))
}

pub(super) fn working_dir(default: &Path, asked: Option<&str>) -> Result<PathBuf, RpcError> {
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

/// The session's built-in agent policy (`includedBuiltinAgents`, `excludedBuiltinAgents`) on
/// the `task` tool: its schema offers only the types left, and a call naming another is
/// refused. With none left, `task` is not offered at all (an empty choice is no tool).
fn offer_agent_types(registry: &mut ToolRegistry, params: &OpenParams) {
    use turnstile_tools::task::{self, TaskTool};
    if registry.get(task::NAME).is_none()
        || (params.included_builtin_agents.is_none() && params.excluded_builtin_agents.is_none())
    {
        return;
    }
    let types = task::offered_types(
        params.included_builtin_agents.as_deref(),
        params
            .excluded_builtin_agents
            .as_deref()
            .unwrap_or_default(),
    );
    if types.is_empty() {
        registry.unregister(task::NAME);
    } else {
        registry.register(Box::new(TaskTool::offering(types)));
    }
}

/// Whether a tool filter entry names the built-in `name` (`bash`, `builtin:bash`, `builtin:*`).
fn names_builtin(entry: &str, name: &str) -> bool {
    entry == name || entry == "builtin:*" || entry.strip_prefix("builtin:") == Some(name)
}

/// The built-in tools after `availableTools`/`excludedTools` (exclusion wins).
fn builtin_tools(
    available: Option<&[String]>,
    excluded: Option<&[String]>,
    skills: &Arc<SkillSet>,
) -> ToolRegistry {
    let mut registry = ToolRegistry::builtin(true);
    registry.offer_skills(Arc::clone(skills));
    let names: Vec<String> = registry.names().into_iter().map(str::to_owned).collect();
    for name in names {
        if !filter_keeps(available, excluded, &name) {
            registry.unregister(&name);
        }
    }
    registry
}

/// Whether `availableTools`/`excludedTools` keep the built-in `name` (exclusion wins).
fn filter_keeps(available: Option<&[String]>, excluded: Option<&[String]>, name: &str) -> bool {
    let kept = available.is_none_or(|list| list.iter().any(|e| names_builtin(e, name)));
    let dropped = excluded.is_some_and(|list| list.iter().any(|e| names_builtin(e, name)));
    kept && !dropped
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_filters() {
        let all = builtin_tools(None, None, &Arc::default());
        assert!(all.get("bash").is_some());
        let only = builtin_tools(
            Some(&["builtin:view".into(), "grep".into()]),
            None,
            &Arc::default(),
        );
        assert_eq!(only.names(), vec!["view", "grep"]);
        let without = builtin_tools(None, Some(&["builtin:bash".into()]), &Arc::default());
        assert!(without.get("bash").is_none() && without.get("view").is_some());
        let none = builtin_tools(None, Some(&["builtin:*".into()]), &Arc::default());
        assert!(none.is_empty());
    }

    #[test]
    fn client_tools_are_checked() {
        let registry = builtin_tools(None, None, &Arc::default());
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
