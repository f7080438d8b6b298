//! `turnstile audit`: exact counts and invariant checks of a journal; exit 0 clean, 1 violations.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use turnstile_replay::audit::{ScanOptions, audit_file_with, count_type_with};

/// Journals larger than this get a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// Arguments of `turnstile audit`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// A session id, a unique id prefix, a session directory or an events.jsonl path.
    #[arg(default_value = "", hide_default_value = true)]
    pub target: String,
    /// The most recently updated session, instead of naming one.
    #[arg(long, conflicts_with = "target")]
    pub last: bool,
    /// Print the report (or, with --count, the count) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only count the events of this exact top-level type (e.g. assistant.turn_start = LLM calls).
    #[arg(long, value_name = "TYPE")]
    pub count: Option<String>,
}

/// Audits the target journal and prints the report.
pub fn run(args: &AuditArgs, state_root: Option<&Path>) -> Result<ExitCode> {
    let paths = crate::target::resolve(&args.target, state_root)?;
    paths.check_events_file()?;
    let events = &paths.events;
    let size = std::fs::metadata(events)
        .with_context(|| format!("cannot read {}", events.display()))?
        .len();
    let bar = progress_bar(size);
    let mut progress = |done: u64, _total: u64| {
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
    };
    let options = ScanOptions::default();
    if let Some(event_type) = &args.count {
        crate::type_warning::warn_unknown([event_type]);
        let count = count_type_with(events, event_type, &options, &mut progress)
            .with_context(|| format!("counting {event_type} in {}", events.display()))?;
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        if args.json {
            println!(
                "{}",
                serde_json::json!({"path": events, "type": event_type, "count": count})
            );
        } else {
            println!("{count}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = audit_file_with(events, &options, &mut progress)
        .with_context(|| format!("auditing {}", events.display()))?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_table());
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A byte progress bar on stderr, only for large files and only when a person is watching.
fn progress_bar(size: u64) -> Option<ProgressBar> {
    if size <= PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(size);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
    {
        bar.set_style(style);
    }
    Some(bar)
}
