//! `turnstile rewind`: the turns listed, a rewind to before a turn and a truncation to an
//! event, each followed by a resume whose request holds exactly the conversation left; the
//! journal keeps every line, the audit stays clean and still counts every LLM call.

use crate::common;

use std::path::Path;

use common::{Env, audit_clean};
use serde_json::Value;
use turnstile_journal::{Event, JournalReader, ReadMode};
use turnstile_scripted_model::Script;
use turnstile_testing::check_sent;

fn output(cmd: &mut std::process::Command) -> std::process::Output {
    cmd.output().unwrap()
}

/// Runs `cmd`, which must succeed; returns what it printed on stdout.
fn succeed(cmd: &mut std::process::Command) -> String {
    let out = output(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn journal(path: &Path) -> Vec<Event> {
    JournalReader::open(path, ReadMode::Strict)
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")).event)
        .collect()
}

/// The typed text of the user messages and the assistant texts of a request, in order.
fn said(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let text = m["content"].as_str().unwrap_or_default();
            // The user's text is wrapped (`<current_datetime>`...): keep the line typed.
            let typed = text
                .lines()
                .find(|l| l.starts_with("Say") || l.ends_with('.'))
                .unwrap_or(text);
            format!("{}: {typed}", m["role"].as_str().unwrap_or_default())
        })
        .collect()
}

#[test]
fn rewind_then_resume_sends_the_conversation_before_the_turn() {
    let env = Env::new();
    let mut requests = Vec::new();
    let first = env.server(Script::new().text("One."));
    succeed(&mut env.cmd(&first, &["run", "Say one"]));
    requests.extend(first.requests());
    let (id, events_path) = env.only_session();
    for (prompt, answer) in [("Say two", "Two."), ("Say three", "Three.")] {
        let server = env.server(Script::new().text(answer));
        succeed(&mut env.cmd(&server, &["resume", &id[..8], prompt]));
        requests.extend(server.requests());
    }
    let idle = env.server(Script::new());

    let listed = succeed(&mut env.cmd(&idle, &["rewind", &id[..8]]));
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 3, "{listed}");
    assert!(
        lines[1].trim_start().starts_with("2 ") && lines[1].ends_with("Say two"),
        "{listed}"
    );

    let printed = succeed(&mut env.cmd(&idle, &["rewind", &id[..8], "--to", "2", "--json"]));
    let marker: Value = serde_json::from_str(printed.trim()).unwrap();
    let before = journal(&events_path);
    let second_user = before
        .iter()
        .filter(|e| e.event_type.as_str() == "user.message")
        .nth(1)
        .unwrap();
    assert_eq!(marker["upToEventId"], second_user.id.to_string());
    // Two user turns and what followed them, the resume records between them included.
    assert!(marker["eventsRemoved"].as_u64().unwrap() >= 8, "{marker}");

    let again = env.server(Script::new().text("Again."));
    succeed(&mut env.cmd(&again, &["resume", &id[..8], "Say again"]));
    assert_eq!(
        said(&again.requests()[0]),
        ["user: Say one", "assistant: One.", "user: Say again"]
    );
    requests.extend(again.requests());

    // A truncation to an event: the answer to "Say again" leaves, its prompt stays.
    let events = journal(&events_path);
    let answer = events
        .iter()
        .rfind(|e| e.event_type.as_str() == "assistant.turn_start")
        .unwrap();
    let printed = succeed(&mut env.cmd(&idle, &["rewind", &id, "--to", &answer.id.to_string()]));
    assert!(printed.contains("out of the conversation"), "{printed}");
    let last = env.server(Script::new().text("Last."));
    succeed(&mut env.cmd(&last, &["resume", &id[..8], "Say last"]));
    assert_eq!(
        said(&last.requests()[0]),
        [
            "user: Say one",
            "assistant: One.",
            "user: Say again",
            "user: Say last"
        ]
    );
    requests.extend(last.requests());

    let events = journal(&events_path);
    let markers = events
        .iter()
        .filter(|e| e.event_type.as_str() == "session.snapshot_rewind")
        .count();
    assert_eq!(markers, 2);
    // Every request is what the fold of the journal rebuilds at its turn start.
    check_sent(&events, &requests).unwrap_or_else(|e| panic!("{e}"));
    let report = audit_clean(&events_path);
    assert_eq!(
        report.turns, 5,
        "every LLM call is counted, the rewound ones too"
    );
}

#[test]
fn a_removed_event_or_a_missing_turn_is_refused_with_no_marker() {
    let env = Env::new();
    let first = env.server(Script::new().text("One."));
    succeed(&mut env.cmd(&first, &["run", "Say one"]));
    let (id, events_path) = env.only_session();
    let idle = env.server(Script::new());
    let out = output(&mut env.cmd(&idle, &["rewind", &id[..8], "--to", "2"]));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has 1 user turns"), "{stderr}");

    succeed(&mut env.cmd(&idle, &["rewind", &id[..8], "--to", "1"]));
    let user = journal(&events_path)
        .into_iter()
        .find(|e| e.event_type.as_str() == "user.message")
        .unwrap();
    let size = std::fs::metadata(&events_path).unwrap().len();
    let out = output(&mut env.cmd(&idle, &["rewind", &id[..8], "--to", &user.id.to_string()]));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("Event {} not found", user.id)),
        "{stderr}"
    );
    // Opening the session for the refused cut records its resume and shutdown, no marker.
    let markers = journal(&events_path)
        .iter()
        .filter(|e| e.event_type.as_str() == "session.snapshot_rewind")
        .count();
    assert_eq!(markers, 1);
    assert!(std::fs::metadata(&events_path).unwrap().len() > size);
    audit_clean(&events_path);
}

/// The help names rewind's own flags; the loop flags it accepts stay out of it but still parse.
#[test]
fn help_leaves_the_model_flags_out_and_they_still_parse() {
    let bin = assert_cmd::cargo::cargo_bin("turnstile");
    let help = output(std::process::Command::new(&bin).args(["rewind", "--help"]));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success());
    assert!(
        text.contains("--to <EVENT|N>") && text.contains("--last"),
        "{text}"
    );
    assert!(
        !text.contains("--base-url") && !text.contains("--allow-tool"),
        "{text}"
    );
    assert!(
        text.lines().count() < 40,
        "{} lines: {text}",
        text.lines().count()
    );
    // A hidden flag is still a flag: the error is about the session, not the argument.
    let tmp = tempfile::tempdir().unwrap();
    let out = output(
        std::process::Command::new(&bin)
            .arg("--state-dir")
            .arg(tmp.path())
            .args(["rewind", "--base-url", "http://127.0.0.1:9/v1", "abcd"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("unexpected argument"), "{err}");
}
