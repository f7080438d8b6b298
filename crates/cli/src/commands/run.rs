//! `turnstile run`: start a session and drive it through the agent loop (`--continue` and
//! `--resume` hand over to `turnstile resume`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_journal::StateRoot;
use turnstile_loop::SessionHandle;
use turnstile_store::AttachMode;

use crate::store::StoreArgs;
use crate::terminal_permissions::note;

use super::drive::{drive, resume_hint};
use super::remote::Remote;
use super::resume::{ResumeArgs, resume};
use super::session_start::{LoopArgs, Reconnect, parts, read_stdin_prompt, working_dir};

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
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    // After the runtime, so dropped before it: the sessions' last spans are sent while its
    // workers still run the streams' ends.
    let otel = crate::otel_live::LiveTraces::from_env();
    runtime.block_on(async {
        crate::mcp_servers::attach(&mcp, &mut parts).await?;
        let id = id.unwrap_or_else(uuid::Uuid::new_v4);
        let remote = Remote::attach(store, id, &root, AttachMode::Create).await?;
        Remote::connect(remote.as_ref(), &mut parts);
        let live = remote.as_ref().map(|r| r.live.clone());
        let hint = resume_hint(id, state_dir, store, &args.opts);
        let ran = async {
            let (session, events) = SessionHandle::create_subscribed(&root, Some(id), parts)?;
            let events = crate::otel_live::watched(otel.export(), id, None, events);
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
    })
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
