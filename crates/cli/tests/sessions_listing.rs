//! `turnstile sessions` says how each session ended and which model it used, filters by
//! working directory and count; `run` ends with a one-line summary. The real binary on real
//! journals: a clean run, a failed one, one cut short as a kill leaves it.

use crate::common;

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use common::Env;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn listing(env: &Env, args: &[&str]) -> Vec<Value> {
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(env.state.path())
        .args(["sessions", "--json"])
        .args(args)
        .current_dir(env.work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn status_of(rows: &[Value], id: &str) -> String {
    let row = rows.iter().find(|r| r["id"] == id).unwrap();
    format!(
        "{} {}",
        row["status"].as_str().unwrap(),
        row["model"].as_str().unwrap()
    )
}

#[test]
fn sessions_show_status_and_model_and_filter_by_directory_and_count() {
    let env = Env::new();
    let server = env.server(
        Script::new()
            .respond(ScriptedResponse::tool_call(
                "glob",
                json!({"pattern": "*.txt"}),
            ))
            .text("clean")
            .respond(ScriptedResponse::error_message(400, "no such model"))
            .text("to be cut"),
    );
    let out = env.run_ok(&server, &["run", "first"]);
    // The summary line: what the run did.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 LLM calls, 1 tool call, "), "{stderr}");
    let ids = |env: &Env| -> Vec<String> {
        std::fs::read_dir(env.state.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    let clean = ids(&env)[0].clone();
    let out = env.cmd(&server, &["run", "second"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let failed = ids(&env).into_iter().find(|i| *i != clean).unwrap();
    env.run_ok(&server, &["run", "third"]);
    let cut = ids(&env)
        .into_iter()
        .find(|i| *i != clean && *i != failed)
        .unwrap();
    // A kill leaves no shutdown: cut the last line off.
    let journal = env.state.path().join(&cut).join("events.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"session.shutdown\""))
        .collect();
    std::fs::write(&journal, kept.join("\n") + "\n").unwrap();

    let rows = listing(&env, &["--no-index"]);
    assert_eq!(status_of(&rows, &clean), "clean test-model");
    assert_eq!(status_of(&rows, &failed), "failed test-model");
    assert_eq!(status_of(&rows, &cut), "crashed test-model");

    assert_eq!(listing(&env, &["--limit", "2"]).len(), 2);
    // --cwd alone is the current directory (the tests' working directory, where they ran).
    assert_eq!(listing(&env, &["--cwd"]).len(), 3);
    let elsewhere = tempfile::tempdir().unwrap();
    let other = elsewhere.path().to_str().unwrap();
    assert_eq!(listing(&env, &["--cwd", other]).len(), 0);
}
