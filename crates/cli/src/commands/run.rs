//! `turnstile run` and `turnstile resume`: drive a session through the agent loop.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::{Event, StateRoot};
use turnstile_loop::client::PermissionAsker;
use turnstile_loop::hooks::{CommandHooks, HookRunner};
use turnstile_loop::{AgentMode, Outcome, SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_providers::{ModelProvider, ReplayProvider, http_provider};
use turnstile_sandbox::Sandboxing;
use turnstile_store::{AttachMode, Attachment, JournalStore};
use turnstile_store_nats::{LiveFeed, NatsAttachment, NatsStore};
use turnstile_tools::ToolRegistry;
use turnstile_tools::skills::SkillSet;

use crate::store::StoreArgs;

use crate::config::{ProviderType, WireApiSetting};
use crate::provider_flags::{ProviderFlags, ProviderKind, WireApiArg, model_config};
use crate::reached::{Endpoint, Reached};
use crate::session_flags;
use crate::terminal_permissions::{PlainRefusal, TerminalApproval};

/// Exit code of an aborted run (128 + SIGINT, as shells report it).
const EXIT_ABORTED: u8 = 130;

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

/// `turnstile run` arguments.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The prompt [default: read from stdin].
    pub prompt: Option<String>,
    /// The prompt, as the Copilot CLI's -p gives it.
    #[arg(
        short = 'p',
        long = "prompt",
        value_name = "PROMPT",
        conflicts_with = "prompt"
    )]
    pub prompt_option: Option<String>,
    /// Id of the new session [default: a fresh UUID].
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// Continue the most recently updated session of the working directory instead of
    /// starting one (`turnstile resume` with that session).
    #[arg(long = "continue", conflicts_with_all = ["session_id", "resume"])]
    pub continue_latest: bool,
    /// Continue session ID (id or unique prefix) instead of starting one; without an id,
    /// list the sessions to choose from (numbered, to pick one, in a terminal).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "", conflicts_with = "session_id")]
    pub resume: Option<String>,
    #[command(flatten)]
    pub opts: LoopArgs,
}

/// `turnstile resume` arguments: `SESSION [PROMPT]`, or `--last [PROMPT]`.
#[derive(Debug, Clone, Args)]
pub struct ResumeArgs {
    /// The session (id, unique id prefix or session directory) then, optionally, another
    /// prompt; with --last only the prompt. Without a prompt, stdin is read when it is not a
    /// terminal; otherwise resume only closes what a crash left open.
    #[arg(value_name = "SESSION | PROMPT", num_args = 0..=2, required_unless_present = "last")]
    pub args: Vec<String>,
    /// Resume the most recently updated session.
    #[arg(long)]
    pub last: bool,
    #[command(flatten)]
    pub opts: LoopArgs,
}

impl ResumeArgs {
    /// The session target and the prompt, as given.
    fn split(&self) -> Result<(Option<&str>, Option<&str>)> {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Ok(match (self.last, args.as_slice()) {
            (true, []) => (None, None),
            (true, [prompt]) => (None, Some(prompt)),
            (true, _) => {
                bail!("with --last, give at most a prompt (the session is the newest one)")
            }
            (false, [session]) => (Some(session), None),
            (false, [session, prompt]) => (Some(session), Some(prompt)),
            (false, _) => bail!("give the session to resume (or --last)"),
        })
    }
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
    current: Endpoint,
    /// It is to be recorded: the journal's last record names another (or none).
    record_endpoint: bool,
    model: Option<String>,
}

impl Reconnect {
    /// A new session's: its endpoint recorded, its model in `session.start` already.
    fn new_session(current: Endpoint) -> Self {
        Reconnect {
            current,
            record_endpoint: true,
            model: None,
        }
    }

    /// Fails when nobody listens where the model calls would go (see `crate::reachable`).
    fn reachable(&self) -> Result<(), crate::reachable::Unreachable> {
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

fn read_stdin_prompt() -> Result<String> {
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

/// A session attached to a JetStream store: the store, its lease and sink, its live feed.
struct Remote {
    store: NatsStore,
    id: uuid::Uuid,
    attachment: NatsAttachment,
    live: LiveFeed,
}

impl Remote {
    async fn attach(
        store: &StoreArgs,
        id: uuid::Uuid,
        root: &StateRoot,
        mode: AttachMode,
    ) -> Result<Option<Self>> {
        let Some(config) = store.nats()? else {
            return Ok(None);
        };
        let store = crate::store::open_nats(config).await?;
        let attachment = store
            .attach(id, root, mode)
            .await
            .with_context(|| format!("cannot open session {id} in {}", store.describe()))?;
        if mode == AttachMode::Resume {
            // A copy just made from the subject has no checkpoint of its own; the store's
            // folded state spares the resume a fold of the whole journal.
            match crate::stored_checkpoint::adopt(&store, id, &root.session(id).dir).await {
                Ok(crate::stored_checkpoint::Adopted::Mismatch) => eprintln!(
                    "note: the stored checkpoint of {id} does not match its journal; the journal is folded whole"
                ),
                Ok(_) => {}
                Err(e) => eprintln!("warning: the stored checkpoint of {id} is not used: {e:#}"),
            }
        }
        let live = store.live_feed(&attachment);
        Ok(Some(Remote {
            store,
            id,
            attachment,
            live,
        }))
    }

    /// Makes `parts` write through this attachment's sink.
    fn connect(remote: Option<&Self>, parts: &mut SessionParts) {
        if let Some(remote) = remote {
            parts.config.journal_sink = remote.attachment.sink();
        }
    }

    /// Detaches after the session ran; the session's own error, if any, comes first.
    async fn detach(
        remote: Option<Self>,
        root: &StateRoot,
        ran: Result<ExitCode>,
    ) -> Result<ExitCode> {
        let Some(remote) = remote else {
            return ran;
        };
        let failure = remote
            .attachment
            .nats_sink()
            .and_then(|sink| sink.failure());
        let detached = remote.store.detach(remote.attachment, root).await;
        if let Some(failure) = failure {
            return Err(anyhow::Error::new(failure).context("the session stopped"));
        }
        let code = ran?;
        detached.context("cannot record the session in the store")?;
        crate::stored_checkpoint::record_after_close(
            &remote.store,
            remote.id,
            &root.session(remote.id).dir,
        )
        .await;
        Ok(code)
    }
}

/// Runs `turnstile run`.
pub fn run(args: &RunArgs, state_dir: Option<&Path>, store: &StoreArgs) -> Result<ExitCode> {
    let given = args.prompt.as_ref().or(args.prompt_option.as_ref());
    if args.continue_latest || args.resume.is_some() {
        let Some(session) = continued(args, state_dir)? else {
            return Ok(ExitCode::from(2));
        };
        let resume_args = ResumeArgs {
            args: [Some(session), given.cloned()]
                .into_iter()
                .flatten()
                .collect(),
            last: false,
            opts: args.opts.clone(),
        };
        return resume(&resume_args, state_dir, store);
    }
    let prompt = match given {
        Some(p) => p.clone(),
        None => read_stdin_prompt()?,
    };
    let id = args
        .session_id
        .as_deref()
        .map(turnstile_journal::parse_session_id)
        .transpose()?;
    let cwd = working_dir(&args.opts)?;
    let root = StateRoot::resolve(state_dir)?;
    let (mut parts, mcp, endpoint) = parts(&args.opts, &cwd, &root)?;
    let reconnect = Reconnect::new_session(endpoint);
    if let Err(e) = reconnect.reachable() {
        note(&format!("error: {e}"));
        return Ok(ExitCode::from(1));
    }
    let otel = crate::otel_live::LiveExport::from_env();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        crate::mcp_servers::attach(&mcp, &mut parts).await?;
        let id = id.unwrap_or_else(uuid::Uuid::new_v4);
        let remote = Remote::attach(store, id, &root, AttachMode::Create).await?;
        Remote::connect(remote.as_ref(), &mut parts);
        let live = remote.as_ref().map(|r| r.live.clone());
        let hint = resume_hint(id, state_dir, store, &args.opts);
        let ran = async {
            let (session, events) = SessionHandle::create_subscribed(&root, Some(id), parts)?;
            let events = crate::otel_live::watched(otel.as_ref(), id, None, events);
            drive(
                &session,
                events,
                Some(prompt),
                &args.opts,
                live,
                reconnect,
                &hint,
            )
            .await
        }
        .await;
        Remote::detach(remote, &root, ran).await
    });
    // The session's last spans, after its stream ended (the runtime's workers still run).
    if let Some(otel) = &otel {
        otel.shutdown();
    }
    result
}

/// The session `run --continue` or `run --resume [ID]` continues; `None` when the user was
/// shown the list to choose from and chose none.
fn continued(args: &RunArgs, state_dir: Option<&Path>) -> Result<Option<String>> {
    let root = StateRoot::resolve(state_dir)?;
    match args.resume.as_deref() {
        Some("") => crate::commands::sessions::pick(&root),
        Some(id) => Ok(Some(id.to_owned())),
        None => {
            let cwd = working_dir(&args.opts)?;
            let (all, _) = turnstile_journal::SessionSummary::list_indexed(&root)?;
            let here = cwd.display().to_string();
            let id = all
                .iter()
                .filter(|s| s.cwd.as_deref() == Some(here.as_str()))
                .find_map(|s| s.id)
                .with_context(|| {
                    format!(
                        "no session of {here} in {} to continue (start one with `turnstile run`)",
                        root.dir().display()
                    )
                })?;
            Ok(Some(id.to_string()))
        }
    }
}

/// The command that resumes session `id`: the state directory and store named, and the working
/// directory (`resume` remembers the model and its server, not these).
fn resume_hint(
    id: uuid::Uuid,
    state_dir: Option<&Path>,
    store: &StoreArgs,
    opts: &LoopArgs,
) -> String {
    let mut hint = String::from("turnstile");
    if let Some(dir) = state_dir {
        hint.push_str(&format!(
            " --state-dir {}",
            shell_word(&dir.display().to_string())
        ));
    }
    if let Some(url) = &store.store {
        hint.push_str(&format!(" --store {}", shell_word(url)));
    }
    hint.push_str(&format!(" resume {id}"));
    if let Some(cwd) = &opts.cwd {
        hint.push_str(&format!(
            " --cwd {}",
            shell_word(&cwd.display().to_string())
        ));
    }
    hint
}

/// `word` as a shell reads it back: as is when it holds only safe characters, else quoted.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The newest session of a JetStream store, from its index.
/// The id of the newest session in the store's index.
pub(crate) fn newest_stored(store: &StoreArgs) -> Result<uuid::Uuid> {
    let Some(config) = store.nats()? else {
        bail!("no store");
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let store = crate::store::open_nats(config).await?;
        let all = store.list().await?;
        all.into_iter()
            .find_map(|s| s.id)
            .with_context(|| format!("no sessions in {}", store.describe()))
    })
}

/// Runs `turnstile resume`.
pub fn resume(args: &ResumeArgs, state_dir: Option<&Path>, store: &StoreArgs) -> Result<ExitCode> {
    let root = StateRoot::resolve(state_dir)?;
    let (target, prompt) = args.split()?;
    let remote_store = store.store.is_some();
    let id = match target {
        None if remote_store => newest_stored(store)?,
        None => crate::target::newest_session(&root)?,
        Some(target) if remote_store => crate::store::session_id(target)?,
        Some(target) => {
            let paths = crate::target::resolve(target, state_dir)?;
            paths
                .id
                .with_context(|| format!("{target} is not a session of the state directory"))?
        }
    };
    let prompt = match prompt {
        Some(p) => Some(p.to_owned()),
        // Piped stdin holds the prompt; empty stdin (`< /dev/null`) means none, like a terminal.
        None if !std::io::stdin().is_terminal() => read_stdin_prompt().ok(),
        None => None,
    };
    let cwd = working_dir(&args.opts)?;
    let otel = crate::otel_live::LiveExport::from_env();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        // A stored session's journal is here once attached: what it remembers is read after.
        let remote = Remote::attach(store, id, &root, AttachMode::Resume).await?;
        let live = remote.as_ref().map(|r| r.live.clone());
        let hint = resume_hint(id, state_dir, store, &args.opts);
        let ran = async {
            let (mut parts, mcp, reconnect) = resumed_parts(&args.opts, &cwd, &root, id)?;
            if let (Some(_), Err(e)) = (&prompt, reconnect.reachable()) {
                note(&format!("error: {e}"));
                return Ok(ExitCode::from(1));
            }
            Remote::connect(remote.as_ref(), &mut parts);
            crate::mcp_servers::attach(&mcp, &mut parts).await?;
            let otel = otel.as_ref();
            resume_session(&root, id, parts, prompt, args, live, reconnect, &hint, otel).await
        }
        .await;
        Remote::detach(remote, &root, ran).await
    });
    if let Some(otel) = &otel {
        otel.shutdown();
    }
    result
}

#[allow(clippy::too_many_arguments)]
async fn resume_session(
    root: &StateRoot,
    id: uuid::Uuid,
    parts: SessionParts,
    prompt: Option<String>,
    args: &ResumeArgs,
    live: Option<LiveFeed>,
    reconnect: Reconnect,
    hint: &str,
    otel: Option<&crate::otel_live::LiveExport>,
) -> Result<ExitCode> {
    {
        let (session, report, events) = SessionHandle::resume_subscribed(root, id, parts)
            .with_context(|| format!("cannot resume session {id}"))?;
        let endpoint = reconnect.current.message();
        let events = crate::otel_live::watched(otel, id, Some(&endpoint), events);
        if !args.opts.json {
            note(&format!(
                "resumed {id}: {} events{}{}",
                report.events_before,
                if report.closed_tool_calls.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", {} interrupted tool call(s) marked failed",
                        report.closed_tool_calls.len()
                    )
                },
                if report.torn_tail_cut {
                    ", torn tail cut"
                } else {
                    ""
                }
            ));
        }
        drive(&session, events, prompt, &args.opts, live, reconnect, hint).await
    }
}

/// Sends the prompt (if any), prints events as they come, handles Ctrl-C, shuts down.
async fn drive(
    session: &SessionHandle,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>,
    prompt: Option<String>,
    opts: &LoopArgs,
    live: Option<LiveFeed>,
    reconnect: Reconnect,
    hint: &str,
) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    // Told once when stdout's reader goes away: the session then ends as after a Ctrl-C.
    let gone = Arc::new(tokio::sync::Notify::new());
    // Questions of the terminal's approvals are shown by the printer, after the events
    // recorded before them (`terminal_permissions.rs`).
    let (questions_tx, mut questions) = tokio::sync::mpsc::unbounded_channel::<String>();
    crate::terminal_permissions::show_questions_through(questions_tx);
    let printer = {
        let json = opts.json;
        let gone = Arc::clone(&gone);
        tokio::spawn(async move {
            let mut printer = crate::live_view::LiveView::new(json);
            let mut told = false;
            let mut ended = false;
            loop {
                // Events first: everything recorded before a question was asked is queued
                // by then.
                let event = tokio::select! {
                    biased;
                    event = events.recv() => event,
                    Some(question) = questions.recv() => {
                        crate::terminal_permissions::note(&question);
                        continue;
                    }
                };
                let Some(event) = event else { break };
                // The runtime's stream ends with `session.shutdown`: what the session announces
                // after it (its background tasks let go, for SDK clients) is not printed.
                if ended {
                    continue;
                }
                ended = event.event_type.as_str() == "session.shutdown";
                printer.print(&event);
                if printer.reader_gone() && !told {
                    told = true;
                    gone.notify_one();
                }
                if let Some(live) = &live {
                    live.publish(&event).await;
                }
            }
            (told, printer)
        })
    };
    reconnect.record(session).await?;
    let outcome = match prompt {
        None => Outcome::Idle,
        Some(prompt) => {
            let (_, done) = session.send(prompt, SendOptions::default())?;
            tokio::pin!(done);
            let mut interrupts = 0;
            let mut reader_gone = false;
            loop {
                tokio::select! {
                    outcome = &mut done => break outcome.context("the session stopped unexpectedly")?,
                    _ = gone.notified(), if !reader_gone => {
                        reader_gone = true;
                        session.abort();
                    }
                    _ = tokio::signal::ctrl_c() => {
                        interrupts += 1;
                        if interrupts > 1 {
                            // Second Ctrl-C: leave now. The journal holds whole lines only, and
                            // what was not fsynced is what a crash would lose as well.
                            note("\ninterrupted again: exiting");
                            std::process::exit(i32::from(EXIT_ABORTED));
                        }
                        note("\naborting (Ctrl-C again to exit at once)");
                        session.abort();
                    }
                }
            }
        }
    };
    session
        .shutdown()
        .await
        .context("could not close the session cleanly")?;
    let (gone, view) = printer
        .await
        .context("the event printer stopped unexpectedly")?;
    if gone {
        // Nobody reads the answers: end quietly, as a command whose reader left.
        return Ok(ExitCode::from(crate::closed_pipe::EXIT_CLOSED_PIPE));
    }
    let id = session.id();
    if !opts.json {
        note(&format!(
            "\n{}\nsession {id}\nresume with: {hint}",
            view.summary(started.elapsed())
        ));
    }
    Ok(match outcome {
        Outcome::Idle => ExitCode::SUCCESS,
        Outcome::Aborted => ExitCode::from(EXIT_ABORTED),
        Outcome::Failed {
            error_type,
            status_code,
            message,
        } => {
            note(&format!(
                "error: the model call failed ({error_type}{}): {message}",
                status_code
                    .map(|c| format!(", HTTP {c}"))
                    .unwrap_or_default()
            ));
            ExitCode::from(1)
        }
    })
}

/// A line on stderr; a failed write is dropped (the reader of stderr left too).
fn note(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
