//! The protocol as the SDK clients use it, end to end over a real socket with a scripted model:
//! events in order with `session.idle` last, the journal holding exactly the persisted ones,
//! client tools (a failed one's text read by the model), hooks (a deny holding for a tool
//! that does not exist), `getMessages` of an open session only, abort, autopilot, `sendAndWait`, disconnect and resume. Permission
//! answers are in `sdk_permissions.rs`, listings and idle sessions in `sdk_sessions.rs`.

use crate::common;

use common::{
    answer_tool, assert_left_open, create, create_and_send, detach_audit_stop, is_idle,
    journal_lines, leave, next_event, no_answers, of_type, resume, tool_contents, types,
    with_model,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};
use turnstile_server::rpc::codes;

#[tokio::test]
async fn a_send_streams_every_event_in_order_and_the_journal_holds_the_persisted_ones() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "echo hi from bash", "description": "greet"}),
            )
            .tool_call("view", json!({"path": "note.txt"}))
            .text("bash said hi and the note says hello"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    std::fs::write(t.work().join("note.txt"), "hello\n").unwrap();
    let id = create(&mut client, &model.url(), json!({"streaming": true})).await;
    let sent = client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "greet and read the note"}),
        )
        .await;
    let message_id = sent["messageId"].as_str().unwrap().to_owned();
    let events = client.events_until(no_answers, is_idle).await;

    let kinds = types(&events);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("session.start"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("session.idle"));
    assert_eq!(
        kinds
            .iter()
            .filter(|k| *k == "assistant.turn_start")
            .count(),
        3
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|k| *k == "tool.execution_complete")
            .count(),
        2
    );
    assert!(
        kinds.contains(&"assistant.message_delta".to_owned()),
        "streaming was asked"
    );
    let user = of_type(&events, "user.message")[0];
    assert_eq!(user["data"]["messageId"], message_id.as_str());
    // Ephemeral events are marked, persisted ones are not; every event's parent is the
    // persisted event before it (ephemeral events are not links of the chain).
    let mut last_persisted = Value::Null;
    for e in &events {
        let ephemeral =
            turnstile_journal::EventType::new(e["type"].as_str().unwrap()).is_ephemeral();
        assert_eq!(e.get("ephemeral") == Some(&json!(true)), ephemeral, "{e}");
        assert_eq!(e["parentId"], last_persisted, "chain broken at {e}");
        if !ephemeral {
            last_persisted = e["id"].clone();
        }
    }
    assert!(events.last().unwrap()["data"].get("aborted").is_none());

    let persisted: Vec<&Value> = events
        .iter()
        .filter(|e| e.get("ephemeral").is_none())
        .collect();
    let journal = journal_lines(&t.journal(&id));
    assert_eq!(journal.len(), persisted.len());
    let mut live_only = 0;
    for (line, event) in journal.iter().zip(&persisted) {
        // A result's `contents` are sent live only, as the Copilot CLI sends them: the line
        // is the live event without them.
        let mut event = (*event).clone();
        if let Some(result) = event
            .get_mut("data")
            .and_then(|data| data.get_mut("result"))
            .and_then(Value::as_object_mut)
            && result.remove("contents").is_some()
        {
            live_only += 1;
        }
        assert_eq!(*line, event);
    }
    assert_eq!(live_only, 1, "the bash call's shell_exit block, live only");
    let messages = client
        .ok("session.getMessages", json!({"sessionId": id}))
        .await;
    assert_eq!(messages["events"].as_array().unwrap(), &journal);

    // Lifecycle notifications went out too.
    let notes = client.notifications();
    let lifecycle: Vec<&&Value> = notes
        .iter()
        .filter(|m| m["method"] == "session.lifecycle")
        .collect();
    assert!(
        lifecycle
            .iter()
            .any(|m| m["params"]["type"] == "session.created")
    );
    assert!(
        lifecycle
            .iter()
            .any(|m| m["params"]["type"] == "session.updated")
    );
    detach_audit_stop(t, &mut client, &id).await;
}

#[tokio::test]
async fn a_client_tool_call_is_recorded_and_answered_by_the_client() {
    // Client tools need permission (`custom-tool`) unless declared with skipPermission.
    let (model, t, mut client) = with_model(
        Script::new()
            .respond(
                ScriptedResponse::tool_call("get_weather", json!({"city": "Paris"}))
                    .and_tool_call("get_weather", json!({"city": "Oslo"})),
            )
            .text("Paris is sunny, Oslo is not"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let tools = json!({"tools": [{
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }]});
    let id = create_and_send(&mut client, &model.url(), tools, "weather?").await;
    let mut answered = 0;
    loop {
        let events = client
            .events_until(no_answers, |e| {
                e["type"] == "external_tool.requested" || is_idle(e)
            })
            .await;
        let last = events.last().unwrap();
        if is_idle(last) {
            break;
        }
        let data = &last["data"];
        let city = data["arguments"]["city"].as_str().unwrap().to_owned();
        let result = if city == "Paris" {
            json!("sunny")
        } else {
            json!({"textResultForLlm": "no data for Oslo", "resultType": "failure", "error": "station offline"})
        };
        answer_tool(&mut client, &id, &data["requestId"], result).await;
        // A second answer to the same request changes nothing; a made-up id is an error.
        let again = answer_tool(&mut client, &id, &data["requestId"], "twice").await;
        assert_eq!(again["success"], false);
        let wrong = client
            .err(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": id, "requestId": "made-up", "result": "x"}),
            )
            .await;
        assert_eq!(wrong["code"], codes::INVALID_PARAMS);
        answered += 1;
    }
    assert_eq!(answered, 2);
    let journal = journal_lines(&t.journal(&id));
    let requested = of_type(&journal, "external_tool.requested").len();
    assert_eq!(requested, 2, "external_tool.requested is persisted");
    let completions = of_type(&journal, "tool.execution_complete");
    assert_eq!(completions[0]["data"]["success"], true);
    assert_eq!(completions[0]["data"]["result"]["content"], "sunny");
    assert_eq!(completions[1]["data"]["success"], false);
    // A failed result's text is what the model reads, as the runtime sends it (not `error`).
    assert_eq!(
        completions[1]["data"]["error"]["message"],
        "no data for Oslo"
    );
    let told = tool_contents(model.requests().last().unwrap());
    assert!(told.contains(&json!("no data for Oslo")), "{told:?}");
    // The model was offered the client's tool.
    let request = &model.requests()[0];
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"get_weather") && offered.contains(&"bash"),
        "{offered:?}"
    );
    detach_audit_stop(t, &mut client, &id).await;
}

#[tokio::test]
async fn client_hooks_are_invoked_and_a_pre_tool_use_deny_is_applied() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("bash", json!({"command": "echo nope", "description": "x"}))
            .text("the hook said no"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let id = create_and_send(&mut client, &model.url(), json!({"hooks": true}), "run it").await;
    let mut invoked = Vec::new();
    client
        .events_until(
            |method, params| {
                assert_eq!(method, "hooks.invoke");
                let hook = params["hookType"].as_str().unwrap().to_owned();
                invoked.push(hook.clone());
                if hook == "preToolUse" {
                    assert_eq!(params["input"]["toolArgs"]["command"], "echo nope");
                    json!({"output": {"permissionDecision": "deny", "permissionDecisionReason": "no shells"}})
                } else {
                    json!({})
                }
            },
            is_idle,
        )
        .await;
    for hook in ["sessionStart", "userPromptSubmitted", "preToolUse"] {
        assert!(
            invoked.contains(&hook.to_owned()),
            "{hook} not invoked: {invoked:?}"
        );
    }
    let journal = journal_lines(&t.journal(&id));
    let done = of_type(&journal, "tool.execution_complete")[0];
    assert_eq!(done["data"]["success"], false);
    assert_eq!(
        done["data"]["error"]["message"],
        "Denied by preToolUse hook: no shells"
    );
    assert!(
        journal
            .iter()
            .any(|l| l["type"] == "hook.end" && l["data"]["hookType"] == "preToolUse")
    );
    t.stop().await;
}

#[tokio::test]
async fn a_pre_tool_use_deny_holds_for_a_tool_that_does_not_exist() {
    // The runtime puts every call to the hook first: its deny, not "does not exist", is what
    // the model reads.
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("report_intent", json!({"intent": "editing"}))
            .text("the hook said no"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let id = create_and_send(&mut client, &model.url(), json!({"hooks": true}), "edit").await;
    let mut asked = Vec::new();
    client
        .events_until(
            |_, params| {
                if params["hookType"] == "preToolUse" {
                    asked.push(params["input"]["toolName"].clone());
                    json!({"output": {"permissionDecision": "deny"}})
                } else {
                    json!({})
                }
            },
            is_idle,
        )
        .await;
    assert_eq!(asked, vec![json!("report_intent")]);
    let journal = journal_lines(&t.journal(&id));
    let done = of_type(&journal, "tool.execution_complete")[0];
    assert_eq!(
        done["data"]["error"]["message"],
        "Denied by preToolUse hook: No reason provided"
    );
    t.stop().await;
}

#[tokio::test]
async fn the_messages_of_a_destroyed_session_are_refused_until_it_is_resumed() {
    let (model, t, mut client) = with_model(Script::new().text("hi"), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let open = client
        .ok("session.getMessages", json!({"sessionId": id}))
        .await;
    assert_eq!(open["events"][0]["type"], "session.start");
    client.ok("session.destroy", json!({"sessionId": id})).await;
    let refused = client
        .err("session.getMessages", json!({"sessionId": id}))
        .await;
    assert_eq!(refused["code"], codes::SESSION_NOT_FOUND);
    assert!(
        refused["message"].as_str().unwrap().contains(&id),
        "{refused}"
    );
    resume(&mut client, &model.url(), &id, json!({})).await;
    let resumed = client
        .ok("session.getMessages", json!({"sessionId": id}))
        .await;
    assert_eq!(resumed["events"][0]["type"], "session.start");
    t.stop().await;
}

#[tokio::test]
async fn a_client_that_disconnects_mid_tool_leaves_a_resumable_session() {
    // Client tools need permission (`custom-tool`) unless declared with skipPermission.
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("slow_tool", json!({}))
            .text("after the resume"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"tools": [{"name": "slow_tool", "description": "never answers"}]}),
        "go",
    )
    .await;
    let requested = next_event(&mut client, "external_tool.requested").await;
    let request_id = requested["data"]["requestId"].clone();
    leave(&t, client).await;

    // The session waited on the client: it is suspended, the call left open for a resume.
    assert_left_open(
        &journal_lines(&t.journal(&id)),
        &["tool.execution_complete"],
    );

    // Another client (as another process would) resumes without the pending work: the call
    // is closed as interrupted.
    let mut next = t.client().await;
    resume(&mut next, &model.url(), &id, json!({})).await;
    let journal = journal_lines(&t.journal(&id));
    let done = *of_type(&journal, "tool.execution_complete")
        .first()
        .expect("the call was closed");
    assert_eq!(done["data"]["success"], false);
    assert!(
        done["data"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    // The orphaned call's answer is moot, as the runtime answers it; an id the journal never
    // had is still an error.
    let late = answer_tool(&mut next, &id, &request_id, "too late").await;
    assert_eq!(late, json!({"success": false}));
    let wrong = next
        .err(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": "made-up", "result": "x"}),
        )
        .await;
    assert_eq!(wrong["code"], codes::INVALID_PARAMS);
    next.ok(
        "session.send",
        json!({"sessionId": id, "prompt": "continue"}),
    )
    .await;
    let events = next.events_until(no_answers, is_idle).await;
    let answer = events
        .iter()
        .rfind(|e| e["type"] == "assistant.message")
        .unwrap();
    assert_eq!(answer["data"]["content"], "after the resume");
    detach_audit_stop(t, &mut next, &id).await;
}

#[tokio::test]
async fn abort_during_a_tool_interrupts_it_and_idles_aborted() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "sleep 60", "description": "wait"}),
            )
            .text("never asked"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let id = create_and_send(&mut client, &model.url(), json!({}), "wait").await;
    next_event(&mut client, "tool.execution_start").await;
    let aborted = client.ok("session.abort", json!({"sessionId": id})).await;
    assert_eq!(aborted["success"], true);
    let events = client.events_until(no_answers, is_idle).await;
    assert_eq!(events.last().unwrap()["data"]["aborted"], true);
    let journal = journal_lines(&t.journal(&id));
    assert!(!of_type(&journal, "abort").is_empty());
    let done = of_type(&journal, "tool.execution_complete")[0];
    assert_eq!(done["data"]["success"], false);
    let idle = client.ok("session.abort", json!({"sessionId": id})).await;
    assert_eq!(idle["success"], false, "nothing left to abort");
    t.stop().await;
}

#[tokio::test]
async fn an_autopilot_send_nudges_until_task_complete_and_ends_with_a_final_idle() {
    let (model, t, mut client) = with_model(
        Script::new()
            .text("I will plan first.")
            .tool_call("task_complete", json!({"summary": "all done"})),
        |_| {},
    )
    .await;
    let id = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "do it", "agentMode": "autopilot"}),
        )
        .await;
    let events = client.events_until(no_answers, is_idle).await;
    let idle = events.last().unwrap();
    assert_ne!(
        idle["data"]["mode"], "autopilot",
        "a final idle is not a continuation boundary"
    );
    assert_eq!(events.iter().filter(|e| is_idle(e)).count(), 1);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "user.message" && e["data"]["isAutopilotContinuation"] == true)
    );
    let complete = of_type(&events, "session.task_complete")[0];
    assert_eq!(complete["data"]["summary"], "all done");
    // Modes: the default is interactive; autopilot can be made the default.
    assert_eq!(
        client
            .ok("session.mode.get", json!({"sessionId": id}))
            .await,
        "interactive"
    );
    client
        .ok(
            "session.mode.set",
            json!({"sessionId": id, "mode": "autopilot"}),
        )
        .await;
    assert_eq!(
        client
            .ok("session.mode.get", json!({"sessionId": id}))
            .await,
        "autopilot"
    );
    let shell = client
        .err(
            "session.mode.set",
            json!({"sessionId": id, "mode": "shell"}),
        )
        .await;
    assert_eq!(shell["code"], codes::INVALID_PARAMS);
    t.stop().await;
}

#[tokio::test]
async fn send_and_wait_answers_with_the_completion_or_the_failure() {
    let (model, t, mut client) = with_model(
        Script::new()
            .text("the answer")
            .respond(ScriptedResponse::error_message(
                400,
                "bad request from the script",
            )),
        |_| {},
    )
    .await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let done = client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "question"}),
        )
        .await;
    assert_eq!(done["aborted"], false);
    assert_eq!(done["response"]["type"], "assistant.message");
    assert_eq!(done["response"]["data"]["content"], "the answer");
    // The completion event is the idle the client received before this answer.
    let idle_id = done["completionEventId"].as_str().unwrap();
    let idle = client
        .backlog
        .iter()
        .find(|m| m["params"]["event"]["type"] == "session.idle")
        .expect("idle notification before the answer");
    assert_eq!(idle["params"]["event"]["id"], idle_id);

    let failed = client
        .err(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "again"}),
        )
        .await;
    assert_eq!(failed["code"], codes::SESSION_FAILED);
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("bad request from the script"),
        "{failed}"
    );
    assert!(failed["data"]["completionEventId"].is_string());
    t.stop().await;
}

#[tokio::test]
async fn abort_ends_a_hook_call_the_client_never_answers() {
    let (model, t, mut client) = with_model(
        Script::new().tool_call("bash", json!({"command": "echo never", "description": "x"})),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let id = create_and_send(&mut client, &model.url(), json!({"hooks": true}), "go").await;
    // Answer every hook but preToolUse, which is left hanging; then abort.
    loop {
        let msg = client.next().await.expect("stream open");
        if msg["method"] != "hooks.invoke" {
            continue;
        }
        if msg["params"]["hookType"] == "preToolUse" {
            break;
        }
        let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
        client.send_body(reply.to_string().as_bytes()).await;
    }
    let aborted = client.ok("session.abort", json!({"sessionId": id})).await;
    assert_eq!(aborted["success"], true);
    let events = client.events_until(no_answers, is_idle).await;
    assert_eq!(events.last().unwrap()["data"]["aborted"], true);
    let journal = journal_lines(&t.journal(&id));
    let hook_end = journal
        .iter()
        .find(|l| l["type"] == "hook.end" && l["data"]["hookType"] == "preToolUse")
        .expect("the hanging hook was closed");
    assert_eq!(hook_end["data"]["success"], false);
    assert!(!t.work().join("never").exists());
    t.stop().await;
}
