//! The journal commands run as a user runs them: the real binary on real files.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

const C1: &str = "4411488c-e7b6-4328-b266-cdf491e0f73c";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime")
        .join(name)
}

/// A state root holding the real runtime's c1 recording as a session.
fn state_with_c1() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(C1);
    fs::create_dir_all(&dir).unwrap();
    fs::copy(
        fixture("c1-new-session.events.jsonl"),
        dir.join("events.jsonl"),
    )
    .unwrap();
    (tmp, dir.join("events.jsonl"))
}

fn turnstile(state: &Path) -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.arg("--state-dir").arg(state).env_remove("COPILOT_HOME");
    cmd
}

#[test]
fn sessions_lists_the_session() {
    let (tmp, _) = state_with_c1();
    turnstile(tmp.path())
        .arg("sessions")
        .assert()
        .success()
        .stdout(
            predicate::str::contains(C1)
                .and(predicate::str::contains("/home/dev/project"))
                .and(predicate::str::contains("List the .txt files")),
        );
    let out = turnstile(tmp.path())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["id"], C1);
    assert_eq!(v[0]["events"], 21);
    assert_eq!(
        v[0]["size"],
        fs::metadata(fixture("c1-new-session.events.jsonl"))
            .unwrap()
            .len()
    );
    assert_eq!(v[0]["created"], "2026-11-29T14:34:34.757Z");
}

#[test]
fn copilot_home_sets_the_state_root() {
    let (tmp, _) = state_with_c1();
    let home = tempfile::tempdir().unwrap();
    fs::rename(tmp.path().join(C1), {
        fs::create_dir_all(home.path().join("session-state")).unwrap();
        home.path().join("session-state").join(C1)
    })
    .unwrap();
    Command::cargo_bin("turnstile")
        .unwrap()
        .env("COPILOT_HOME", home.path())
        .arg("sessions")
        .assert()
        .success()
        .stdout(predicate::str::contains(C1));
}

#[test]
fn events_by_id_prefix_dir_and_path_with_type_filter() {
    let (tmp, events) = state_with_c1();
    for target in [
        C1.to_string(),
        "4411".to_string(),
        events.parent().unwrap().display().to_string(),
        events.display().to_string(),
    ] {
        let out = turnstile(tmp.path())
            .args([
                "events",
                &target,
                "--json",
                "--type",
                "assistant.turn_start",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{target}");
        let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
        assert_eq!(lines.len(), 3, "{target}");
        let original = fs::read_to_string(fixture("c1-new-session.events.jsonl")).unwrap();
        for line in lines {
            assert!(
                original.lines().any(|l| l == line),
                "--json prints the journal's own line"
            );
        }
    }
    turnstile(tmp.path())
        .args(["events", C1])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("tool.execution_complete")
                .and(predicate::str::contains("turn 2")),
        );
}

#[test]
fn fsck_clean_torn_and_damaged() {
    let (tmp, events) = state_with_c1();
    turnstile(tmp.path())
        .args(["fsck", C1])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("clean, 21 valid events"));

    let mut bytes = fs::read(&events).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"assistant.turn_st");
    fs::write(&events, &bytes).unwrap();
    turnstile(tmp.path())
        .args(["fsck", C1])
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("line 22")
                .and(predicate::str::contains("torn-tail"))
                .and(predicate::str::contains("turnstile repair")),
        );

    let text = fs::read_to_string(fixture("c1-new-session.events.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = "{\"type\": oops";
    fs::write(&events, lines.join("\n") + "\n").unwrap();
    let out = turnstile(tmp.path())
        .args(["fsck", C1, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"], "damaged");
    assert_eq!(v["problems"][0]["line"], 5);
    assert_eq!(v["events"], 20);
}

#[test]
fn repair_cuts_torn_tail_and_salvages_only_when_asked() {
    let (tmp, events) = state_with_c1();
    let original = fs::read(&events).unwrap();
    let mut torn = original.clone();
    torn.extend_from_slice(&[0u8; 300]);
    fs::write(&events, &torn).unwrap();
    turnstile(tmp.path())
        .args(["repair", C1])
        .assert()
        .success()
        .stdout(predicate::str::contains("NUL"));
    assert_eq!(fs::read(&events).unwrap(), original);
    let sides: Vec<_> = fs::read_dir(events.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("events.jsonl.torn-"))
        .collect();
    assert_eq!(sides.len(), 1);

    let text = String::from_utf8(original.clone()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "garbage in the middle");
    let damaged = lines.join("\n") + "\n";
    fs::write(&events, &damaged).unwrap();
    turnstile(tmp.path())
        .args(["repair", C1])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(":4 (byte").and(predicate::str::contains("--salvage")));
    assert_eq!(
        fs::read_to_string(&events).unwrap(),
        damaged,
        "refused repair leaves the file alone"
    );
    turnstile(tmp.path())
        .args(["repair", C1, "--salvage"])
        .assert()
        .success();
    assert_eq!(
        fs::read(&events).unwrap(),
        original,
        "salvage keeps every good line"
    );
    turnstile(tmp.path()).args(["fsck", C1]).assert().code(0);
}

#[test]
fn bad_targets_are_clear_errors() {
    let (tmp, _) = state_with_c1();
    turnstile(tmp.path())
        .args(["events", "../../nonexistent-dir-xyz"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "../../nonexistent-dir-xyz: no such file or directory",
        ));
    turnstile(tmp.path())
        .args(["events", "00000000-0000-4000-8000-000000000000"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not found"));
    let empty_dir = tempfile::tempdir().unwrap();
    turnstile(tmp.path())
        .args(["fsck", empty_dir.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a session directory"));
    turnstile(tmp.path()).args(["fsck"]).assert().code(2);
}

#[test]
fn empty_journal_is_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(C1);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("events.jsonl"), "").unwrap();
    turnstile(tmp.path())
        .args(["fsck", C1])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("clean, 0 valid events"));
    turnstile(tmp.path())
        .args(["events", C1])
        .assert()
        .success()
        .stdout("");
}

#[test]
fn help_documents_exit_codes() {
    Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit codes").and(predicate::str::contains("2  error")));
}

/// `sessions` prints exactly the same with the index (cold, warm, corrupted) as without it.
#[test]
fn sessions_output_is_identical_with_and_without_the_index() {
    let (tmp, _) = state_with_c1();
    // More sessions, written by the engine's writer (which keeps the index warm).
    let root = turnstile_journal::StateRoot::new(tmp.path());
    for n in 0..5 {
        let id = uuid::Uuid::new_v4();
        let (w, _) =
            turnstile_journal::JournalWriter::create(&root, id, Default::default()).unwrap();
        for (kind, data) in [
            (
                "session.start",
                format!(r#"{{"context":{{"cwd":"/p/{n}"}}}}"#),
            ),
            (
                "user.message",
                format!(r#"{{"content":"prompt number {n}"}}"#),
            ),
            ("assistant.turn_end", r#"{"turnId":"0"}"#.to_owned()),
        ] {
            let ev = turnstile_journal::Event::with_raw_data(
                turnstile_journal::EventType::new(kind),
                serde_json::value::RawValue::from_string(data).unwrap(),
                w.last_id(),
            );
            w.append(&ev).unwrap();
        }
        w.close().unwrap();
    }
    let index = tmp.path().join(turnstile_journal::index::INDEX_FILE);
    let run = |args: &[&str]| -> Vec<u8> {
        let out = turnstile(tmp.path()).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        out.stdout
    };
    for args in [&["sessions"][..], &["sessions", "--json"]] {
        let plain = [args, &["--no-index"]].concat();
        let expected = run(&plain);
        assert_eq!(
            String::from_utf8_lossy(&expected)
                .matches("prompt number")
                .count(),
            5
        );
        // c1 has no record (copied in), the others were written by the writer.
        assert_eq!(run(args), expected, "{args:?} partly warm");
        assert_eq!(run(args), expected, "{args:?} warm");
        fs::remove_file(&index).unwrap();
        assert_eq!(run(args), expected, "{args:?} cold");
        fs::write(&index, b"{\"torn").unwrap();
        assert_eq!(run(args), expected, "{args:?} corrupted");
        assert!(!fs::read_to_string(&index).unwrap().contains("torn"));
    }
}

/// Every command that reads a journal, on one whose line 10 is 1 MiB with the readers' limit
/// at 64 KiB: none holds the line, each names it (or counts it) and goes on as its rules say.
#[test]
fn a_line_over_the_readers_limit_is_named_by_every_command_that_reads_it() {
    let (tmp, events) = state_with_c1();
    let mut lines: Vec<String> = fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let big = format!(
        r#"{{"type":"session.info","data":{{"infoType":"x","message":"{}"}},"id":"00000000-0000-4000-8000-00000000beef","timestamp":"2026-11-29T14:34:35.000Z","parentId":null}}"#,
        "y".repeat(1 << 20)
    );
    lines.insert(9, big.clone());
    fs::write(&events, lines.join("\n") + "\n").unwrap();
    let size = big.len();
    let limited = |args: &[&str]| {
        turnstile(tmp.path())
            .env("TURNSTILE_MAX_LINE_BYTES", "65536")
            .args(args)
            .arg(&events)
            .output()
            .unwrap()
    };
    let text = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    // fsck: damage, named by line.
    let out = limited(&["fsck"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("line 10"), "{}", text(&out));
    // events: the other lines are printed, the oversized one reported.
    let out = limited(&["events"]);
    let shown = text(&out);
    assert!(shown.contains("events.jsonl:10 (byte"), "{shown}");
    // Its size as it lies in the file, newline included.
    assert!(shown.contains(&format!("{} bytes", size + 1)), "{shown}");
    assert!(shown.contains("session.start"), "{shown}");
    assert!(
        !shown.contains(&"y".repeat(70_000)),
        "the line is not printed"
    );
    // report: drawn as an oversized event with its number and size.
    let page = tmp.path().join("page.html");
    let out = turnstile(tmp.path())
        .env("TURNSTILE_MAX_LINE_BYTES", "65536")
        .arg("report")
        .arg(&events)
        .arg("--output")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.contains("oversized"), "no oversized mark");
    assert!(
        !html.contains(&"y".repeat(70_000)),
        "the line is not on the page"
    );
    // history (the fold) and replay (the journal as a fixture): refused, naming the line and
    // its size, before anything is held whole.
    for command in ["history", "replay"] {
        let out = limited(&[command]);
        let shown = text(&out);
        assert!(!out.status.success(), "{command}: {shown}");
        assert!(
            shown.contains("events.jsonl:10 (byte")
                && shown.contains(&format!("{} bytes", size + 1)),
            "{command}: {shown}"
        );
    }
    // repair --salvage: the line leaves the journal for the side file, nothing lost.
    let out = limited(&["repair", "--salvage"]);
    assert!(out.status.success(), "{}", text(&out));
    let after = fs::read_to_string(&events).unwrap();
    assert_eq!(after.lines().count(), lines.len() - 1);
    let side: u64 = fs::read_dir(events.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != "events.jsonl")
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        side >= size as u64,
        "the salvaged line is kept beside the journal"
    );
}
