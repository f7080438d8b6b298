//! `turnstile report`: a session as one self-contained HTML page (`turnstile-report`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_home::AtomicWrite;
use turnstile_report::{ReportOptions, write_report};

/// Arguments of `turnstile report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A session id, a unique id prefix, a session directory or an events.jsonl path.
    #[arg(required_unless_present = "last")]
    pub target: Option<String>,
    /// The most recently updated session of the state directory.
    #[arg(long, conflicts_with = "target")]
    pub last: bool,
    /// Where to write the page [default: report.html in the current directory].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Turns drawn in full; later ones are only counted (the chart and the audit cover all).
    #[arg(long, value_name = "N", default_value_t = turnstile_report::DEFAULT_MAX_TURNS_DRAWN)]
    pub max_turns: u64,
}

/// Writes the report and prints where it went.
pub fn run(args: &ReportArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let paths = match &args.target {
        Some(target) => crate::target::resolve(target, state_dir)?,
        None => {
            let root = turnstile_journal::StateRoot::resolve(state_dir)?;
            root.session(crate::target::newest_session(&root)?)
        }
    };
    paths.check_events_file()?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("report.html"));
    let options = ReportOptions {
        max_turns_drawn: args.max_turns,
    };
    // Replaced whole (`atomic_write`: written beside the destination, fsynced, renamed over
    // it), so a failed report never leaves half a page where a previous one was.
    let summary = AtomicWrite::new(&output).write_with(|out| {
        write_report(&paths.events, out, &options)
            .with_context(|| format!("writing {}", output.display()))
    })?;
    let note = if summary.turns_drawn < summary.turns {
        format!(" ({} drawn; --max-turns draws more)", summary.turns_drawn)
    } else {
        String::new()
    };
    println!(
        "{}: {}{note}, {}, {}, {}",
        output.display(),
        count(summary.turns, "turn"),
        count(summary.lanes as u64, "lane"),
        count(summary.violations, "violation"),
        count(summary.bytes, "byte")
    );
    Ok(ExitCode::SUCCESS)
}

/// "1 lane", "2 lanes".
fn count(n: u64, one: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {one}s")
    }
}
