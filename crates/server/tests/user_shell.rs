//! Commands the user runs in a session's shell (`session.shell.executeUserRequested`,
//! `cancelUserRequested`), over a real socket with a scripted model: the answer, the two
//! journal events (no `tool.execution_start`), the user message the next model request
//! carries (live, and after a resume from the journal), a failing command, a running command
//! cancelled with its process gone, the session's sandbox holding for the user's commands, and
//! a command asked for during a message run after it.

use crate::common;

use common::{
    TestServer, answer_tool, audit_clean, create, create_and_send, eventually, is_idle,
    journal_lines, leave, next_event, no_answers, of_type, resume, send_until_idle, with_model,
};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

/// The user message the Copilot CLI 1.0.81-0 gives the model after `echo hello-marker`.
const ECHO_MESSAGE: &str = "<user_shell_command_output>\nThe user executed a shell command directly in their terminal (exit code 0).\n\nCommand:\necho hello-marker\n\nOutput:\nhello-marker\n</user_shell_command_output>";

/// The contents of the user messages of a model request, in order.
fn user_contents(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Whether `pid` names a live process (a zombie waiting for its reaper is dead).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test]
async fn a_command_is_answered_recorded_and_given_to_the_next_request() {
    let (model, t, mut client) = with_model(Script::new().text("noted"), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let done = client
        .ok(
            "session.shell.executeUserRequested",
            json!({"sessionId": id, "requestId": "req-echo", "command": "echo hello-marker"}),
        )
        .await;
    let tool_call_id = done["toolCallId"].as_str().expect("toolCallId").to_owned();
    assert_eq!(
        done,
        json!({"toolCallId": tool_call_id, "success": true, "output": "hello-marker", "exitCode": 0})
    );

    let lines = journal_lines(&t.journal(&id));
    let requested = of_type(&lines, "tool.user_requested");
    assert_eq!(requested.len(), 1, "{lines:?}");
    assert_eq!(
        requested[0]["data"],
        json!({
            "toolCallId": tool_call_id,
            "toolName": "local_shell",
            "arguments": {"command": "echo hello-marker", "description": "Execute shell command: echo hello-marker"},
        })
    );
    let completed = of_type(&lines, "tool.execution_complete");
    assert_eq!(completed.len(), 1);
    let data = &completed[0]["data"];
    assert_eq!(data["toolCallId"], tool_call_id);
    assert_eq!(data["isUserRequested"], true);
    assert_eq!(data["success"], true);
    assert_eq!(data["result"]["content"], "hello-marker");
    assert!(data.get("error").is_none(), "{data}");
    assert!(of_type(&lines, "tool.execution_start").is_empty());
    assert!(
        of_type(&lines, "tool.execution_partial_result").is_empty(),
        "partial output is live only"
    );

    let events = send_until_idle(&mut client, &id, "what did I run?").await;
    // The output streamed to the client while the command ran.
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool.execution_partial_result"
                && e["data"]["toolCallId"] == tool_call_id
                && e["data"]["partialOutput"]
                    .as_str()
                    .is_some_and(|o| o.contains("hello-marker"))),
        "{events:?}"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let users = user_contents(&requests[0]);
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0], ECHO_MESSAGE);
    assert!(users[1].contains("what did I run?"), "{users:?}");
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn a_failing_command_answers_its_output_as_the_error() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let done = client
        .ok(
            "session.shell.executeUserRequested",
            json!({"sessionId": id, "requestId": "req-fail", "command": "echo out-line; echo err-line >&2; exit 3"}),
        )
        .await;
    assert_eq!(done["success"], false);
    assert_eq!(done["exitCode"], 3);
    assert_eq!(done["output"], "out-line\nerr-line");
    assert_eq!(done["error"], "out-line\nerr-line");
    let lines = journal_lines(&t.journal(&id));
    let completed = of_type(&lines, "tool.execution_complete");
    assert_eq!(completed.len(), 1);
    let data = &completed[0]["data"];
    assert_eq!(data["success"], false);
    assert_eq!(data["isUserRequested"], true);
    assert_eq!(data["error"]["message"], "out-line\nerr-line");
    assert!(data.get("result").is_none(), "{data}");
    t.stop().await;
}

#[tokio::test]
async fn a_running_command_is_cancelled_and_its_processes_are_gone() {
    let (model, t, mut client) = with_model(Script::new(), TestServer::allow_all).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let unknown = client
        .ok(
            "session.shell.cancelUserRequested",
            json!({"sessionId": id, "requestId": "missing"}),
        )
        .await;
    assert_eq!(unknown, json!({"cancelled": false}));

    let pid_file = t.work().join("sleep.pid");
    let call = client
        .start_request(
            "session.shell.executeUserRequested",
            json!({"sessionId": id, "requestId": "req-sleep", "command": "sleep 30 & echo $! > sleep.pid; wait"}),
        )
        .await;
    let read_pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok())
    };
    eventually(|| read_pid().is_some()).await;
    let pid = read_pid().expect("the pid");
    assert!(alive(pid));

    let cancelled = client
        .ok(
            "session.shell.cancelUserRequested",
            json!({"sessionId": id, "requestId": "req-sleep"}),
        )
        .await;
    assert_eq!(cancelled, json!({"cancelled": true}));
    let answer = client.response(call).await;
    let done = &answer["result"];
    assert_eq!(done["success"], false, "{answer}");
    assert_eq!(done["exitCode"], Value::Null);
    assert_eq!(done["error"], "Shell command canceled.");
    // The whole group was killed: the background sleep too.
    eventually(|| !alive(pid)).await;

    let lines = journal_lines(&t.journal(&id));
    let completed = of_type(&lines, "tool.execution_complete");
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["data"]["success"], false);
    assert_eq!(
        completed[0]["data"]["error"]["message"],
        "Shell command canceled."
    );
    // It is over: cancelling it again finds nothing.
    let again = client
        .ok(
            "session.shell.cancelUserRequested",
            json!({"sessionId": id, "requestId": "req-sleep"}),
        )
        .await;
    assert_eq!(again, json!({"cancelled": false}));
    t.stop().await;
}

#[tokio::test]
async fn a_resumed_session_still_gives_the_model_the_command() {
    let (model, t, mut client) = with_model(Script::new().text("noted"), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.shell.executeUserRequested",
            json!({"sessionId": id, "requestId": "req-echo", "command": "echo hello-marker"}),
        )
        .await;
    // The session closes with its last client; the resume folds the journal.
    leave(&t, client).await;
    let mut client = t.client().await;
    resume(&mut client, &model.url(), &id, json!({})).await;
    send_until_idle(&mut client, &id, "what did I run?").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let users = user_contents(&requests[0]);
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0], ECHO_MESSAGE);
    assert!(users[1].contains("what did I run?"), "{users:?}");
    t.stop().await;
}

#[tokio::test]
async fn the_sessions_deny_rules_hold_for_the_users_commands() {
    let (model, t, mut client) = with_model(Script::new(), |config| {
        config.permissions = turnstile_permissions::PermissionPolicy::from_flags(
            true,
            &[],
            &["write(protected/**)".to_owned()],
        )
        .expect("a valid policy");
    })
    .await;
    let protected = t.work().join("protected");
    std::fs::create_dir_all(&protected).expect("the protected directory");
    let id = create(&mut client, &model.url(), json!({})).await;
    let done = client
        .ok(
            "session.shell.executeUserRequested",
            json!({"sessionId": id, "requestId": "req-write", "command": "echo x > protected/file; echo y > open-file"}),
        )
        .await;
    // The kernel refused the denied write; the other one was made.
    assert!(
        done["output"]
            .as_str()
            .is_some_and(|o| o.contains("protected/file")),
        "{done}"
    );
    assert!(!protected.join("file").exists());
    assert!(t.work().join("open-file").exists());
    t.stop().await;
}

#[tokio::test]
async fn a_command_asked_for_during_a_message_runs_after_it() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("slow_tool", json!({}))
            .text("first done")
            .text("second done"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"tools": [{"name": "slow_tool", "description": "answers when the test says"}]}),
        "go",
    )
    .await;
    // The message waits on its client tool while the command is asked for.
    let requested = next_event(&mut client, "external_tool.requested").await;
    let call = client
        .start_request(
            "session.shell.executeUserRequested",
            json!({"sessionId": id, "requestId": "req-during", "command": "echo hello-marker"}),
        )
        .await;
    answer_tool(
        &mut client,
        &id,
        &requested["data"]["requestId"],
        "answered",
    )
    .await;
    client.events_until(no_answers, is_idle).await;
    let answer = client.response(call).await;
    assert_eq!(answer["result"]["success"], true, "{answer}");

    // Recorded after the message's end, never inside its turn.
    let lines = journal_lines(&t.journal(&id));
    let position = |ty: &str| lines.iter().rposition(|l| l["type"] == ty).expect(ty);
    let last_answer = lines
        .iter()
        .rposition(|l| l["type"] == "assistant.message" && l["data"]["content"] == "first done")
        .expect("the message's answer");
    assert!(position("tool.user_requested") > last_answer);

    send_until_idle(&mut client, &id, "and now?").await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[2]["messages"].as_array().expect("messages");
    let at = |want: &dyn Fn(&Value) -> bool| messages.iter().position(want).expect("the message");
    let answered = at(&|m| m["role"] == "assistant" && m["content"] == "first done");
    let shell = at(&|m| m["role"] == "user" && m["content"] == ECHO_MESSAGE);
    assert_eq!(shell, answered + 1, "{messages:?}");
    t.stop().await;
}
