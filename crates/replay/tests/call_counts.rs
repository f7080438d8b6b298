//! The audit counts every LLM call, of either runtime's journals, and agrees with the figures
//! `session.shutdown` reports: every journal under `fixtures/` is audited up to its last
//! `session.shutdown`, whose `modelMetrics` requests must be the calls counted; and where the
//! requests a real Copilot runtime sent are recorded beside its journal, all of them, the
//! audit's count is their number.

use std::path::{Path, PathBuf};

use serde_json::Value;
use turnstile_replay::audit::audit_bytes;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every journal under `dir`: `events.jsonl` and `*.events.jsonl`, in path order.
fn journals(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        // A fixture's working directory holds the files its session worked on, not journals.
        if path.is_dir()
            && !path.ends_with("workdir")
            && !path.to_string_lossy().ends_with("-workdir")
        {
            journals(&path, out);
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("events.jsonl"))
        {
            out.push(path);
        }
    }
}

/// The journals of the real Copilot runtime whose shutdown counts fewer calls than the journal
/// holds, and why (`docs/journal-format.md`). turnstile's own journals have no exception.
const RUNTIME_UNDERCOUNTS: &[(&str, &str)] = &[
    // Killed mid-tool: the killed process's call is in the journal, not in the resumed
    // process's totals (the runtime keeps them in memory only).
    ("k1-killed-resumed.events.jsonl", "killed process"),
    // 1.0.81-0 leaves the summary calls of its failed compactions (three) out of its totals.
    ("t1-truncated.events.jsonl", "compaction calls"),
    // The runtime's totals start again at a compaction: 1.0.81-0 counted 3 of its 10 turns
    // and 1 summary call (the calls after the compaction), the SDK 1.0.14 bundle 2 of 11.
    ("c2-compacted.events.jsonl", "compaction"),
    ("p1-compacted.events.jsonl", "compaction"),
    // The runtime cut the journal at a rewind point; its totals still hold the calls cut away.
    ("08-resumed.events.jsonl", "rewound"),
];

/// The sum of `requests.count` over the models of a `session.shutdown`'s `modelMetrics`.
fn shutdown_requests(data: &Value) -> u64 {
    data["modelMetrics"]
        .as_object()
        .map(|m| {
            m.values()
                .map(|v| v["requests"]["count"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn the_audit_counts_what_every_fixtures_shutdown_counts() {
    let mut paths = Vec::new();
    journals(&fixtures(), &mut paths);
    assert!(paths.len() > 20, "{paths:?}");
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        // The journal up to and including its last shutdown: the calls that shutdown saw.
        let mut end = 0;
        let mut last = None;
        for (start, line) in bytes.split_inclusive(|b| *b == b'\n').scan(0, |at, l| {
            let start = *at;
            *at += l.len();
            Some((start, l))
        }) {
            let Ok(event) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if event["type"] == "session.shutdown" {
                end = start + line.len();
                last = Some(event["data"].clone());
            }
        }
        let Some(shutdown) = last else { continue };
        let name = path.file_name().unwrap().to_str().unwrap();
        let report = audit_bytes(name, &bytes[..end]);
        let recorded = shutdown_requests(&shutdown);
        let runtime = path.starts_with(fixtures().join("copilot-runtime"));
        let excused = runtime && RUNTIME_UNDERCOUNTS.iter().any(|(n, _)| *n == name);
        if excused {
            assert!(
                recorded < report.llm_calls,
                "{}: listed as undercounted, yet its shutdown counts {recorded} of {} calls",
                path.display(),
                report.llm_calls
            );
        } else if recorded != report.llm_calls {
            failures.push(format!(
                "{}: shutdown counts {recorded} requests, the audit {} calls ({:?})",
                path.display(),
                report.llm_calls,
                report.llm_call_kinds
            ));
        }
        // turnstile's newer shutdowns also break the calls down by agent.
        if let Some(agents) = shutdown["agentMetrics"].as_object()
            && !excused
        {
            let by_agent: u64 = agents.values().map(shutdown_requests).sum();
            if by_agent != recorded {
                failures.push(format!(
                    "{}: agentMetrics counts {by_agent} requests, modelMetrics {recorded}",
                    path.display()
                ));
            }
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 15, "only {checked} journals have a shutdown");
}

#[test]
fn the_audit_counts_every_request_the_runtime_sent() {
    // The recordings whose requests file holds every request the runtime sent.
    let dir = fixtures().join("copilot-runtime");
    for (journal, requests) in [
        ("s1-subagents.events.jsonl", "s1-subagents.requests.json"),
        ("s1-skill.events.jsonl", "s1-skill.requests.json"),
        // 10 main requests and 1 summary request.
        ("c2-compacted.events.jsonl", "c2-compacted.requests.json"),
    ] {
        let bytes = std::fs::read(dir.join(journal)).unwrap();
        let sent: Vec<Value> =
            serde_json::from_slice(&std::fs::read(dir.join(requests)).unwrap()).unwrap();
        let report = audit_bytes(journal, &bytes);
        assert_eq!(
            report.llm_calls,
            sent.len() as u64,
            "{journal}: {:?}",
            report.llm_call_kinds
        );
    }
}
