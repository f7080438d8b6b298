//! `turnstile replay --check` over the fixture corpus, and the ways it fails: a file the
//! recording read has changed, a tool it called is gone, the recorded answers run out.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::repo::{root as repo, text, turnstile};

/// Fixtures that do not replay exactly, with the phrase their report must contain (an entry
/// fails the test as soon as its fixture passes, so the list cannot go stale).
///
/// Empty: the `w1` steps from the truncation on, which were listed here, replay now (their
/// unanswered prompt is sent, aborted and truncated away, as the runtime did).
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[];

fn fixtures() -> PathBuf {
    repo().join("fixtures")
}

fn replay_check(fixture: &Path, extra: &[&str]) -> Output {
    turnstile()
        .arg("replay")
        .arg(fixture)
        .arg("--check")
        .args(extra)
        .output()
        .unwrap()
}

/// A copy of a fixture directory (journal, workdir/, manifest) that a test may edit.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    turnstile_testing::copy_tree(&fixtures().join(name), dir.path()).unwrap();
    dir
}

/// The corpus in three tests, so that the harness runs them side by side: the 2,002-turn
/// fixture alone takes as long as all the others together. Every fixture `discover` finds
/// belongs to exactly one of them (the last takes whatever the first two do not).
fn is_long(name: &str) -> bool {
    name == "long-session"
}

fn is_real_runtimes(name: &str) -> bool {
    name.starts_with("copilot-runtime-replay")
}

#[test]
fn the_long_session_fixture_passes_replay_check() {
    assert_eq!(check_fixtures(is_long), 1);
}

#[test]
fn the_real_runtimes_fixtures_pass_replay_check() {
    let checked = check_fixtures(is_real_runtimes);
    assert!(checked >= 15, "{checked}");
}

#[test]
fn every_other_fixture_passes_replay_check() {
    let checked = check_fixtures(|name| !is_long(name) && !is_real_runtimes(name));
    assert!(checked >= 8, "{checked}");
}

/// Runs `replay --check` on the fixtures whose name `which` picks; answers how many it ran.
fn check_fixtures(which: impl Fn(&str) -> bool) -> usize {
    let found = turnstile_testing::discover(fixtures()).unwrap();
    assert!(found.len() >= 11, "{found:?}");
    let mut checked = 0;
    for fixture in found {
        let name = fixture
            .strip_prefix(fixtures())
            .unwrap()
            .display()
            .to_string();
        if !which(&name) {
            continue;
        }
        checked += 1;
        let out = replay_check(&fixture, &[]);
        let stdout = text(&out.stdout);
        match KNOWN_DIVERGENCES.iter().find(|(n, _)| *n == name) {
            None => assert!(
                out.status.success() && stdout.contains("ok: the replay matches the recording"),
                "{name} diverged:\n{stdout}\n{}",
                text(&out.stderr)
            ),
            Some((_, phrase)) => {
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "{name} now passes: take it off KNOWN_DIVERGENCES\n{stdout}"
                );
                assert!(stdout.contains(phrase), "{name}:\n{stdout}");
                remove_kept_journal(&text(&out.stderr));
            }
        }
    }
    checked
}

#[test]
fn a_changed_file_fails_the_check_with_the_field_the_lines_and_the_turn() {
    let work = tempfile::tempdir().unwrap();
    turnstile_testing::copy_tree(&fixtures().join("multi-turn/workdir"), work.path()).unwrap();
    std::fs::write(
        work.path().join("inventory.csv"),
        "item,count\napples,3\npears,2\nplums,0\n",
    )
    .unwrap();
    let out = replay_check(
        &fixtures().join("multi-turn"),
        &["--cwd", work.path().to_str().unwrap()],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for expected in [
        "FAILED: the replay diverged from the recording",
        "at prompt 1, LLM call 2 (turn 1): tool.execution_complete differs in data.result.content",
        "multi-turn/events.jsonl:16",
        "recorded value: \"2. apples,3\\n3. pears,0\\n4. plums,7\\n5. \"",
        "replayed value: \"2. apples,3\\n3. pears,2\\n4. plums,0\\n5. \"",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    let stderr = text(&out.stderr);
    assert!(stderr.contains("kept for inspection"), "{stderr}");
    remove_kept_journal(&stderr);
}

/// Removes the temporary state directory a failed check kept (named on stderr).
fn remove_kept_journal(stderr: &str) {
    let kept = stderr
        .lines()
        .find_map(|l| l.split("kept for inspection: ").nth(1))
        .unwrap_or_else(|| panic!("no kept journal in:\n{stderr}"));
    assert!(Path::new(kept).is_file(), "{kept}");
    let state = Path::new(kept).ancestors().nth(3).unwrap();
    assert!(
        state.starts_with(std::env::temp_dir()),
        "{}",
        state.display()
    );
    std::fs::remove_dir_all(state).unwrap();
}

#[test]
fn a_tool_that_no_longer_exists_fails_the_check_before_replaying() {
    let copy = copy_fixture("multi-turn");
    let journal = copy.path().join("events.jsonl");
    let renamed = std::fs::read_to_string(&journal)
        .unwrap()
        .replace("\"name\":\"grep\"", "\"name\":\"frobnicate\"")
        .replace("\"toolName\":\"grep\"", "\"toolName\":\"frobnicate\"");
    std::fs::write(&journal, renamed).unwrap();
    let out = replay_check(copy.path(), &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("the recording calls tool `frobnicate`, which this engine does not have (it has: bash, read_bash, stop_bash, list_bash, view, create, edit, web_fetch, sql, read_agent, list_agents, write_agent, grep, glob, task, task_complete)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("at prompt 1, LLM call 1 (turn 0)"),
        "{stdout}"
    );
}

#[test]
fn running_out_of_recorded_answers_fails_the_check() {
    let copy = copy_fixture("multi-turn");
    let journal = copy.path().join("events.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    // Drop the last LLM call (turn start, answer, turn end) but keep the shutdown.
    let n = lines.len();
    assert!(lines[n - 4].contains("\"type\":\"assistant.turn_start\""));
    let mut cut: Vec<String> = lines[..n - 4].to_vec();
    cut.push(lines[n - 1].clone());
    std::fs::write(&journal, cut.join("\n") + "\n").unwrap();
    let out = replay_check(copy.path(), &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "the replay wrote assistant.turn_start where the recording has session.shutdown"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("the conversation ran out of recorded answers: the replay made LLM call 8 and the recording has no more assistant messages (7 were recorded)"),
        "{stdout}"
    );
    remove_kept_journal(&text(&out.stderr));
}

#[test]
fn the_json_report_lists_the_divergences_as_values() {
    let passing = replay_check(&fixtures().join("permission-denied"), &["--json"]);
    assert!(passing.status.success());
    let report: serde_json::Value = serde_json::from_slice(&passing.stdout).unwrap();
    assert_eq!(report["divergences"], serde_json::json!([]));
    assert_eq!(report["profile"], "strict");
    assert_eq!(report["llmCalls"], 4);

    let work = tempfile::tempdir().unwrap();
    turnstile_testing::copy_tree(&fixtures().join("hook-rewrite/workdir"), work.path()).unwrap();
    std::fs::remove_dir_all(work.path().join(".github")).unwrap();
    let failing = replay_check(
        &fixtures().join("hook-rewrite"),
        &["--json", "--cwd", work.path().to_str().unwrap()],
    );
    assert_eq!(failing.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&failing.stdout).unwrap();
    let first = &report["divergences"][0];
    assert_eq!(first["kind"], "eventType");
    assert_eq!(first["eventType"], "hook.start");
    assert_eq!(first["turn"]["llmCall"], 1);
    assert_eq!(first["replayed"]["line"], first["recorded"]["line"]);
    // The report's journal is kept (its temporary state directory is ours to remove).
    let journal = Path::new(report["journal"].as_str().unwrap());
    assert!(journal.is_file());
    std::fs::remove_dir_all(journal.ancestors().nth(3).unwrap()).unwrap();
}

#[test]
fn replay_part_of_a_fixture_then_resume_it_with_the_next_recorded_prompt() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    turnstile_testing::copy_tree(&fixtures().join("multi-turn/workdir"), work.path()).unwrap();
    let id = "0d3e0000-0000-4000-8000-00000000beef";
    let out = turnstile()
        .arg("--state-dir")
        .arg(state.path())
        .args([
            "replay",
            "fixtures/multi-turn",
            "--prompts",
            "1",
            "--session-id",
            id,
        ])
        .arg("--cwd")
        .arg(work.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Only pears are out of stock"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("sending the first 1 of the 2 prompts"));

    // The recording's next prompt, answered from the recording where the conversation is.
    let out = turnstile()
        .arg("--state-dir")
        .arg(state.path())
        .args([
            "resume",
            id,
            "Write the restock list to RESTOCK.md and show it.",
        ])
        .args([
            "--provider",
            "replay",
            "--fixture",
            "fixtures/multi-turn/events.jsonl",
        ])
        .args(["--allow-all-tools", "--cwd"])
        .arg(work.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("RESTOCK.md now lists pears"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("RESTOCK.md")).unwrap(),
        "# Restock\n\n- pears\n"
    );

    // The session made that way is itself a recording: replay it as a session of the state dir.
    let again = tempfile::tempdir().unwrap();
    turnstile_testing::copy_tree(&fixtures().join("multi-turn/workdir"), again.path()).unwrap();
    let out = turnstile()
        .arg("--state-dir")
        .arg(state.path())
        .args(["replay", "0d3e", "--check", "--cwd"])
        .arg(again.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_path_that_is_no_fixture_is_an_error_with_exit_2() {
    let out = turnstile()
        .args(["replay", "fixtures/schema", "--check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("fixtures/schema"), "{stderr}");
    assert!(stderr.contains("events.jsonl"), "{stderr}");
}
