//! `turnstile repair`: cut a torn tail; with `--salvage`, move bad lines aside too.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use turnstile_journal::writer_lock::WriterLock;
use turnstile_journal::{JournalScan, RepairError, repair};

/// Repairs `target` under the session's writer lock.
pub fn run(target: &str, salvage: bool, state_dir: Option<&Path>) -> Result<ExitCode> {
    let paths = crate::target::resolve(target, state_dir)?;
    paths.check_events_file()?;
    // A repair rewrites the journal: no writer may append meanwhile.
    let _lock = WriterLock::acquire(&paths.lock)
        .with_context(|| format!("cannot repair {}", paths.events.display()))?;
    match repair(&paths.events, salvage) {
        Ok(outcome) if outcome.side_file.is_none() => {
            let kept = JournalScan::of_file(&paths.events)?;
            if kept.ephemeral_total > 0 {
                let lines: Vec<String> =
                    kept.ephemeral.iter().map(|e| e.line.to_string()).collect();
                println!(
                    "{}: nothing to cut; {} ephemeral event(s) in the middle (line(s) {}) are kept: the events after them name them as parents, so moving them would break the chain",
                    paths.events.display(),
                    kept.ephemeral_total,
                    lines.join(", ")
                );
            } else {
                println!("{}: clean, nothing to repair", paths.events.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok(outcome) => {
            println!(
                "{}: {}; moved {} line(s), {} bytes to {}",
                paths.events.display(),
                outcome.reason.as_deref().unwrap_or("repaired"),
                outcome.lines_moved,
                outcome.bytes_cut,
                outcome
                    .side_file
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ RepairError::NeedsSalvage { .. }) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}
