//! The session `run` and `resume` start: the flags they share ([`LoopArgs`]), the parts those
//! flags build (model, tools, sandbox, hooks, MCP servers), the working directory, and what a
//! resumed session records once open ([`Reconnect`]).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::StateRoot;
use turnstile_loop::client::PermissionAsker;
use turnstile_loop::hooks::{CommandHooks, HookRunner};
use turnstile_loop::{AgentMode, SessionConfig, SessionHandle, SessionParts};
use turnstile_providers::{ModelProvider, ReplayProvider, http_provider};
use turnstile_sandbox::Sandboxing;
use turnstile_tools::ToolRegistry;
use turnstile_tools::skills::SkillSet;

use crate::terminal_permissions::note;

use crate::config::{ProviderType, WireApiSetting};
use crate::provider_flags::{ProviderFlags, ProviderKind, WireApiArg, model_config};
use crate::reached::{Endpoint, Reached};
use crate::session_flags;
use crate::terminal_permissions::{PlainRefusal, TerminalApproval};

/// Options shared by `run` and `resume`.
#[derive(Debug, Clone, Args)]
pub struct LoopArgs {
    #[command(flatten)]
    pub model: ProviderFlags,
    /// The recorded journal answering with --provider replay.
    #[arg(long, value_name = "PATH")]
    pub fixture: Option<PathBuf>,
    /// Working directory of the tools [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Nudge the model until it calls task_complete.
    #[arg(long)]
    pub autopilot: bool,
    /// Allow every tool call and every path without asking (the Copilot CLI's --yolo:
    /// --allow-all-tools --allow-outside-cwd).
    #[arg(long, visible_alias = "allow-all")]
    pub yolo: bool,
    #[command(flatten)]
    pub session: crate::session_flags::SessionFlags,
    /// Ask for a complete answer instead of a stream.
    #[arg(long)]
    pub no_stream: bool,
    /// Print every event (ephemeral ones too) as a JSON line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Compact the history only when a request would not fit the window at all (the SDK's
    /// `infiniteSessions.enabled: false`).
    #[arg(long)]
    pub no_infinite_sessions: bool,
    /// MCP servers to start for the session, in the format of `$COPILOT_HOME/mcp-config.json`
    /// (`{"mcpServers": {...}}`); they join the servers of that file and the settings files.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// A directory whose `<name>/SKILL.md` files are the session's skills, offered to the
    /// model through the `skill` tool (the SDK's `skillDirectories`; relative to --cwd).
    #[arg(long, value_name = "DIR")]
    pub skill_dir: Vec<PathBuf>,
    /// A skill of --skill-dir listed but not offered to the model (the SDK's `disabledSkills`).
    #[arg(long, value_name = "NAME")]
    pub disable_skill: Vec<String>,
}

/// The parts of a session the loop flags describe, and the MCP servers they name with the
/// sandbox they start in (sessions of the state directory `root`).
pub(crate) fn parts(
    opts: &LoopArgs,
    cwd: &Path,
    root: &StateRoot,
) -> Result<(SessionParts, crate::mcp_servers::Configured, Endpoint)> {
    let mut flags = opts.session.config_flags();
    flags.allow_all_tools |= opts.yolo;
    opts.model.fill(&mut flags)?;
    let effective = crate::config::effective(&flags)?;
    let (provider, endpoint): (Arc<dyn ModelProvider>, Endpoint) = match opts.model.provider {
        Some(ProviderKind::Replay) => {
            let fixture = opts
                .fixture
                .as_ref()
                .context("--provider replay needs --fixture PATH (a recorded events.jsonl)")?;
            let provider = ReplayProvider::from_journal(fixture)
                .map_err(|e| anyhow::anyhow!("{}: {e}", fixture.display()))?;
            let fixture = fixture.canonicalize().unwrap_or_else(|_| fixture.clone());
            (
                Arc::new(provider),
                Endpoint::Replay {
                    fixture: fixture.display().to_string(),
                },
            )
        }
        _ => {
            crate::provider_flags::check_base_url(&effective.base_url)?;
            let mut config = model_config(&effective, opts.session.model_limits(&effective))?;
            config.timeouts = opts.session.model_timeouts(&effective);
            let endpoint = Endpoint::Http {
                provider: match effective.provider_type.value {
                    ProviderType::Openai => ProviderKind::Openai,
                    ProviderType::Azure => ProviderKind::Azure,
                    ProviderType::Anthropic => ProviderKind::Anthropic,
                },
                wire_api: match effective.wire_api.value {
                    WireApiSetting::Completions => WireApiArg::Completions,
                    WireApiSetting::Responses => WireApiArg::Responses,
                },
                base_url: config.base_url.clone(),
            };
            (
                http_provider(config).map_err(|e| anyhow::anyhow!("{e}"))?,
                endpoint,
            )
        }
    };
    let mut config = SessionConfig::new(cwd, effective.model.value.clone());
    config.durability = session_flags::durability(&effective);
    // A prompt run from the command line, as the Copilot CLI's `-p` names itself.
    config.client_name = "github/cli".into();
    config.mode = if opts.autopilot {
        AgentMode::Autopilot
    } else {
        AgentMode::Interactive
    };
    config.max_autopilot_continues = opts.session.max_autopilot_continues;
    opts.session.apply_parallel(&effective, &mut config);
    let mcp = crate::mcp_servers::configured(&effective, opts.mcp_config.as_deref())?;
    config.permissions = session_flags::policy(&effective, &mcp.names())?;
    config.allow_outside_cwd = opts.session.allow_outside_cwd || opts.yolo;
    config.sandbox = session_flags::SessionFlags::sandbox(&effective)?;
    config.streaming = !opts.no_stream;
    config.token_limit = opts.session.context_window;
    config.infinite_sessions.enabled = !opts.no_infinite_sessions;
    let trust = session_flags::hook_trust(opts.session.trust_hooks, &effective);
    let (hooks, warnings) = CommandHooks::load(cwd, &trust)?;
    for warning in warnings {
        note(&format!("warning: {warning}"));
    }
    // Built only when something will enter it: most sessions have no hooks and no servers.
    let configured = if hooks.is_empty() && mcp.is_empty() {
        Sandboxing::Off
    } else {
        turnstile_loop::session::configured_processes(
            &config.permissions,
            cwd,
            root.dir(),
            config.sandbox,
        )
    };
    let hooks = hooks.confined(configured.clone());
    // Relative skill directories are the working directory's, as the server reads them.
    let skill_dirs: Vec<PathBuf> = opts.skill_dir.iter().map(|d| cwd.join(d)).collect();
    let (skills, skill_warnings) = SkillSet::load(&skill_dirs, &opts.disable_skill);
    let skills = Arc::new(skills);
    config.skills = Arc::clone(&skills);
    config.skill_warnings = skill_warnings;
    let mut tools = ToolRegistry::builtin(true);
    tools.offer_skills(skills);
    // At a terminal the person running the session answers what no rule decides; elsewhere
    // such a call is refused and the flag that would allow it is told on stderr.
    let permission_asker = if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        Some(Arc::new(TerminalApproval::default()) as Arc<dyn PermissionAsker>)
    } else {
        config.refusal_notice = Some(Arc::new(PlainRefusal));
        None
    };
    let parts = SessionParts {
        config,
        provider,
        tools: Arc::new(tools),
        hooks: Some(Arc::new(hooks) as Arc<dyn HookRunner>),
        external_tools: None,
        permission_asker,
        section_transformer: None,
    };
    Ok((
        parts,
        crate::mcp_servers::Configured {
            servers: mcp,
            sandbox: configured,
        },
        endpoint,
    ))
}

/// What a resumed session records once it is open: the endpoint when it is not the one the
/// journal remembers, and the switch to the model the flags name (`session.model_change`).
#[derive(Debug)]
pub(crate) struct Reconnect {
    /// The endpoint in effect.
    pub(super) current: Endpoint,
    /// It is to be recorded: the journal's last record names another (or none).
    record_endpoint: bool,
    model: Option<String>,
}

impl Reconnect {
    /// A new session's: its endpoint recorded, its model in `session.start` already.
    pub(super) fn new_session(current: Endpoint) -> Self {
        Reconnect {
            current,
            record_endpoint: true,
            model: None,
        }
    }

    /// Fails when nobody listens where the model calls would go (see `crate::reachable`).
    pub(super) fn reachable(&self) -> Result<(), crate::reachable::Unreachable> {
        match &self.current {
            Endpoint::Http { base_url, .. } => crate::reachable::check(base_url),
            Endpoint::Replay { .. } => Ok(()),
        }
    }

    /// Records the changes in `session`.
    pub(crate) async fn record(self, session: &SessionHandle) -> Result<()> {
        if self.record_endpoint {
            session
                .log(self.current.entry())
                .await
                .context("cannot record the model server")?;
        }
        if let Some(model) = self.model {
            session
                .switch_model(model, None)
                .await
                .context("cannot record the model change")?;
        }
        Ok(())
    }
}

/// The parts of session `id` opened again under `opts`: the model and its endpoint are the
/// ones its journal remembers (`crate::reached`) unless the flags name others, in which case
/// the session records the change once open ([`Reconnect`]).
pub(crate) fn resumed_parts(
    opts: &LoopArgs,
    cwd: &Path,
    root: &StateRoot,
    id: uuid::Uuid,
) -> Result<(SessionParts, crate::mcp_servers::Configured, Reconnect)> {
    let journal = root.session(id).events;
    let reached = if journal.exists() {
        Reached::read(&journal)?
    } else {
        Reached::default()
    };
    let (model, fixture) = reached.fill(&opts.model, opts.fixture.as_deref());
    let opts = LoopArgs {
        model,
        fixture,
        ..opts.clone()
    };
    let (mut parts, mcp, endpoint) = parts(&opts, cwd, root)?;
    let mut reconnect = Reconnect {
        record_endpoint: reached.endpoint.as_ref() != Some(&endpoint),
        current: endpoint,
        model: None,
    };
    if let Some(recorded) = reached.model.filter(|m| *m != parts.config.model) {
        // The session opens on the model it had, and then switches, so the change is an
        // event with both names.
        reconnect.model = Some(std::mem::replace(&mut parts.config.model, recorded));
    }
    Ok((parts, mcp, reconnect))
}

/// The tools' working directory (`--cwd`, else the current one).
pub(crate) fn working_dir(opts: &LoopArgs) -> Result<PathBuf> {
    let dir = match &opts.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let dir = dir
        .canonicalize()
        .with_context(|| format!("working directory {} does not exist", dir.display()))?;
    if !dir.is_dir() {
        bail!("working directory {} is not a directory", dir.display());
    }
    Ok(dir)
}

pub(super) fn read_stdin_prompt() -> Result<String> {
    let mut prompt = String::new();
    std::io::stdin()
        .read_to_string(&mut prompt)
        .context("cannot read the prompt from stdin")?;
    let prompt = prompt.trim().to_owned();
    if prompt.is_empty() {
        bail!("no prompt: pass one as an argument or on stdin");
    }
    Ok(prompt)
}
