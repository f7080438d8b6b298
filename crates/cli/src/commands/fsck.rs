//! `turnstile fsck`: check every line of a journal; exit 0 clean, 1 damaged.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;
use turnstile_journal::{JournalScan, Verdict};

/// Checks `target` and reports each problem with its line.
pub fn run(target: &str, json: bool, state_dir: Option<&Path>) -> Result<ExitCode> {
    let paths = crate::target::resolve(target, state_dir)?;
    paths.check_events_file()?;
    let scan = JournalScan::of_file(&paths.events)?;
    let verdict = scan.verdict();
    let mut problems = Vec::new();
    for bad in &scan.bad {
        problems.push(json!({"line": bad.line, "offset": bad.offset, "kind": "bad-line", "message": bad.message}));
    }
    if let Some(tail) = &scan.tail {
        let what = if tail.all_nul {
            "trailing NUL bytes"
        } else {
            "incomplete last line (no newline)"
        };
        problems.push(json!({"line": tail.line, "offset": tail.offset, "kind": "torn-tail", "message": format!("{what}, {} bytes", tail.len)}));
    }
    let (state, advice) = match &verdict {
        Verdict::Clean => ("clean", None),
        Verdict::TornTail { .. } => (
            "torn-tail",
            Some(
                "`turnstile repair` cuts the torn tail to a side file (opening the session for append does the same)",
            ),
        ),
        Verdict::Damaged { .. } => (
            "damaged",
            Some(
                "`turnstile repair --salvage` moves the bad lines to a side file and keeps every good line",
            ),
        ),
    };
    if json {
        let report = json!({
            "path": paths.events,
            "state": state,
            "events": scan.good_lines,
            "bytes": scan.file_len,
            "badLines": scan.bad_total,
            "problems": problems,
            "advice": advice,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{}: {state}, {} valid events, {} bytes",
            paths.events.display(),
            scan.good_lines,
            scan.file_len
        );
        for p in &problems {
            println!(
                "  line {} (byte {}): {}: {}",
                p["line"],
                p["offset"],
                p["kind"].as_str().unwrap_or(""),
                p["message"].as_str().unwrap_or("")
            );
        }
        if scan.bad_total > scan.bad.len() as u64 {
            println!(
                "  ... and {} more bad lines",
                scan.bad_total - scan.bad.len() as u64
            );
        }
        if let Some(advice) = advice {
            println!("fix: {advice}");
        }
    }
    Ok(if verdict == Verdict::Clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
