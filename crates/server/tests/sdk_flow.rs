//! The protocol as the SDK clients use it, end to end over a real socket with a scripted model:
//! events in order with `session.idle` last, the journal holding exactly the persisted ones,
//! client tools, permission answers, hooks, abort, autopilot, disconnect and resume, listings.

mod common;

use std::time::Duration;

use common::{Client, GUARD, TestServer, create_params, is_idle, journal_lines, no_answers, types};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_server::rpc::codes;

/// Waits (polling; the guard only bounds a failure) until `check` holds.
async fn eventually(mut check: impl FnMut() -> bool) {
    let guard = tokio::time::Instant::now() + GUARD;
    while !check() {
        assert!(
            tokio::time::Instant::now() < guard,
            "condition not reached in time"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn audit_clean(path: &std::path::Path) {
    let report = turnstile_replay::audit_file(path).expect("audit");
    assert!(
        report.is_clean(),
        "audit violations: {:?}",
        report.violations
    );
}

async fn create(client: &mut Client, url: &str, extra: Value) -> String {
    let created = client.ok("session.create", create_params(url, extra)).await;
    created["sessionId"].as_str().expect("sessionId").to_owned()
}

#[tokio::test]
async fn a_send_streams_every_event_in_order_and_the_journal_holds_the_persisted_ones() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "echo hi from bash", "description": "greet"}),
            )
            .tool_call("view", json!({"path": "note.txt"}))
            .text("bash said hi and the note says hello"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    std::fs::write(t.work().join("note.txt"), "hello\n").unwrap();
    let mut client = Client::connect(t.addr).await;
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
    let user = events.iter().find(|e| e["type"] == "user.message").unwrap();
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
    for (line, event) in journal.iter().zip(&persisted) {
        assert_eq!(line, *event);
    }
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
    client.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn a_client_tool_call_is_recorded_and_answered_by_the_client() {
    let model = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::tool_call("get_weather", json!({"city": "Paris"}))
                    .and_tool_call("get_weather", json!({"city": "Oslo"})),
            )
            .text("Paris is sunny, Oslo is not"),
    )
    .await
    .unwrap();
    // Client tools need permission (`custom-tool`) unless declared with skipPermission.
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = Client::connect(t.addr).await;
    let tools = json!({"tools": [{
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }]});
    let id = create(&mut client, &model.url(), tools).await;
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "weather?"}),
        )
        .await;
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
        client
            .ok(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": id, "requestId": data["requestId"], "result": result}),
            )
            .await;
        // A second answer to the same request changes nothing; a made-up id is an error.
        let again = client
            .ok(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": id, "requestId": data["requestId"], "result": "twice"}),
            )
            .await;
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
    let requested = journal
        .iter()
        .filter(|l| l["type"] == "external_tool.requested")
        .count();
    assert_eq!(requested, 2, "external_tool.requested is persisted");
    let completions: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .collect();
    assert_eq!(completions[0]["data"]["success"], true);
    assert_eq!(completions[0]["data"]["result"]["content"], "sunny");
    assert_eq!(completions[1]["data"]["success"], false);
    assert_eq!(
        completions[1]["data"]["error"]["message"],
        "station offline"
    );
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
    client.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn reads_inside_the_working_directory_ask_a_client_that_answers_permissions() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("view", json!({"path": "note.txt"}))
            .tool_call("view", json!({"path": "note.txt"}))
            .tool_call("grep", json!({"pattern": "hello"}))
            .text("read it twice"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    std::fs::write(t.work().join("note.txt"), "hello\n").unwrap();
    let mut client = Client::connect(t.addr).await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
    )
    .await;
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "read the note"}),
        )
        .await;
    // Approved once, the file is asked for again; then approved for the session, the search
    // is not asked.
    let answers = [
        json!({"kind": "approve-once"}),
        json!({"kind": "approve-for-session", "approval": {"kind": "read"}}),
    ];
    let mut asked = Vec::new();
    loop {
        let events = client
            .events_until(no_answers, |e| {
                e["type"] == "permission.requested" || is_idle(e)
            })
            .await;
        let last = events.last().unwrap();
        if is_idle(last) {
            break;
        }
        asked.push(last["data"]["permissionRequest"].clone());
        let result = answers
            .get(asked.len() - 1)
            .cloned()
            .unwrap_or_else(|| json!({"kind": "reject"}));
        client
            .ok(
                "session.permissions.handlePendingPermissionRequest",
                json!({"sessionId": id, "requestId": last["data"]["requestId"], "result": result}),
            )
            .await;
    }
    let work = std::path::absolute(t.work()).unwrap();
    let note = work.join("note.txt").display().to_string();
    assert_eq!(asked.len(), 2, "{asked:?}");
    for request in &asked {
        assert_eq!(request["kind"], "read");
        assert_eq!(request["intention"], format!("Read file: {note}"));
        assert_eq!(request["path"], note);
    }
    let journal = journal_lines(&t.journal(&id));
    let done: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .collect();
    assert_eq!(done.len(), 3);
    assert!(
        done.iter().all(|d| d["data"]["success"] == true),
        "{done:?}"
    );
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn permission_requests_go_to_the_client_which_can_reject_or_approve() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "touch made-by-bash", "description": "touch"}),
            )
            .tool_call(
                "create",
                json!({"path": "made-by-create.txt", "file_text": "ok\n"}),
            )
            .text("one refused, one done"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
    )
    .await;
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "make files"}),
        )
        .await;
    loop {
        let events = client
            .events_until(no_answers, |e| {
                e["type"] == "permission.requested" || is_idle(e)
            })
            .await;
        let last = events.last().unwrap();
        if is_idle(last) {
            break;
        }
        let request = &last["data"]["permissionRequest"];
        // The open request is listed until it is answered, as its prompt (as the runtime
        // lists it).
        let prompt = &last["data"]["promptRequest"];
        assert_eq!(prompt["toolCallId"], request["toolCallId"]);
        let pending = client
            .ok(
                "session.permissions.pendingRequests",
                json!({"sessionId": id}),
            )
            .await;
        assert_eq!(
            pending["items"],
            json!([{"requestId": last["data"]["requestId"], "request": prompt}])
        );
        let result = if request["kind"] == "shell" {
            json!({"kind": "reject", "feedback": "no shell today"})
        } else {
            json!({"kind": "approve-once"})
        };
        client
            .ok(
                "session.permissions.handlePendingPermissionRequest",
                json!({"sessionId": id, "requestId": last["data"]["requestId"], "result": result}),
            )
            .await;
    }
    assert_eq!(
        client
            .ok(
                "session.permissions.pendingRequests",
                json!({"sessionId": id}),
            )
            .await,
        json!({"items": []})
    );
    assert!(!t.work().join("made-by-bash").exists());
    assert!(t.work().join("made-by-create.txt").exists());
    let journal = journal_lines(&t.journal(&id));
    let results: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "permission.completed")
        .map(|l| &l["data"]["result"])
        .collect();
    assert_eq!(
        results[0],
        &json!({"kind": "denied-interactively-by-user", "feedback": "no shell today"})
    );
    assert_eq!(results[1], &json!({"kind": "approved"}));
    let bash_done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .unwrap();
    assert_eq!(bash_done["data"]["success"], false);
    assert!(
        bash_done["data"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no shell today")
    );
    t.stop().await;
}

#[tokio::test]
async fn client_hooks_are_invoked_and_a_pre_tool_use_deny_is_applied() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("bash", json!({"command": "echo nope", "description": "x"}))
            .text("the hook said no"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = Client::connect(t.addr).await;
    let id = create(&mut client, &model.url(), json!({"hooks": true})).await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "run it"}))
        .await;
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
    let done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .unwrap();
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
async fn a_client_that_disconnects_mid_tool_leaves_a_resumable_session() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("slow_tool", json!({}))
            .text("after the resume"),
    )
    .await
    .unwrap();
    // Client tools need permission (`custom-tool`) unless declared with skipPermission.
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = Client::connect(t.addr).await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"tools": [{"name": "slow_tool", "description": "never answers"}]}),
    )
    .await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "go"}))
        .await;
    client
        .events_until(no_answers, |e| e["type"] == "external_tool.requested")
        .await;
    drop(client);
    let server = t.server.clone();
    eventually(|| server.open_sessions() == 0).await;

    let journal = journal_lines(&t.journal(&id));
    let kinds = types(&journal);
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("session.shutdown"),
        "{kinds:?}"
    );
    let done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .expect("the call was closed");
    assert_eq!(done["data"]["success"], false);
    assert!(
        done["data"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    audit_clean(&t.journal(&id));

    // Another client (as another process would) resumes and continues.
    let mut next = Client::connect(t.addr).await;
    next.ok(
        "session.resume",
        create_params(&model.url(), json!({"sessionId": id})),
    )
    .await;
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
    next.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn abort_during_a_tool_interrupts_it_and_idles_aborted() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "sleep 60", "description": "wait"}),
            )
            .text("never asked"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = Client::connect(t.addr).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "wait"}))
        .await;
    client
        .events_until(no_answers, |e| e["type"] == "tool.execution_start")
        .await;
    let aborted = client.ok("session.abort", json!({"sessionId": id})).await;
    assert_eq!(aborted["success"], true);
    let events = client.events_until(no_answers, is_idle).await;
    assert_eq!(events.last().unwrap()["data"]["aborted"], true);
    let journal = journal_lines(&t.journal(&id));
    assert!(journal.iter().any(|l| l["type"] == "abort"));
    let done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .unwrap();
    assert_eq!(done["data"]["success"], false);
    let idle = client.ok("session.abort", json!({"sessionId": id})).await;
    assert_eq!(idle["success"], false, "nothing left to abort");
    t.stop().await;
}

#[tokio::test]
async fn an_autopilot_send_nudges_until_task_complete_and_ends_with_a_final_idle() {
    let model = ScriptedServer::start(
        Script::new()
            .text("I will plan first.")
            .tool_call("task_complete", json!({"summary": "all done"})),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
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
    let complete = events
        .iter()
        .find(|e| e["type"] == "session.task_complete")
        .unwrap();
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
async fn list_last_id_metadata_and_delete() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
    assert_eq!(
        client.ok("session.list", json!({})).await["sessions"],
        json!([])
    );
    assert_eq!(client.ok("session.getLastId", json!({})).await, json!({}));
    let first = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.send",
            json!({"sessionId": first, "prompt": "first prompt"}),
        )
        .await;
    client.events_until(no_answers, is_idle).await;
    let second = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.send",
            json!({"sessionId": second, "prompt": "second prompt"}),
        )
        .await;
    client.events_until(no_answers, is_idle).await;

    let listed = client.ok("session.list", json!({})).await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![second.as_str(), first.as_str()], "newest first");
    let entry = &listed["sessions"][0];
    assert_eq!(entry["summary"], "second prompt");
    assert_eq!(entry["isRemote"], false);
    assert_eq!(
        entry["context"]["cwd"],
        t.work().canonicalize().unwrap().display().to_string()
    );
    let filtered = client
        .ok("session.list", json!({"filter": {"cwd": "/nowhere"}}))
        .await;
    assert_eq!(filtered["sessions"], json!([]));
    let last = client.ok("session.getLastId", json!({})).await;
    assert_eq!(last["sessionId"], second.as_str());
    let meta = client
        .ok("session.getMetadata", json!({"sessionId": first}))
        .await;
    assert_eq!(meta["session"]["summary"], "first prompt");

    let deleted = client
        .ok("session.delete", json!({"sessionId": first}))
        .await;
    assert_eq!(deleted, json!({"success": true}));
    assert!(!t.journal(&first).exists());
    let again = client
        .ok("session.delete", json!({"sessionId": first}))
        .await;
    assert_eq!(again["success"], false);
    let error = client
        .err("session.send", json!({"sessionId": first, "prompt": "x"}))
        .await;
    assert_eq!(error["code"], codes::SESSION_NOT_FOUND);
    let listed = client.ok("session.list", json!({})).await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    let deleted_note = client
        .notifications()
        .into_iter()
        .any(|m| m["method"] == "session.lifecycle" && m["params"]["type"] == "session.deleted");
    assert!(deleted_note, "session.deleted was announced");
    t.stop().await;
}

#[tokio::test]
async fn listings_come_from_the_session_index_and_skip_a_damaged_journal() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
    let mut ids = Vec::new();
    for prompt in ["first", "second"] {
        let id = create(&mut client, &model.url(), json!({})).await;
        client
            .ok("session.send", json!({"sessionId": id, "prompt": prompt}))
            .await;
        client.events_until(no_answers, is_idle).await;
        ids.push(id);
    }
    let listed = client.ok("session.list", json!({})).await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    let index = t.root().dir().join("turnstile-index.jsonl");
    let text = std::fs::read_to_string(&index).expect("the listing keeps the index");
    for id in &ids {
        assert!(text.contains(id.as_str()), "{id} indexed: {text}");
    }
    // A third session directory whose journal is garbage: the others are still listed, in
    // order.
    let bad = turnstile_journal::Uuid::new_v4().to_string();
    let dir = t.root().dir().join(&bad);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.jsonl"), "\u{0}\u{1} not json\n").unwrap();
    let listed = client.ok("session.list", json!({})).await;
    let listed: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .filter(|id| *id != bad)
        .collect();
    assert_eq!(listed, vec![ids[1].as_str(), ids[0].as_str()]);
    let last = client.ok("session.getLastId", json!({})).await;
    assert_eq!(last["sessionId"], ids[1].as_str());
    t.stop().await;
}

#[tokio::test]
async fn an_idle_session_is_closed_after_the_timeout_and_says_so() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|c| c.session_idle_timeout = Some(Duration::from_secs(1))).await;
    let mut client = Client::connect(t.addr).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let server = t.server.clone();
    eventually(|| server.open_sessions() == 0).await;
    let error = client
        .err("session.send", json!({"sessionId": id, "prompt": "late"}))
        .await;
    assert_eq!(error["code"], codes::SESSION_NOT_FOUND);
    assert!(
        error["message"].as_str().unwrap().contains("idle"),
        "{error}"
    );
    let lines = journal_lines(&t.journal(&id));
    assert_eq!(lines.last().unwrap()["type"], "session.shutdown");
    client
        .ok(
            "session.resume",
            create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    t.stop().await;
}

#[tokio::test]
async fn send_and_wait_answers_with_the_completion_or_the_failure() {
    let model = ScriptedServer::start(Script::new().text("the answer").respond(
        ScriptedResponse::error_message(400, "bad request from the script"),
    ))
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = Client::connect(t.addr).await;
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
    let model = ScriptedServer::start(
        Script::new().tool_call("bash", json!({"command": "echo never", "description": "x"})),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = Client::connect(t.addr).await;
    let id = create(&mut client, &model.url(), json!({"hooks": true})).await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "go"}))
        .await;
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
