//! `run --resume` without an id at a terminal: the sessions are listed, numbered, newest
//! first; the number typed picks the session the prompt continues, and an empty line cancels
//! (exit 2, no session touched).

use crate::common::terminal::AtTerminal;

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use turnstile_scripted_model::{Script, ScriptedServer};

const OLDER: &str = "5b7c1a4e-0f4e-4a8e-9a51-0c1d2e3f4a01";
const NEWER: &str = "5b7c1a4e-0f4e-4a8e-9a51-0c1d2e3f4a02";

fn turnstile(state: &Path, home: &Path, work: &Path) -> Command {
    let mut command = Command::cargo_bin("turnstile").unwrap();
    command
        .arg("--state-dir")
        .arg(state)
        .env("COPILOT_HOME", home)
        .env_remove("TURNSTILE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .current_dir(work);
    command
}

fn prompts(state: &Path, id: &str) -> Vec<String> {
    std::fs::read_to_string(state.join(id).join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "user.message")
        .map(|e| e["data"]["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn the_number_typed_picks_the_session_and_an_empty_line_cancels() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script = Script::new().text("one").text("two").text("three");
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for (id, prompt) in [(OLDER, "the older prompt"), (NEWER, "the newer prompt")] {
        let out = turnstile(state.path(), home.path(), work.path())
            .args([
                "run",
                prompt,
                "--model",
                "test-model",
                "--session-id",
                id,
                "--base-url",
            ])
            .arg(server.url())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // An empty line chooses nothing: exit 2, both sessions as they were.
    let mut command = turnstile(state.path(), home.path(), work.path());
    command.args(["run", "-p", "again", "--resume"]);
    let mut terminal = AtTerminal::spawn(command);
    terminal.wait_for("session to continue", 1);
    terminal.type_line("");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(2), "{screen}");
    assert_eq!(prompts(state.path(), OLDER), ["the older prompt"]);
    assert_eq!(prompts(state.path(), NEWER), ["the newer prompt"]);

    // Newest first: 2 is the older session, which the prompt then continues.
    let mut command = turnstile(state.path(), home.path(), work.path());
    command.args(["run", "-p", "again", "--resume"]);
    let mut terminal = AtTerminal::spawn(command);
    terminal.wait_for("session to continue", 1);
    let listed = terminal.screen();
    let newer = listed.find("the newer prompt").expect(&listed);
    let older = listed.find("the older prompt").expect(&listed);
    assert!(newer < older, "newest first: {listed}");
    assert!(
        listed.contains("  1  ") && listed.contains("  2  "),
        "{listed}"
    );
    terminal.type_line("2");
    let (status, screen) = terminal.finish();
    assert!(status.success(), "{screen}");
    assert!(screen.contains(&format!("resumed {OLDER}")), "{screen}");
    assert_eq!(prompts(state.path(), OLDER), ["the older prompt", "again"]);
    assert_eq!(prompts(state.path(), NEWER), ["the newer prompt"]);
}
