//! `audit --count` and `events --type` with a type the schema does not know: the answer is the
//! same (0, nothing), but stderr says the type is unknown and names the near misses.

use std::path::PathBuf;

use assert_cmd::Command;

fn journal() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime/c1-new-session.events.jsonl")
}

fn turnstile(args: &[&str]) -> (String, String, i32) {
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .env_remove("COPILOT_HOME")
        .args(args)
        .arg(journal())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn an_unknown_count_type_warns_and_still_counts() {
    let (stdout, stderr, code) = turnstile(&["audit", "--count", "bogus.type"]);
    assert_eq!((stdout.as_str(), code), ("0\n", 0));
    assert!(
        stderr.contains("warning: `bogus.type` is not an event type of the session-events schema"),
        "{stderr}"
    );
    let (stdout, stderr, _) = turnstile(&["audit", "--count", "assistant.turn_strat"]);
    assert_eq!(stdout, "0\n");
    assert!(
        stderr.contains("similar known types: assistant.turn_start"),
        "{stderr}"
    );
    let (stdout, stderr, code) = turnstile(&["audit", "--count", "assistant.turn_start"]);
    assert_eq!((stdout.as_str(), stderr.as_str(), code), ("3\n", "", 0));
}

#[test]
fn an_unknown_events_type_warns_once_per_unknown_name() {
    let (stdout, stderr, code) = turnstile(&[
        "events",
        "--type",
        "bogus.type",
        "--type",
        "tool.execution_start",
        "--type",
        "tool.execution_strat",
    ]);
    assert_eq!(code, 0);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert_eq!(stderr.matches("warning:").count(), 2, "{stderr}");
    assert!(stderr.contains("`bogus.type`") && stderr.contains("`tool.execution_strat`"));
    assert!(
        stderr.contains("similar known types: tool.execution_start"),
        "{stderr}"
    );
}
