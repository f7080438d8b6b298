//! `turnstile compact SESSION`: the history compacted now, as the SDK's
//! `session.history.compact` does: one summary call to the model, recorded in the journal.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_loop::CompactOptions;

use super::one_operation::{session_id, with_session};
use super::session_start::LoopArgs;

/// `turnstile compact` arguments.
#[derive(Debug, Clone, Args)]
pub struct CompactArgs {
    /// The session (id, unique id prefix or session directory).
    #[arg(default_value = "", hide_default_value = true)]
    pub session: String,
    /// The most recently updated session, instead of naming one.
    #[arg(long, conflicts_with = "session")]
    pub last: bool,
    /// What the summary should focus on.
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    #[command(flatten)]
    pub opts: LoopArgs,
}

/// Runs `turnstile compact`: exit 0 when a summary replaced part of the history, 1 when
/// nothing was compacted (the reason is printed and, for a failed call, in the journal).
pub fn run(args: &CompactArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let id = session_id(&args.session, state_dir)?;
    let report = with_session(id, &args.opts, state_dir, async |session| {
        session
            .compact(CompactOptions {
                custom_instructions: args.instructions.clone(),
                ..Default::default()
            })
            .await
            .with_context(|| format!("cannot compact session {id}"))
    })?;
    let window = &report.context_window;
    if args.opts.json {
        let value = serde_json::json!({
            "success": report.success,
            "messagesRemoved": report.messages_removed,
            "tokensRemoved": report.tokens_removed,
            "summaryContent": report.summary,
            "error": report.error,
            "contextWindow": {
                "tokenLimit": window.token_limit,
                "currentTokens": window.current_tokens,
                "messagesLength": window.messages_length,
            },
        });
        writeln!(std::io::stdout().lock(), "{value}")?;
    } else if report.success {
        writeln!(
            std::io::stdout().lock(),
            "compacted {id}: {} messages ({} tokens) replaced by a summary; the next request holds about {} of {} tokens",
            report.messages_removed,
            report.tokens_removed,
            window.current_tokens,
            window.token_limit
        )?;
    } else {
        eprintln!(
            "session {id} was not compacted: {}",
            report.error.as_deref().unwrap_or("no reason given")
        );
    }
    Ok(if report.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
