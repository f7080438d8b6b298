//! `turnstile resume`: open a session of the state directory or the store again, close what a
//! crash left open, and drive it with another prompt.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::StateRoot;
use turnstile_loop::{SessionHandle, SessionParts};
use turnstile_store::{AttachMode, JournalStore};
use turnstile_store_nats::LiveFeed;

use crate::store::StoreArgs;
use crate::terminal_permissions::note;

use super::drive::{drive, resume_hint};
use super::remote::Remote;
use super::session_start::{LoopArgs, Reconnect, read_stdin_prompt, resumed_parts, working_dir};

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
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // After the runtime, so dropped before it (as in `run`).
    let otel = crate::otel_live::LiveTraces::from_env();
    runtime.block_on(async {
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
            let otel = otel.export();
            resume_session(&root, id, parts, prompt, args, live, reconnect, &hint, otel).await
        }
        .await;
        Remote::detach(remote, &root, ran).await
    })
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
