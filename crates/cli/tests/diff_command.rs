//! `turnstile diff A B` on real files: the same session twice, a journal edited line by line,
//! sessions named by id in a state directory, the real Copilot CLI's journal against
//! turnstile's replay of it, hostile input, and `replay --check` showing the first divergence.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::common::repo::{fixture, text, turnstile};

fn diff(args: &[&str]) -> Output {
    turnstile().arg("diff").args(args).output().unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `journal` with line `line` (1-based) changed by `change`, as `dir/events.jsonl`.
fn edited(journal: &Path, dir: &Path, line: usize, change: impl FnOnce(&mut Value)) -> PathBuf {
    let mut lines: Vec<String> = std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let mut event: Value = serde_json::from_str(&lines[line - 1]).unwrap();
    change(&mut event);
    lines[line - 1] = event.to_string();
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("events.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The line number of the `nth` (1-based) `tool.execution_complete` of `journal`.
fn nth_result(journal: &Path, nth: usize) -> usize {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("\"type\":\"tool.execution_complete\""))
        .nth(nth - 1)
        .unwrap()
        .0
        + 1
}

#[test]
fn the_same_session_twice_exits_0() {
    let journal = fixture("multi-turn/events.jsonl");
    let out = diff(&[s(&journal), s(&journal)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("same: 8 LLM calls, 8 tool calls"),
        "{stdout}"
    );
}

#[test]
fn a_changed_tool_result_exits_1_and_is_named_in_words_and_json() {
    let journal = fixture("multi-turn/events.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let line = nth_result(&journal, 3);
    let changed = edited(&journal, tmp.path(), line, |e| {
        e["data"]["result"]["content"] = json!("nothing here")
    });
    let out = diff(&[s(&journal), s(&changed)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for expected in [
        "first divergence: the result of tool call 3 (view) differs in data.result.content"
            .to_owned(),
        "  field: data.result.content".to_owned(),
        format!("  B line {line}: result of tool call 3 (view)"),
        "    \"nothing here\"".to_owned(),
    ] {
        assert!(
            stdout.contains(&expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    let out = diff(&["--json", s(&journal), s(&changed)]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["same"], false);
    assert_eq!(report["profile"], "strict");
    assert_eq!(report["a"]["runtime"], "turnstile");
    let d = &report["divergence"];
    assert_eq!(d["kind"], "toolResult");
    assert_eq!(d["field"], "data.result.content");
    assert_eq!(d["b"]["line"], line);
    assert_eq!(d["b"]["toolCall"], 3);
    assert_eq!(d["b"]["tool"], "view");
    assert_eq!(d["b"]["step"], "toolResult");
    assert_eq!(d["b"]["value"], "nothing here");
    assert_eq!(report["compared"]["llmCalls"], 2);
}

#[test]
fn sessions_are_named_by_id_or_prefix_in_the_state_directory() {
    let state = tempfile::tempdir().unwrap();
    let journal = fixture("multi-turn/events.jsonl");
    let (a, b) = (
        "aaaa0000-0000-4000-8000-000000000001",
        "bbbb0000-0000-4000-8000-000000000002",
    );
    for id in [a, b] {
        let dir = state.path().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&journal, dir.join("events.jsonl")).unwrap();
    }
    let out = turnstile()
        .args(["--state-dir", s(state.path()), "diff", a, "bbbb0000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = turnstile()
        .args(["--state-dir", s(state.path()), "diff", a, "cccc0000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no session id starts with \"cccc0000\""));
}

#[test]
fn the_copilot_cli_journal_against_turnstiles_replay_of_it() {
    let state = tempfile::tempdir().unwrap();
    let id = "c1c1c1c1-0000-4000-8000-000000000001";
    let out = turnstile()
        .args(["--state-dir", s(state.path()), "replay"])
        .arg(fixture("copilot-runtime-replay/c1.fixture.json"))
        .args(["--session-id", id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let recording = fixture("copilot-runtime/c1-new-session.events.jsonl");
    let out = turnstile()
        .args(["--state-dir", s(state.path()), "diff", s(&recording), id])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("(Copilot CLI)"), "{stdout}");
    assert!(stdout.contains("(turnstile)"), "{stdout}");
    assert!(
        stdout.contains("same: 3 LLM calls, 2 tool calls"),
        "{stdout}"
    );
    assert!(stdout.contains("(behaviour profile)"), "{stdout}");
    // Event by event, each runtime's bookkeeping differs.
    let out = turnstile()
        .args([
            "--state-dir",
            s(state.path()),
            "diff",
            "--profile",
            "strict",
            s(&recording),
            id,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
}

#[test]
fn damaged_and_hostile_journals_exit_2_naming_the_file_and_line() {
    let journal = fixture("multi-turn/events.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let lines: Vec<&str> = include_str!("../../../fixtures/multi-turn/events.jsonl")
        .lines()
        .collect();
    let write = |name: &str, bytes: &[u8]| {
        let path = tmp.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let all = lines.join("\n");
    // The last line cut short, without its newline: a torn write.
    let torn = write("torn.jsonl", &all.as_bytes()[..all.len() - 30]);
    let mut garbage = lines.clone();
    garbage.insert(6, "\u{1}\u{2} no json");
    let garbage = write("garbage.jsonl", (garbage.join("\n") + "\n").as_bytes());
    for (bad, expected) in [
        (&torn, format!("{}:{}", torn.display(), lines.len())),
        (&garbage, format!("{}:7", garbage.display())),
    ] {
        let out = diff(&[s(&journal), s(bad)]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in {stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = diff(&[s(&journal), s(&tmp.path().join("none/events.jsonl"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no such file or directory"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_two_gigabyte_line_is_refused_without_being_held() {
    // Sparse: 2 GiB of line for no disk.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("events.jsonl");
    let head: Vec<&str> = include_str!("../../../fixtures/multi-turn/events.jsonl")
        .lines()
        .take(3)
        .collect();
    let head = head.join("\n") + "\n{\"type\":\"session.info\",\"data\":{\"message\":\"";
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(head.as_bytes()).unwrap();
    file.seek(SeekFrom::Start(head.len() as u64 + (2 << 30)))
        .unwrap();
    file.write_all(b"\"}}\n").unwrap();
    drop(file);
    let journal = fixture("multi-turn/events.jsonl");
    let out = diff(&[s(&journal), s(&path)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:4", path.display())),
        "{stderr}"
    );
}

#[test]
fn a_failed_replay_check_shows_the_first_divergence_as_diff_finds_it() {
    // The replay's tools work in the directory as it is: one copy a run.
    let changed_copy = || {
        let work = tempfile::tempdir().unwrap();
        turnstile_testing::copy_tree(&fixture("multi-turn/workdir"), work.path()).unwrap();
        std::fs::write(
            work.path().join("inventory.csv"),
            "item,count\napples,3\npears,2\nplums,0\n",
        )
        .unwrap();
        work
    };
    let work = changed_copy();
    let state = tempfile::tempdir().unwrap();
    let out = turnstile()
        .args([
            "--state-dir",
            s(state.path()),
            "replay",
            "--check",
            "--cwd",
            s(work.path()),
        ])
        .arg(fixture("multi-turn"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for expected in [
        "as `turnstile diff ",
        "(A the recording, B the replay):",
        "first divergence: the result of tool call 4 (view) differs in data.result.content",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    let work = changed_copy();
    let out = turnstile()
        .args([
            "--state-dir",
            s(state.path()),
            "replay",
            "--check",
            "--json",
            "--cwd",
            s(work.path()),
        ])
        .arg(fixture("multi-turn"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["firstDivergence"]["kind"], "toolResult");
    assert_eq!(report["firstDivergence"]["a"]["line"], 16);
}
