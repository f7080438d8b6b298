//! The agent loop end to end against a scripted OpenAI-compatible server on 127.0.0.1:
//! event order, journal contents, tools, permissions, hooks, autopilot, abort, resume (the
//! model's failures are `model_failures.rs`). Every journal written here must pass the
//! replay crate's audit.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Fixture, data, drain, types};
use serde_json::{Value, json};
use turnstile_journal::Uuid;
use turnstile_loop::{AgentMode, Outcome, SendOptions, SessionHandle};
use turnstile_permissions::PermissionPolicy;
use turnstile_scripted_model::{Script, ScriptedResponse};

async fn fixture(script: Script) -> Fixture {
    Fixture::start(script, |work| {
        std::fs::write(
            work.join("alpha.txt"),
            "alpha: the first file\nIt mentions apples.\n",
        )
        .unwrap();
        std::fs::write(work.join("beta.txt"), "beta\n").unwrap();
    })
    .await
}

#[tokio::test]
async fn multi_turn_with_several_tools_per_turn() {
    let script = Script::new()
        .respond(
            ScriptedResponse::tool_call("glob", json!({"pattern": "*.txt"}))
                .and_tool_call("view", json!({"path": "alpha.txt"})),
        )
        .respond(
            ScriptedResponse::text("There are two files; alpha mentions apples.")
                .with_usage(100, 12),
        );
    let fx = fixture(script).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    let mut rx = session.subscribe();
    let outcome = session
        .send_and_wait("List and read", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let live = drain(&mut rx);
    let t = types(&live);
    assert_eq!(t.last(), Some(&"session.idle"), "idle is last: {t:?}");
    assert_eq!(
        t.iter().filter(|x| **x == "assistant.turn_start").count(),
        2
    );
    assert_eq!(
        fx.server.requests().len(),
        2,
        "one LLM call per turn, no other calls"
    );
    assert!(t.contains(&"assistant.message_delta"));
    let first_turn: Vec<&str> = t
        .iter()
        .copied()
        .skip_while(|x| *x != "assistant.turn_start")
        .take_while(|x| *x != "assistant.turn_end")
        .collect();
    assert_eq!(
        first_turn
            .iter()
            .filter(|x| !x.ends_with("_delta") && **x != "assistant.usage")
            .copied()
            .collect::<Vec<_>>(),
        [
            "assistant.turn_start",
            "session.usage_info",
            "model.call_start",
            "assistant.message",
            // Every start first (request order), as the runtime records them; then the calls
            // run together.
            "tool.execution_start",
            "tool.execution_start",
            "tool.execution_complete",
            "tool.execution_complete"
        ]
    );
    // The second request carries the whole history with both tool results.
    let second = &fx.server.requests()[1];
    let msgs = second["messages"].as_array().unwrap();
    let tool_msgs: Vec<&Value> = msgs.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_msgs.len(), 2);
    assert!(
        tool_msgs[0]["content"]
            .as_str()
            .unwrap()
            .contains("./alpha.txt")
    );
    assert!(
        tool_msgs[1]["content"]
            .as_str()
            .unwrap()
            .contains("1. alpha: the first file")
    );
    session.shutdown().await.unwrap();

    // The journal: persisted events only, written first, audit-clean.
    let journal = fx.journal(session.id());
    assert!(
        journal.iter().all(|e| !e.is_ephemeral()),
        "ephemeral event on disk"
    );
    assert_eq!(
        journal.first().unwrap().event_type.as_str(),
        "session.start"
    );
    assert_eq!(
        journal.last().unwrap().event_type.as_str(),
        "session.shutdown"
    );
    let persisted_live: Vec<Uuid> = live
        .iter()
        .filter(|e| !e.is_ephemeral())
        .map(|e| e.id)
        .collect();
    let on_disk: Vec<Uuid> = journal.iter().map(|e| e.id).collect();
    assert!(persisted_live.iter().all(|id| on_disk.contains(id)));
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns, 2);
    assert_eq!(report.tool_calls["glob"].ok, 1);
    assert_eq!(report.tool_calls["view"].ok, 1);
}

#[tokio::test]
async fn non_streaming_answers() {
    let fx = fixture(Script::new().text("plain answer")).await;
    let session =
        SessionHandle::create(&fx.root, None, fx.hooked_parts(|c| c.streaming = false)).unwrap();
    let mut rx = session.subscribe();
    assert_eq!(
        session
            .send_and_wait("hi", SendOptions::default())
            .await
            .unwrap(),
        Outcome::Idle
    );
    let live = drain(&mut rx);
    assert!(!types(&live).contains(&"assistant.message_delta"));
    let msg = live
        .iter()
        .find(|e| e.event_type.as_str() == "assistant.message")
        .unwrap();
    assert_eq!(data(msg)["content"], "plain answer");
    assert!(fx.server.requests()[0].get("stream").is_none());
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn autopilot_nudges_until_task_complete() {
    let script = Script::new()
        .text("I looked around.")
        .tool_call("task_complete", json!({"summary": "Looked around."}));
    let fx = fixture(script).await;
    let session = SessionHandle::create(
        &fx.root,
        None,
        fx.hooked_parts(|c| c.mode = AgentMode::Autopilot),
    )
    .unwrap();
    let mut rx = session.subscribe();
    assert_eq!(
        session
            .send_and_wait("go", SendOptions::default())
            .await
            .unwrap(),
        Outcome::Idle
    );
    let live = drain(&mut rx);
    let nudges: Vec<_> = live
        .iter()
        .filter(|e| data(e)["isAutopilotContinuation"] == true)
        .collect();
    assert_eq!(nudges.len(), 1);
    let nudge = data(nudges[0]);
    assert_eq!(nudge["content"], "");
    assert_eq!(nudge["source"], "system");
    assert_eq!(nudge["agentMode"], "autopilot");
    // Wrapped as a prompt is: the time of sending first, then the nudge.
    let text = nudge["transformedContent"].as_str().unwrap();
    assert!(text.starts_with("<current_datetime>"), "{text}");
    assert!(
        text.contains("</current_datetime>\n\nYou have not yet marked the task as complete"),
        "{text}"
    );
    // The sql tool is offered, so the runtime's reminder of its tables follows (with its
    // inbox table, as from a session's second prompt on).
    assert!(
        text.ends_with(
            "then call task_complete.\n\n<system_reminder>\n<sql_tables>Available tables: todos, todo_deps, inbox_entries</sql_tables>\n</system_reminder>"
        ),
        "{text}"
    );
    assert!(types(&live).contains(&"session.task_complete"));
    // The idle that ends an autopilot run carries no `mode: "autopilot"`: SDK clients read that
    // as a continuation boundary and would keep waiting.
    assert_eq!(live.last().unwrap().event_type.as_str(), "session.idle");
    assert_ne!(data(live.last().unwrap())["mode"], "autopilot");
    assert_eq!(
        fx.server.requests().len(),
        2,
        "no LLM call after task_complete"
    );
    // task_complete was offered to the model.
    let tools: Vec<String> = fx.server.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.contains(&"task_complete".to_owned()));
    session.shutdown().await.unwrap();
    let report = fx.audit_clean(session.id());
    assert_eq!(report.autopilot_continuations, 1);
    assert_eq!(
        report
            .task_complete
            .as_ref()
            .and_then(|t| t.summary.clone())
            .as_deref(),
        Some("Looked around.")
    );
}

#[tokio::test]
async fn autopilot_stops_at_the_continuation_cap() {
    let fx = fixture(Script::new().text("a").text("b").text("c")).await;
    let session = SessionHandle::create(
        &fx.root,
        None,
        fx.hooked_parts(|c| {
            c.mode = AgentMode::Autopilot;
            c.max_autopilot_continues = 2;
        }),
    )
    .unwrap();
    let mut rx = session.subscribe();
    session
        .send_and_wait("go", SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    assert_eq!(
        live.iter()
            .filter(|e| data(e)["isAutopilotContinuation"] == true)
            .count(),
        2
    );
    let warning = live
        .iter()
        .find(|e| e.event_type.as_str() == "session.warning")
        .expect("a warning");
    assert!(
        data(warning)["message"]
            .as_str()
            .unwrap()
            .contains("2 continuations")
    );
    assert_eq!(fx.server.requests().len(), 3);
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn interactive_never_nudges_and_offers_no_task_complete() {
    let fx = fixture(Script::new().text("answer")).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    let mut rx = session.subscribe();
    session
        .send_and_wait("q", SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    assert!(
        live.iter()
            .all(|e| data(e)["isAutopilotContinuation"] != true)
    );
    assert_eq!(data(live.last().unwrap())["mode"], "interactive");
    let tools = fx.server.requests()[0]["tools"].to_string();
    assert!(!tools.contains("task_complete"));
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn abort_during_a_tool_kills_it_and_closes_the_turn() {
    let script = Script::new().tool_call(
        "bash",
        json!({"command": "sleep 30", "description": "wait"}),
    );
    let fx = fixture(script).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    let mut rx = session.subscribe();
    let (_, done) = session.send("wait", SendOptions::default()).unwrap();
    // Abort once the tool is running.
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap()
            .unwrap();
        if ev.event_type.as_str() == "tool.execution_start" {
            break;
        }
    }
    session.abort();
    let outcome = tokio::time::timeout(Duration::from_secs(30), done)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, Outcome::Aborted);
    let live = drain(&mut rx);
    let t = types(&live);
    assert!(t.contains(&"abort"));
    let complete = live
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .unwrap();
    assert_eq!(data(complete)["success"], false);
    assert_eq!(data(complete)["error"]["code"], "interrupted");
    assert_eq!(t.last(), Some(&"session.idle"));
    assert_eq!(data(live.last().unwrap())["aborted"], true);
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn permission_denied_is_recorded_and_told_to_the_model() {
    let script = Script::new()
        .tool_call(
            "bash",
            json!({"command": "rm -rf alpha.txt", "description": "delete"}),
        )
        .text("ok, I will not");
    let fx = fixture(script).await;
    let parts = fx.hooked_parts(|c| {
        c.permissions = PermissionPolicy::from_flags(false, &["shell(ls)".into()], &[]).unwrap()
    });
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let mut rx = session.subscribe();
    session
        .send_and_wait("delete it", SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    let completed = live
        .iter()
        .find(|e| e.event_type.as_str() == "permission.completed")
        .unwrap();
    assert_eq!(
        data(completed)["result"]["kind"],
        "denied-no-approval-rule-and-could-not-request-from-user"
    );
    let requested = live
        .iter()
        .find(|e| e.event_type.as_str() == "permission.requested")
        .unwrap();
    assert_eq!(data(requested)["permissionRequest"]["kind"], "shell");
    assert!(
        fx.work.path().join("alpha.txt").exists(),
        "the command did not run"
    );
    let second = &fx.server.requests()[1];
    assert!(
        second
            .to_string()
            .contains("Permission denied and could not request permission from user")
    );
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn hooks_deny_rewrite_and_transform() {
    let script = Script::new()
        .tool_call(
            "bash",
            json!({"command": "echo original", "description": "say"}),
        )
        .tool_call("create", json!({"path": "new.txt", "file_text": "x"}))
        .text("done");
    let fx = fixture(script).await;
    let hooks_dir = fx.work.path().join(".github/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    // preToolUse: rewrite bash arguments, deny create. postToolUse: rewrite the result text.
    // userPromptSubmitted: rewrite the prompt. python3 keeps the hook independent of jq.
    let pre = r#"python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"modifiedArgs":{"command":"echo rewritten","description":"say"}}) if d["toolName"]=="bash" else json.dumps({"permissionDecision":"deny","permissionDecisionReason":"no new files"}))'"#;
    let post = r#"python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"modifiedResult":{"textResultForLlm":"[post] "+d["toolResult"]["textResultForLlm"]}}))'"#;
    let prompt = r#"python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"modifiedPrompt":d["prompt"].upper()}))'"#;
    std::fs::write(
        hooks_dir.join("hooks.json"),
        json!({"version": 1, "hooks": {
            "preToolUse": [{"type": "command", "bash": pre}],
            "postToolUse": [{"type": "command", "bash": post}],
            "userPromptSubmitted": [{"type": "command", "bash": prompt}],
            "sessionStart": [{"type": "command", "bash": "true"}],
        }})
        .to_string(),
    )
    .unwrap();
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    session
        .send_and_wait("shout this", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    let requests = fx.server.requests();
    let first = requests[0]["messages"].to_string();
    assert!(first.contains("SHOUT THIS"), "prompt hook applied: {first}");
    let second = requests[1]["messages"].to_string();
    assert!(
        second.contains("[post] rewritten"),
        "args rewritten and result rewritten: {second}"
    );
    let third = requests[2]["messages"].to_string();
    assert!(
        third.contains("Denied by preToolUse hook: no new files"),
        "{third}"
    );
    assert!(!fx.work.path().join("new.txt").exists());
    let journal = fx.journal(session.id());
    let starts = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "hook.start")
        .count();
    let ends = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "hook.end")
        .count();
    assert!(
        starts >= 5 && starts == ends,
        "{starts} starts, {ends} ends"
    );
    fx.audit_clean(session.id());
}

/// A copied session (new inode) has a stale checkpoint: resume folds the journal once, writes
/// the checkpoint from that fold before opening the writer, and everything after it (the
/// writer's scan, the load, the checkpoint at shutdown) uses it instead of reading it all again.
#[tokio::test]
async fn resume_of_a_copied_session_folds_it_once_and_checkpoints_that_fold() {
    let fx = fixture(Script::new().text("first answer").text("second answer")).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    session
        .send_and_wait("first", SendOptions::default())
        .await
        .unwrap();
    let id = session.id();
    session.shutdown().await.unwrap();
    let paths = fx.root.session(id);
    // Copy the journal over itself: same bytes, another file.
    let copy = paths.dir.join("events.copy");
    std::fs::copy(&paths.events, &copy).unwrap();
    std::fs::rename(&copy, &paths.events).unwrap();
    assert!(matches!(
        turnstile_replay::Checkpoint::trusted(&paths.dir),
        Err(turnstile_replay::CheckpointRejection::Replaced)
    ));
    let (resumed, report) = SessionHandle::resume(&fx.root, id, fx.hooked_parts(|_| {})).unwrap();
    assert!(
        report.used_checkpoint,
        "the load used the checkpoint written from the first fold"
    );
    let fresh = turnstile_replay::Checkpoint::trusted(&paths.dir).expect("a fresh checkpoint");
    assert_eq!(fresh.event_count, report.events_before);
    resumed
        .send_and_wait("second", SendOptions::default())
        .await
        .unwrap();
    resumed.shutdown().await.unwrap();
    let (_, load) = turnstile_replay::SessionState::load(&paths.dir).unwrap();
    assert!(load.used_checkpoint && load.tail_bytes == 0, "{load:?}");
    assert!(
        turnstile_replay::verify_checkpoint(&paths.dir)
            .unwrap()
            .is_ok()
    );
    let report = fx.audit_clean(id);
    assert_eq!(report.turns, 2);
}

#[tokio::test]
async fn resume_continues_with_the_whole_history_and_refuses_a_second_writer() {
    let fx = fixture(Script::new().text("first answer").text("second answer")).await;
    let session = SessionHandle::create(&fx.root, None, fx.hooked_parts(|_| {})).unwrap();
    session
        .send_and_wait("first", SendOptions::default())
        .await
        .unwrap();
    let id = session.id();
    // While the first handle holds the session, a resume is refused with the holder named.
    let err = SessionHandle::resume(&fx.root, id, fx.hooked_parts(|_| {}))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("in use") && err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    session.shutdown().await.unwrap();

    // A crash while appending after the checkpoint (written at shutdown): a torn last line.
    let events = fx.root.session(id).events;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&events)
        .unwrap();
    std::io::Write::write_all(&mut f, br#"{"type":"user.message","data":{"cont"#).unwrap();
    drop(f);
    let (resumed, report) = SessionHandle::resume(&fx.root, id, fx.hooked_parts(|_| {})).unwrap();
    assert!(!report.was_active);
    assert!(report.used_checkpoint, "the shutdown checkpoint is used");
    assert!(
        report.torn_tail_cut,
        "the writer scanned the tail after the trusted prefix"
    );
    resumed
        .send_and_wait("second", SendOptions::default())
        .await
        .unwrap();
    resumed.shutdown().await.unwrap();
    let msgs = fx.server.requests()[1]["messages"].to_string();
    assert!(msgs.contains("first") && msgs.contains("first answer") && msgs.contains("second"));
    let report = fx.audit_clean(id);
    assert_eq!(report.resumes, 1);
    assert_eq!(report.turns, 2);
    let journal = fx.journal(id);
    assert_eq!(
        journal
            .iter()
            .filter(|e| e.event_type.as_str() == "system.message")
            .count(),
        2,
        "the system prompt is recorded before each prompt, the resumed one included"
    );
}

/// A client that implements one tool, approves running it and rejects every other
/// permission request.
struct FakeClient;

impl turnstile_loop::client::ExternalTools for FakeClient {
    fn specs(&self) -> Vec<turnstile_tools::ToolSpec> {
        vec![turnstile_tools::ToolSpec {
            name: "lookup_weather".into(),
            description: "Weather for a city".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ..Default::default()
        }]
    }
    fn call(
        &self,
        call: turnstile_loop::client::ExternalToolCall,
    ) -> turnstile_tools::BoxFuture<
        'static,
        Result<turnstile_tools::ToolOutput, turnstile_tools::ToolFailure>,
    > {
        Box::pin(async move {
            Ok(turnstile_tools::ToolOutput::text(format!(
                "sunny in {}",
                call.arguments["city"].as_str().unwrap_or("?")
            )))
        })
    }
}

impl turnstile_loop::client::PermissionAsker for FakeClient {
    fn ask(
        &self,
        _request_id: String,
        request: Value,
    ) -> turnstile_tools::BoxFuture<'static, Result<Value, turnstile_loop::client::AskError>> {
        Box::pin(async move {
            match request["kind"].as_str() {
                Some("custom-tool") => Ok(json!({"kind": "approved"})),
                _ => Ok(json!({"kind": "denied-interactively-by-user", "feedback": "not today"})),
            }
        })
    }
}

#[tokio::test]
async fn client_tools_and_client_permission_decisions() {
    let script = Script::new()
        .tool_call("lookup_weather", json!({"city": "Oslo"}))
        .tool_call(
            "bash",
            json!({"command": "touch made.txt", "description": "touch"}),
        )
        .text("done");
    let fx = fixture(script).await;
    let mut parts = fx.hooked_parts(|c| c.permissions = PermissionPolicy::default());
    let client = Arc::new(FakeClient);
    parts.external_tools = Some(client.clone());
    parts.permission_asker = Some(client);
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let mut rx = session.subscribe();
    session
        .send_and_wait("weather, then touch", SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    let t = types(&live);
    assert!(
        t.contains(&"external_tool.requested") && t.contains(&"external_tool.completed"),
        "{t:?}"
    );
    let offered = fx.server.requests()[0]["tools"].to_string();
    assert!(offered.contains("lookup_weather"));
    assert!(
        fx.server.requests()[1]
            .to_string()
            .contains("sunny in Oslo")
    );
    assert!(
        fx.server.requests()[2]
            .to_string()
            .contains("The user rejected this tool call. User feedback: not today")
    );
    assert!(!fx.work.path().join("made.txt").exists());
    let asked: Vec<Value> = live
        .iter()
        .filter(|e| e.event_type.as_str() == "permission.requested")
        .map(|e| data(e)["permissionRequest"].clone())
        .collect();
    // The runtime's shape for a client tool, then the shell request.
    assert_eq!(
        asked[0],
        json!({"kind": "custom-tool", "toolName": "lookup_weather", "toolDescription": "Weather for a city",
               "args": {"city": "Oslo"}, "toolCallId": "call_1"})
    );
    assert_eq!(asked[1]["kind"], "shell");
    let completed: Vec<Value> = live
        .iter()
        .filter(|e| e.event_type.as_str() == "permission.completed")
        .map(|e| data(e))
        .collect();
    assert_eq!(completed[0]["result"]["kind"], "approved");
    assert_eq!(
        completed[1]["result"]["kind"],
        "denied-interactively-by-user"
    );
    assert_eq!(completed[1]["decisionSource"], "human_response");
    session.shutdown().await.unwrap();
    fx.audit_clean(session.id());
}
