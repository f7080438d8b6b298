//! `turnstile sessions` says how each session ended and which model it used, filters by
//! working directory and count; `run` ends with a one-line summary. The real binary on real
//! journals: a clean run, a failed one, one cut short as a kill leaves it; and a few thousand
//! generated sessions listed from the index as `make bench-listing` lists a million.

use crate::common;

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use common::Env;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn listing(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut json = vec!["--json"];
    json.extend_from_slice(args);
    serde_json::from_str(&sessions(env.state.path(), env.work.path(), &json)).unwrap()
}

/// What `turnstile --state-dir STATE sessions ARGS` prints, run in `cwd`.
fn sessions(state: &std::path::Path, cwd: &std::path::Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(state)
        .arg("sessions")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
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
    // The same from the index: the cut journal read again (its record no longer matches),
    // then from the records alone.
    for _ in 0..2 {
        assert_eq!(listing(&env, &[]), rows);
    }

    assert_eq!(listing(&env, &["--limit", "2"]).len(), 2);
    // --cwd alone is the current directory (the tests' working directory, where they ran).
    assert_eq!(listing(&env, &["--cwd"]).len(), 3);
    let elsewhere = tempfile::tempdir().unwrap();
    let other = elsewhere.path().to_str().unwrap();
    assert_eq!(listing(&env, &["--cwd", other]).len(), 0);
}

/// One journal line of the generated sessions.
fn line(kind: &str, data: &str, ms: u64) -> String {
    let second = ms / 1000;
    format!(
        "{{\"type\":\"{kind}\",\"data\":{data},\"id\":\"{}\",\"timestamp\":\"2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\",\"parentId\":null}}\n",
        uuid::Uuid::new_v4(),
        1 + second / (28 * 86400) % 12,
        1 + second / 86400 % 28,
        second / 3600 % 24,
        second / 60 % 60,
        second % 60,
        ms % 1000
    )
}

#[test]
fn thousands_of_sessions_are_listed_from_the_index_with_their_status() {
    const SESSIONS: u64 = 2000;
    let state = tempfile::tempdir().unwrap();
    // Sessions as closed ones leave their journals (`gen_sessions`' shape), every 100th
    // without its shutdown, as a kill leaves it.
    for n in 0..SESSIONS {
        let id = uuid::Uuid::new_v4();
        let t = n * 60_000;
        let mut journal = line(
            "session.start",
            &format!(
                r#"{{"sessionId":"{id}","selectedModel":"model-{}","context":{{"cwd":"/work/p{}"}}}}"#,
                n % 3,
                n % 7
            ),
            t,
        );
        journal += &line(
            "user.message",
            &format!(r#"{{"content":"task {n}"}}"#),
            t + 5,
        );
        journal += &line("assistant.turn_start", r#"{"turnId":"0"}"#, t + 10);
        journal += &line("assistant.turn_end", r#"{"turnId":"0"}"#, t + 900);
        if n % 100 != 99 {
            journal += &line("session.shutdown", r#"{"shutdownType":"routine"}"#, t + 901);
        }
        let dir = state.path().join(id.to_string());
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("events.jsonl"), journal).unwrap();
    }
    let sessions = |args: &[&str]| sessions(state.path(), state.path(), args);
    // The first listing reads every journal and writes the index; the second reads the index
    // alone; both are what the journals say.
    let cold = sessions(&[]);
    let index = std::fs::read_to_string(state.path().join("turnstile-index.jsonl")).unwrap();
    assert_eq!(index.lines().count() as u64, SESSIONS);
    assert!(
        index.lines().all(|l| l.contains("\"ending\":{")),
        "every record has its ending"
    );
    let warm = sessions(&[]);
    assert_eq!(warm, cold);
    assert_eq!(sessions(&["--no-index"]), warm);
    let rows: Vec<&str> = warm.lines().skip(1).collect();
    assert_eq!(rows.len() as u64, SESSIONS);
    let with = |status: &str| {
        rows.iter()
            .filter(|r| r.contains(&format!("  {status}  ")))
            .count()
    };
    assert_eq!((with("clean"), with("crashed")), (1980, 20));
    assert!(
        rows[0].contains("model-1") && rows[0].contains("task 1999"),
        "{}",
        rows[0]
    );
}
