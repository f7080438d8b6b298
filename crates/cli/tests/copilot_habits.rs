//! The Copilot CLI's habits on the command line: `run -p`, `--yolo`, `--continue`,
//! `--resume [ID]`, `--last` on every command that takes a session, id prefixes everywhere.
//! The real binary on real state directories, a scripted model on 127.0.0.1.

use crate::common;

use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use common::{Env, journal_values};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedResponse};

fn user_messages(journal: &std::path::Path) -> usize {
    journal_values(journal)
        .iter()
        .filter(|e| e["type"] == "user.message")
        .count()
}

#[test]
fn run_takes_p_and_yolo_allows_every_tool() {
    let env = Env::new();
    let server = env.server(
        Script::new()
            .respond(ScriptedResponse::tool_call(
                "bash",
                json!({"command": "echo from-bash > made.txt", "description": "write"}),
            ))
            .text("done"),
    );
    let out = env.run_ok(&server, &["run", "--yolo", "-p", "make a file"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
    assert_eq!(
        std::fs::read_to_string(env.work.path().join("made.txt")).unwrap(),
        "from-bash\n",
        "--yolo approved the shell call"
    );
    let (_, journal) = env.only_session();
    let events = journal_values(&journal);
    assert_eq!(
        events.iter().find(|e| e["type"] == "user.message").unwrap()["data"]["content"],
        "make a file"
    );
}

#[test]
fn continue_resume_and_last_name_sessions_as_the_copilot_cli_does() {
    let env = Env::new();
    let server = env.server(
        Script::new()
            .text("one")
            .text("two")
            .text("three")
            .text("four")
            .text("five"),
    );
    env.run_ok(&server, &["run", "first"]);
    let (id, journal) = env.only_session();
    // A newer session of another directory: --continue still picks this directory's.
    let other = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(env.state.path())
        .args(["run", "elsewhere", "--model", "test-model", "--base-url"])
        .arg(server.url())
        .arg("--cwd")
        .arg(other.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = env.run_ok(&server, &["run", "--continue", "-p", "next"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "three");
    assert_eq!(user_messages(&journal), 2);

    env.run_ok(&server, &["run", "--resume", &id[..6], "again"]);
    assert_eq!(user_messages(&journal), 3);

    // Without an id and without a terminal: the list, and how to name one.
    let out = env
        .cmd(&server, &["run", "--resume"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
    assert!(String::from_utf8_lossy(&out.stderr).contains("turnstile run --resume ID"));

    // --last on the reading commands: the newest session is the one just resumed.
    let bare = |args: &[&str]| {
        let out = Command::cargo_bin("turnstile")
            .unwrap()
            .arg("--state-dir")
            .arg(env.state.path())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for args in [
        &["events", "--last"][..],
        &["audit", "--last"],
        &["fsck", "--last"],
        &["history", "--last"],
        &["checkpoint", "--last"],
        &["rewind", "--last"],
    ] {
        bare(args);
    }
    assert!(bare(&["events", "--last"]).contains("again"));
    // An id prefix exports from the state directory, with no word about stores.
    let exported = bare(&["export", &id[..6]]);
    assert_eq!(exported.as_bytes(), std::fs::read(&journal).unwrap());
    assert_eq!(
        bare(&["export", "--last"]).as_bytes(),
        std::fs::read(&journal).unwrap()
    );
}
