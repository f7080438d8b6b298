//! `turnstile fsck`: check every line of a journal; exit 0 clean, 1 damaged (or holding
//! ephemeral events another program wrote).

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
    let trailing_from = scan.trailing_ephemeral.as_ref().map(|t| t.line);
    for eph in &scan.ephemeral {
        let (kind, message) = if trailing_from.is_some_and(|first| eph.line >= first) {
            (
                "ephemeral-tail",
                format!(
                    "ephemeral event `{}` after the last persisted event (written by another program): the next event could not chain to it",
                    eph.event_type
                ),
            )
        } else {
            (
                "ephemeral",
                format!(
                    "ephemeral event `{}` on disk (written by another program); kept, because the next event names it as its parent",
                    eph.event_type
                ),
            )
        };
        problems.push(
            json!({"line": eph.line, "offset": eph.offset, "kind": kind, "message": message}),
        );
    }
    problems.sort_by_key(|p| p["line"].as_u64());
    if let Some(tail) = &scan.tail {
        let what = if tail.all_nul {
            "trailing NUL bytes"
        } else {
            "incomplete last line (no newline)"
        };
        problems.push(json!({"line": tail.line, "offset": tail.offset, "kind": "torn-tail", "message": format!("{what}, {} bytes", tail.len)}));
    }
    let (state, advice) = match &verdict {
        Verdict::Clean if scan.ephemeral_total > 0 => (
            "ephemeral-events",
            Some(
                "nothing to cut: the session can be resumed; the lines stay because the events after them chain to them (`turnstile audit` counts them as violations)",
            ),
        ),
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
            "ephemeralLines": scan.ephemeral_total,
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
        if scan.ephemeral_total > scan.ephemeral.len() as u64 {
            println!(
                "  ... and {} more ephemeral lines",
                scan.ephemeral_total - scan.ephemeral.len() as u64
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
    Ok(if verdict == Verdict::Clean && scan.ephemeral_total == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
