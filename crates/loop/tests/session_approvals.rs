//! Session- and location-scoped approvals remembered by a running session: a later request
//! they cover is approved without asking, one they do not cover is asked, and a resumed
//! session starts with none. Real shell commands, real files, a scripted model server.

use crate::common;

use std::sync::{Arc, Mutex};

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::client::{AskError, PermissionAsker};
use turnstile_loop::{SendOptions, SessionHandle, SessionParts};
use turnstile_permissions::{PermissionPolicy, PermissionRule, RuleScope};
use turnstile_scripted_model::Script;
use turnstile_tools::BoxFuture;

/// Answers like a person who approves `echo` and writes for the session, the rest once.
#[derive(Default)]
struct Person {
    asked: Mutex<Vec<String>>,
}

impl PermissionAsker for Person {
    fn ask(&self, _id: String, request: Value) -> BoxFuture<'static, Result<Value, AskError>> {
        let about = match request["kind"].as_str() {
            Some("shell") => format!(
                "shell: {}",
                request["fullCommandText"].as_str().unwrap_or("")
            ),
            Some(kind) => kind.to_owned(),
            None => "?".into(),
        };
        self.asked.lock().unwrap().push(about.clone());
        let answer = if about == "shell: echo one" {
            json!({"kind": "approved-for-session", "approval": {"kind": "commands", "commandIdentifiers": ["echo"]}})
        } else if about == "write" {
            json!({"kind": "approved-for-session", "approval": {"kind": "write"}})
        } else {
            json!({"kind": "approved"})
        };
        Box::pin(async move { Ok(answer) })
    }
}

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "d"})
}

fn parts(fx: &Fixture, person: &Arc<Person>) -> SessionParts {
    let mut parts = fx.base_parts(|c| c.permissions = PermissionPolicy::default());
    parts.permission_asker = Some(person.clone());
    parts
}

fn completions(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == "permission.completed")
        .map(|e| serde_json::from_str::<Value>(e.data.get()).unwrap()["result"].clone())
        .collect()
}

fn tool_results(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == "tool.execution_complete")
        .map(|e| serde_json::from_str::<Value>(e.data.get()).unwrap())
        .collect()
}

#[tokio::test]
async fn an_approval_for_the_session_covers_what_it_names_and_nothing_else() {
    let script = Script::new()
        .tool_call("bash", bash("echo one"))
        .tool_call("bash", bash("echo two > two.txt"))
        .tool_call("bash", bash("echo three && touch three.txt"))
        .tool_call("bash", bash("echo $(touch sneaky.txt)"))
        .tool_call("create", json!({"path": "a.txt", "file_text": "a\n"}))
        .tool_call("create", json!({"path": "b.txt", "file_text": "b\n"}))
        .tool_call("bash", bash("echo four > four.txt"))
        .text("done")
        .tool_call("bash", bash("echo after resume"))
        .text("done again");
    let fx = Fixture::start(script, |_| {}).await;
    let person = Arc::new(Person::default());
    let session = SessionHandle::create(&fx.root, None, parts(&fx, &person)).unwrap();
    let id = session.id();
    session
        .send_and_wait("go", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(
        *person.asked.lock().unwrap(),
        [
            "shell: echo one",
            // Echo is approved, but the redirection writes a file: asked.
            "shell: echo two > two.txt",
            // touch is not echo.
            "shell: echo three && touch three.txt",
            // An unresolved line is never covered.
            "shell: echo $(touch sneaky.txt)",
            "write",
            // b.txt: the write approval covers it. four.txt: echo and the write both are.
        ]
    );
    for file in [
        "two.txt",
        "three.txt",
        "sneaky.txt",
        "a.txt",
        "b.txt",
        "four.txt",
    ] {
        assert!(fx.work.path().join(file).exists(), "{file}");
    }
    // What a remembered approval settles records no permission events (as the Copilot CLI).
    let events = fx.journal(id);
    let results = completions(&events);
    assert_eq!(results.len(), 5, "the asked requests only: {results:?}");
    assert_eq!(results[0]["kind"], "approved-for-session");
    assert_eq!(
        results[0]["approval"]["commandIdentifiers"],
        json!(["echo"])
    );
    let requested = events
        .iter()
        .filter(|e| e.event_type.as_str() == "permission.requested")
        .count();
    assert_eq!(requested, 5);
    session.shutdown().await.unwrap();

    // A resumed session remembers nothing: the journal's answers are records, not grants.
    let (resumed, _) = SessionHandle::resume(&fx.root, id, parts(&fx, &person)).unwrap();
    resumed
        .send_and_wait("again", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(
        person.asked.lock().unwrap().last().map(String::as_str),
        Some("shell: echo after resume")
    );
    resumed.shutdown().await.unwrap();
    fx.audit_clean(id);
}

#[tokio::test]
async fn live_rules_set_by_the_server_decide_and_deny_wins() {
    let script = Script::new()
        .tool_call("bash", bash("ls"))
        .tool_call("bash", bash("rm -f gone.txt"))
        .tool_call("bash", bash("pwd"))
        .text("done");
    let fx = Fixture::start(script, |dir| {
        std::fs::write(dir.join("gone.txt"), "x").unwrap();
    })
    .await;
    let person = Arc::new(Person::default());
    let parts = parts(&fx, &person);
    let live = Arc::clone(&parts.config.live_permissions);
    live.add(
        RuleScope::Location,
        &[PermissionRule::new("shell", Some("ls"))],
    );
    live.set_rules(vec![], vec![PermissionRule::new("shell", Some("rm"))]);
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    session
        .send_and_wait("go", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(*person.asked.lock().unwrap(), ["shell: pwd"]);
    assert!(fx.work.path().join("gone.txt").exists(), "rm was denied");
    let events = fx.journal(session.id());
    assert_eq!(
        completions(&events),
        [json!({"kind": "approved"})],
        "pwd only"
    );
    let denial = tool_results(&events).swap_remove(1);
    assert_eq!(
        denial["error"]["message"],
        "Permission to run this tool was denied due to the following rules: `shell(rm)`"
    );
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn a_client_showing_no_prompts_is_not_asked() {
    let script = Script::new().tool_call("bash", bash("pwd")).text("done");
    let fx = Fixture::start(script, |_| {}).await;
    let person = Arc::new(Person::default());
    let parts = parts(&fx, &person);
    parts.config.live_permissions.set_prompts_wanted(false);
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    session
        .send_and_wait("go", SendOptions::default())
        .await
        .unwrap();
    assert!(person.asked.lock().unwrap().is_empty());
    // Denied without a request on record, as the Copilot CLI does.
    let events = fx.journal(session.id());
    assert!(completions(&events).is_empty());
    let done = tool_results(&events).swap_remove(0);
    assert_eq!(
        done["error"]["message"],
        "Permission denied and could not request permission from user"
    );
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}
