//! `turnstile checkpoint`: write (or `--verify`) the checkpoint sidecar of a session, so that
//! loading it later folds only the journal's tail.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_replay::{verify_checkpoint, write_checkpoint};

/// Arguments of `turnstile checkpoint`.
#[derive(Debug, Clone, Args)]
pub struct CheckpointArgs {
    /// A session id, a unique id prefix or a session directory.
    pub target: String,
    /// Check the existing checkpoint thoroughly (CRC32C of the whole prefix and a refold)
    /// instead of writing a new one; exit 1 when it does not match the journal.
    #[arg(long)]
    pub verify: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Writes or verifies the checkpoint of the target session.
pub fn run(args: &CheckpointArgs, state_root: Option<&Path>) -> Result<ExitCode> {
    let paths = crate::target::resolve(&args.target, state_root)?;
    paths.check_events_file()?;
    if paths.events.file_name().and_then(|n| n.to_str()) != Some(EVENTS_FILE)
        || paths.events.parent() != Some(paths.dir.as_path())
    {
        bail!(
            "{} is not a session's {EVENTS_FILE}: checkpoints live in session directories (give the session id or its directory)",
            paths.events.display()
        );
    }
    let dir = &paths.dir;
    if args.verify {
        let report = verify_checkpoint(dir)
            .with_context(|| format!("verifying the checkpoint of {}", dir.display()))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else if report.is_ok() {
            println!(
                "{}: checkpoint matches the journal (guard, prefix CRC32C, refolded state)",
                dir.display()
            );
        } else {
            println!(
                "{}: checkpoint does not match: {}",
                dir.display(),
                report.problem.as_deref().unwrap_or("unknown difference")
            );
            println!(
                "fix: `turnstile checkpoint {}` writes a fresh one",
                args.target
            );
        }
        return Ok(if report.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let info = write_checkpoint(dir)
        .with_context(|| format!("writing the checkpoint of {}", dir.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        let how = match &info.load.fallback_reason {
            None => format!(
                "previous checkpoint + {} bytes of tail",
                info.load.tail_bytes
            ),
            Some(reason) => format!("whole journal folded ({reason})"),
        };
        println!(
            "wrote {}: {} events, {} bytes ({how})",
            info.path.display(),
            info.event_count,
            info.offset
        );
        if let Some(at) = info.load.torn_tail_at {
            println!("note: the last line (byte {at}) has no newline yet and is not covered");
        }
    }
    Ok(ExitCode::SUCCESS)
}
