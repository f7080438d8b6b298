//! The `read` permission a session that asks for reads inside its working directory (the
//! server's sessions whose client answers permissions, as the Copilot CLI's SDK sessions) asks
//! for `view`, `glob` and `grep`: the intention and absolute path of each read, asked again
//! after an approve-once, settled for the session by a `read` approval or an allow rule, never
//! asked for a path that leaves the working directory, and not asked at all where the session
//! trusts its working directory. Real files, a scripted model server.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::client::{AskError, PermissionAsker};
use turnstile_loop::{SendOptions, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_scripted_model::Script;
use turnstile_tools::BoxFuture;

/// Answers every request with `answer` (the first one with `first`, when given) and keeps
/// what was asked as `intention` lines with the request's path.
struct Person {
    first: Option<Value>,
    answer: Value,
    asked: Mutex<Vec<(String, String)>>,
}

impl Person {
    fn answering(answer: Value) -> Arc<Person> {
        Arc::new(Person {
            first: None,
            answer,
            asked: Mutex::default(),
        })
    }

    fn asked(&self) -> Vec<(String, String)> {
        self.asked.lock().unwrap().clone()
    }
}

impl PermissionAsker for Person {
    fn ask(&self, _id: String, request: Value) -> BoxFuture<'static, Result<Value, AskError>> {
        let mut asked = self.asked.lock().unwrap();
        let answer = match (&self.first, asked.is_empty()) {
            (Some(first), true) => first.clone(),
            _ => self.answer.clone(),
        };
        let text = |k: &str| request[k].as_str().unwrap_or_default().to_owned();
        asked.push((text("intention"), text("path")));
        Box::pin(async move { Ok(answer) })
    }
}

fn files(dir: &Path) {
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    std::fs::create_dir(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
}

/// A session that asks for reads, with no allow rule, answered by `person`.
fn parts(fx: &Fixture, person: &Arc<Person>, policy: PermissionPolicy) -> SessionParts {
    let mut parts = fx.base_parts(|c| {
        c.permissions = policy;
        c.ask_reads_in_cwd = true;
    });
    parts.permission_asker = Some(person.clone());
    parts
}

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

fn of_type(events: &[Event], t: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == t)
        .map(data)
        .collect()
}

fn successes(events: &[Event]) -> Vec<bool> {
    of_type(events, "tool.execution_complete")
        .iter()
        .map(|d| d["success"].as_bool().unwrap())
        .collect()
}

/// Runs one message of `script` and returns the journal.
async fn run(fx: &Fixture, parts: SessionParts) -> Vec<Event> {
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let id = session.id();
    session
        .send_and_wait("look", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    fx.audit_clean(id);
    fx.journal(id)
}

fn the_reads() -> Script {
    Script::new()
        .tool_call("view", json!({"path": "a.txt"}))
        .tool_call("view", json!({"path": "src"}))
        .tool_call("glob", json!({"pattern": "**/*.rs"}))
        .tool_call("grep", json!({"pattern": "fn main"}))
        .tool_call("grep", json!({"pattern": "fn", "paths": ["src", "."]}))
        .tool_call("view", json!({"path": "a.txt"}))
        .text("read")
}

#[tokio::test]
async fn each_read_asks_with_its_intention_and_path_and_once_means_once() {
    let fx = Fixture::start(the_reads(), files).await;
    let person = Person::answering(json!({"kind": "approved"}));
    let events = run(&fx, parts(&fx, &person, PermissionPolicy::default())).await;
    let dir = fx.work.path().display().to_string();
    let a = format!("{dir}/a.txt");
    let src = format!("{dir}/src");
    let expected: Vec<(String, String)> = [
        (format!("Read file: {a}"), a.clone()),
        (format!("List directory: {src}"), src.clone()),
        (
            format!("Search for files matching pattern in: {dir}"),
            dir.clone(),
        ),
        (format!("Search in directory: {dir}"), dir.clone()),
        // Each search root is asked for, the second while the call runs.
        (format!("Search in directory: {src}"), src.clone()),
        (format!("Search in directory: {dir}"), dir.clone()),
        // Approved once: the same file is asked for again.
        (format!("Read file: {a}"), a.clone()),
    ]
    .into_iter()
    .collect();
    assert_eq!(person.asked(), expected);
    assert_eq!(successes(&events), [true; 6]);

    let requested = of_type(&events, "permission.requested");
    assert_eq!(requested.len(), 7);
    let first = &requested[0]["permissionRequest"];
    assert_eq!(first["kind"], "read");
    assert_eq!(first["intention"], format!("Read file: {a}"));
    assert_eq!(first["path"], a);
    assert!(first["toolCallId"].is_string());
    assert_eq!(requested[0]["promptRequest"]["path"], a);
    let completed = of_type(&events, "permission.completed");
    assert_eq!(completed.len(), 7);
    assert!(
        completed
            .iter()
            .all(|c| c["result"]["kind"] == "approved" && c["decisionSource"] == "human_response")
    );
    // The view's result is the file's text: the read happened after the approval.
    let results = of_type(&events, "tool.execution_complete");
    assert!(
        results[0]["result"]["content"]
            .as_str()
            .unwrap()
            .contains("1. alpha")
    );
}

#[tokio::test]
async fn a_read_approval_for_the_session_settles_the_later_reads() {
    let fx = Fixture::start(the_reads(), files).await;
    let person = Arc::new(Person {
        first: Some(json!({"kind": "approved-for-session", "approval": {"kind": "read"}})),
        answer: json!({"kind": "denied-interactively-by-user"}),
        asked: Mutex::default(),
    });
    let events = run(&fx, parts(&fx, &person, PermissionPolicy::default())).await;
    assert_eq!(person.asked().len(), 1, "{:?}", person.asked());
    assert_eq!(successes(&events), [true; 6]);
    // What the session's approval settles is not recorded, as the Copilot CLI records none.
    assert_eq!(of_type(&events, "permission.requested").len(), 1);
}

#[tokio::test]
async fn an_allow_rule_approves_reads_without_asking_and_a_narrow_one_only_its_paths() {
    let script = Script::new()
        .tool_call("view", json!({"path": "src/main.rs"}))
        .tool_call("view", json!({"path": "a.txt"}))
        .text("read");
    let fx = Fixture::start(script, files).await;
    let person = Person::answering(json!({"kind": "denied-interactively-by-user"}));
    let policy = PermissionPolicy::from_flags(false, &["read(src/**)".into()], &[]).unwrap();
    let events = run(&fx, parts(&fx, &person, policy)).await;
    let a = fx.work.path().join("a.txt").display().to_string();
    assert_eq!(person.asked(), [(format!("Read file: {a}"), a)]);
    assert_eq!(successes(&events), [true, false]);
    let completed = of_type(&events, "permission.completed");
    assert_eq!(completed[0]["result"]["kind"], "approved");
    assert_eq!(completed[0]["decisionSource"], "host_policy");
    let results = of_type(&events, "tool.execution_complete");
    assert_eq!(
        results[1]["error"]["message"],
        "The user rejected this tool call."
    );
}

#[tokio::test]
async fn a_path_leaving_the_working_directory_is_refused_and_never_asked_as_a_read_inside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let link_target = outside.path().to_path_buf();
    let script = Script::new()
        .tool_call("view", json!({"path": "../secret.txt"}))
        .tool_call("view", json!({"path": "link/secret.txt"}))
        .tool_call("view", json!({"path": "link"}))
        .tool_call("grep", json!({"pattern": "secret", "paths": "link"}))
        .tool_call(
            "glob",
            json!({"pattern": "*.txt", "paths": ["src", "link"]}),
        )
        .text("tried");
    let fx = Fixture::start(script, |dir| {
        files(dir);
        std::os::unix::fs::symlink(&link_target, dir.join("link")).unwrap();
    })
    .await;
    let person = Person::answering(json!({"kind": "approved"}));
    let events = run(&fx, parts(&fx, &person, PermissionPolicy::default())).await;
    assert_eq!(person.asked(), []);
    assert!(of_type(&events, "permission.requested").is_empty());
    let results = of_type(&events, "tool.execution_complete");
    assert_eq!(results.len(), 5);
    for r in &results {
        assert_eq!(r["success"], false);
        assert_eq!(r["error"]["code"], "outside_cwd", "{r}");
    }
}

#[tokio::test]
async fn a_session_that_trusts_its_working_directory_asks_nothing_there() {
    let fx = Fixture::start(the_reads(), files).await;
    let person = Person::answering(json!({"kind": "denied-interactively-by-user"}));
    let mut parts = parts(&fx, &person, PermissionPolicy::default());
    parts.config.ask_reads_in_cwd = false;
    let events = run(&fx, parts).await;
    assert_eq!(person.asked(), []);
    assert_eq!(successes(&events), [true; 6]);
    assert!(of_type(&events, "permission.requested").is_empty());
}

#[tokio::test]
async fn a_deny_rule_on_what_lies_below_refuses_the_search_before_asking() {
    let script = Script::new()
        .tool_call("grep", json!({"pattern": "fn"}))
        .tool_call("view", json!({"path": "src/main.rs"}))
        .text("denied");
    let fx = Fixture::start(script, files).await;
    let person = Person::answering(json!({"kind": "approved"}));
    let policy = PermissionPolicy::from_flags(false, &[], &["read(src/**)".into()]).unwrap();
    let events = run(&fx, parts(&fx, &person, policy)).await;
    assert_eq!(person.asked(), []);
    assert_eq!(successes(&events), [false, false]);
    let results = of_type(&events, "tool.execution_complete");
    for r in &results {
        assert_eq!(r["error"]["code"], "denied", "{r}");
    }
    // The file's own request is one the deny rule refuses: recorded as denied by rules.
    let completed = of_type(&events, "permission.completed");
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["result"]["kind"], "denied-by-rules");
}
