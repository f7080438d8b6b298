//! Turns and their tool calls against a scripted model on 127.0.0.1: calls of one turn run
//! together, results go back in request order, duplicate ids, client tools (permission,
//! `skipPermission`, result types), and no `assistant.turn_start` without a model request.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::client::{AskError, ExternalToolCall, ExternalTools, PermissionAsker};
use turnstile_loop::{Outcome, SendOptions, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_scripted_model::{Script, ScriptedResponse};
use turnstile_tools::{BoxFuture, ToolFailure, ToolOutput, ToolSpec};

/// Safety net only: no assertion depends on it.
const PATIENCE: Duration = Duration::from_secs(30);

async fn fixture(script: Script) -> Fixture {
    Fixture::start(script, |_| {}).await
}

impl Fixture {
    fn parts(&self) -> SessionParts {
        self.base_parts(|_| {})
    }

    /// The `tool` messages of request `n`, as (tool_call_id, content).
    fn tool_messages(&self, n: usize) -> Vec<(String, String)> {
        self.server.requests()[n]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                (
                    m["tool_call_id"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }
}

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

fn of_type<'a>(events: &'a [Event], ty: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == ty)
        .collect()
}

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "job"})
}

/// A nanosecond clock reading written by the job itself.
fn stamp(dir: &Path, name: &str) -> u128 {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

async fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(PATIENCE, async {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "gave up waiting for {what}");
}

#[tokio::test]
async fn the_calls_of_one_turn_run_together_and_answer_in_request_order() {
    // Job 1 sleeps longest, so the calls complete in the reverse of request order.
    let job = |n: u32, sleep: &str| {
        bash(&format!(
            "date +%s%N > start{n}; sleep {sleep}; date +%s%N > end{n}; echo job{n}"
        ))
    };
    let script = Script::new()
        .respond(
            ScriptedResponse::tool_call("bash", job(1, "1.5"))
                .and_tool_call("bash", job(2, "1"))
                .and_tool_call("bash", job(3, "0.5")),
        )
        .text("done");
    let fx = fixture(script).await;
    let session = SessionHandle::create(&fx.root, None, fx.parts()).unwrap();
    let outcome = session
        .send_and_wait("three jobs", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let dir = fx.work.path();
    // Overlap: every job started before any job ended.
    let last_start = (1..=3).map(|n| stamp(dir, &format!("start{n}"))).max();
    let first_end = (1..=3).map(|n| stamp(dir, &format!("end{n}"))).min();
    assert!(
        last_start < first_end,
        "the jobs ran one after another: last start {last_start:?}, first end {first_end:?}"
    );
    let events = fx.journal(session.id());
    let starts: Vec<String> = of_type(&events, "tool.execution_start")
        .iter()
        .map(|e| data(e)["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(starts, ["call_1", "call_2", "call_3"]);
    let completes: Vec<String> = of_type(&events, "tool.execution_complete")
        .iter()
        .map(|e| data(e)["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    // Recorded in request order whatever order they finished in (job 1 sleeps longest), so
    // a journal does not depend on timing.
    assert_eq!(completes, ["call_1", "call_2", "call_3"]);
    // The model gets the results in the order it asked for them.
    let results = fx.tool_messages(1);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    assert!(results[0].1.contains("job1") && results[2].1.contains("job3"));
    session.shutdown().await.unwrap();
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, fx.server.requests().len() as u64);
}

#[tokio::test]
async fn abort_while_several_run_interrupts_each_of_them() {
    let job = |n: u32| bash(&format!("touch started{n}; sleep 30"));
    let script = Script::new().respond(
        ScriptedResponse::tool_call("bash", job(1))
            .and_tool_call("bash", job(2))
            .and_tool_call("bash", job(3)),
    );
    let fx = fixture(script).await;
    let session = SessionHandle::create(&fx.root, None, fx.parts()).unwrap();
    let (_, done) = session
        .send("three sleepers", SendOptions::default())
        .unwrap();
    let dir = fx.work.path().to_path_buf();
    wait_for("all three jobs to start", || {
        (1..=3).all(|n| dir.join(format!("started{n}")).exists())
    })
    .await;
    session.abort();
    let outcome = tokio::time::timeout(PATIENCE, done).await.unwrap().unwrap();
    assert_eq!(outcome, Outcome::Aborted);
    let events = fx.journal(session.id());
    assert_eq!(of_type(&events, "abort").len(), 1, "one abort event");
    let completes = of_type(&events, "tool.execution_complete");
    assert_eq!(completes.len(), 3);
    for c in completes {
        let d = data(c);
        assert_eq!(d["success"], false);
        assert_eq!(d["error"]["code"], "interrupted", "{d}");
    }
    session.shutdown().await.unwrap();
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, 1);
    assert_eq!(fx.server.requests().len(), 1);
}

#[tokio::test]
async fn duplicate_tool_call_ids_are_renamed_and_each_answered_once() {
    let script = Script::new()
        .respond(
            ScriptedResponse::text("")
                .and_tool_call_with_id("c1", "bash", bash("echo one > one"))
                .and_tool_call_with_id("c2", "bash", bash("echo two > two"))
                .and_tool_call_with_id("c1", "bash", bash("echo three > three")),
        )
        .text("done");
    let fx = fixture(script).await;
    let session = SessionHandle::create(&fx.root, None, fx.parts()).unwrap();
    session
        .send_and_wait("dups", SendOptions::default())
        .await
        .unwrap();
    for f in ["one", "two", "three"] {
        assert!(fx.work.path().join(f).exists(), "{f} ran");
    }
    let events = fx.journal(session.id());
    let message = data(of_type(&events, "assistant.message")[0]);
    let requested: Vec<&str> = message["toolRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(requested, ["c1", "c2", "c1_2"]);
    let warning = data(of_type(&events, "session.warning")[0]);
    assert_eq!(warning["warningType"], "tool_call_id");
    let mut completed: Vec<String> = of_type(&events, "tool.execution_complete")
        .iter()
        .map(|e| data(e)["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    completed.sort();
    assert_eq!(completed, ["c1", "c1_2", "c2"]);
    // The history the model gets back is consistent: its calls and one result for each.
    let second = &fx.server.requests()[1];
    let calls: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["c1", "c2", "c1_2"]);
    let answered: Vec<String> = fx.tool_messages(1).into_iter().map(|(id, _)| id).collect();
    assert_eq!(answered, ["c1", "c2", "c1_2"]);
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

/// A client with tools `gate_a`, `gate_b`, `gate_c` that answer only once all three are
/// pending (a sequential loop would never get there), `free` (skipPermission), and
/// `verdict` answering with the failure its arguments name.
struct Client {
    gate: Arc<tokio::sync::Barrier>,
    asked: Mutex<Vec<Value>>,
}

impl Client {
    fn new() -> Arc<Self> {
        Arc::new(Client {
            gate: Arc::new(tokio::sync::Barrier::new(3)),
            asked: Mutex::new(Vec::new()),
        })
    }
}

impl ExternalTools for Client {
    fn specs(&self) -> Vec<ToolSpec> {
        let spec = |name: &str, skip: bool| ToolSpec {
            name: name.into(),
            description: format!("the {name} tool"),
            parameters: json!({"type": "object", "properties": {}}),
            skip_permission: skip,
        };
        vec![
            spec("gate_a", false),
            spec("gate_b", false),
            spec("gate_c", false),
            spec("free", true),
            spec("verdict", false),
        ]
    }

    fn call(&self, call: ExternalToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolFailure>> {
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            match call.tool_name.as_str() {
                "verdict" => {
                    let code = call.arguments["code"].as_str().unwrap_or("failure");
                    Err(ToolFailure::new(format!("verdict: {code}"), code))
                }
                "free" => Ok(ToolOutput::text("free result")),
                name => {
                    gate.wait().await;
                    Ok(ToolOutput::text(format!("{name} passed")))
                }
            }
        })
    }
}

impl PermissionAsker for Client {
    fn ask(&self, _id: String, request: Value) -> BoxFuture<'static, Result<Value, AskError>> {
        self.asked.lock().unwrap().push(request);
        Box::pin(async { Ok(json!({"kind": "approved"})) })
    }
}

fn client_parts(fx: &Fixture, client: &Arc<Client>) -> SessionParts {
    let mut parts = fx.parts();
    parts.config.permissions = PermissionPolicy::default();
    parts.external_tools = Some(client.clone());
    parts.permission_asker = Some(client.clone());
    parts
}

#[tokio::test]
async fn client_tool_calls_are_announced_together() {
    let script = Script::new()
        .respond(
            ScriptedResponse::tool_call("gate_a", json!({}))
                .and_tool_call("gate_b", json!({}))
                .and_tool_call("gate_c", json!({})),
        )
        .text("done");
    let fx = fixture(script).await;
    let client = Client::new();
    let session = SessionHandle::create(&fx.root, None, client_parts(&fx, &client)).unwrap();
    let outcome = tokio::time::timeout(
        PATIENCE,
        session.send_and_wait("gates", SendOptions::default()),
    )
    .await
    .expect("the client tools were not all pending at once")
    .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let events = fx.journal(session.id());
    let asked = of_type(&events, "permission.requested");
    assert_eq!(asked.len(), 3);
    assert_eq!(data(asked[0])["permissionRequest"]["kind"], "custom-tool");
    let answered: Vec<(String, String)> = fx.tool_messages(1);
    assert_eq!(
        answered,
        [
            ("call_1".to_owned(), "gate_a passed".to_owned()),
            ("call_2".to_owned(), "gate_b passed".to_owned()),
            ("call_3".to_owned(), "gate_c passed".to_owned()),
        ]
    );
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn skip_permission_client_tools_ask_nothing() {
    let script = Script::new()
        .tool_call("free", json!({}))
        .tool_call("verdict", json!({"code": "failure"}))
        .text("done");
    let fx = fixture(script).await;
    let client = Client::new();
    let session = SessionHandle::create(&fx.root, None, client_parts(&fx, &client)).unwrap();
    session
        .send_and_wait("free then verdict", SendOptions::default())
        .await
        .unwrap();
    let asked = client.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "only verdict asks: {asked:?}");
    assert_eq!(asked[0]["toolName"], "verdict");
    // A failure is read by the model, which is called again.
    assert_eq!(fx.server.requests().len(), 3);
    assert_eq!(fx.tool_messages(2)[1].1, "verdict: failure");
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn a_rejected_client_result_ends_the_message_without_another_call() {
    let script = Script::new()
        .tool_call("verdict", json!({"code": "rejected"}))
        .text("never asked")
        .text("second message");
    let fx = fixture(script).await;
    let client = Client::new();
    let session = SessionHandle::create(&fx.root, None, client_parts(&fx, &client)).unwrap();
    let outcome = session
        .send_and_wait("reject it", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    assert_eq!(
        fx.server.requests().len(),
        1,
        "no LLM call after a rejection"
    );
    let events = fx.journal(session.id());
    let complete = data(of_type(&events, "tool.execution_complete")[0]);
    assert_eq!(complete["error"]["code"], "rejected");
    // The session goes on; the next message sees the rejected result.
    session
        .send_and_wait("next", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(fx.server.requests().len(), 2);
    assert_eq!(fx.tool_messages(1)[0].1, "verdict: rejected");
    session.shutdown().await.unwrap();
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, 2);
}

/// A first message busy in a tool and a second one queued behind it.
async fn busy_with_one_queued(
    fx: &Fixture,
) -> (SessionHandle, Vec<tokio::sync::oneshot::Receiver<Outcome>>) {
    let session = SessionHandle::create(&fx.root, None, fx.parts()).unwrap();
    let (_, first) = session.send("first", SendOptions::default()).unwrap();
    let (_, second) = session.send("second", SendOptions::default()).unwrap();
    let dir = fx.work.path().to_path_buf();
    wait_for("the first message's tool to start", || {
        dir.join("busy").exists()
    })
    .await;
    (session, vec![first, second])
}

fn busy_script() -> Script {
    Script::new()
        .tool_call("bash", bash("touch busy; sleep 30"))
        .text("second answer")
        .text("third answer")
}

#[tokio::test]
async fn abort_with_a_queued_message_records_no_turn_that_was_never_sent() {
    let fx = fixture(busy_script()).await;
    let (session, done) = busy_with_one_queued(&fx).await;
    session.abort();
    for d in done {
        let outcome = tokio::time::timeout(PATIENCE, d).await.unwrap().unwrap();
        assert_eq!(outcome, Outcome::Aborted);
    }
    // The session is still usable after the abort.
    session
        .send_and_wait("after", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, fx.server.requests().len() as u64);
    assert_eq!(report.turns, 2);
    let events = fx.journal(session.id());
    let prompts: Vec<String> = of_type(&events, "user.message")
        .iter()
        .map(|e| data(e)["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        prompts,
        ["first", "after"],
        "the aborted queued message left nothing"
    );
}

#[tokio::test]
async fn abort_then_shutdown_with_a_queued_message_counts_only_real_calls() {
    // What the SDK server does when its client disconnects.
    let fx = fixture(busy_script()).await;
    let (session, done) = busy_with_one_queued(&fx).await;
    session.abort();
    session.shutdown().await.unwrap();
    for d in done {
        assert_eq!(d.await.unwrap(), Outcome::Aborted);
    }
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, 1);
    assert_eq!(fx.server.requests().len(), 1);
}

#[tokio::test]
async fn shutdown_with_a_queued_message_runs_it_and_counts_it() {
    let script = Script::new()
        .tool_call("bash", bash("touch busy; sleep 0.3"))
        .text("first answer")
        .text("second answer");
    let fx = fixture(script).await;
    let (session, done) = busy_with_one_queued(&fx).await;
    session.shutdown().await.unwrap();
    for d in done {
        assert_eq!(d.await.unwrap(), Outcome::Idle);
    }
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, 3);
    assert_eq!(fx.server.requests().len(), 3);
}
