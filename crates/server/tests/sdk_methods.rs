//! The SDK methods that act through the session's loop, over real TCP against the real server
//! and the scripted model: `session.model.switchTo`, `session.name.set`, `session.log` and
//! `session.send`'s `requestHeaders`. Every journal line they leave is checked against the
//! SDK's event schema.

use crate::common;

use std::path::Path;

use common::{Client, TestServer, create_params, journal_lines, no_answers};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

fn event_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/schema/session-events.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

fn assert_schema_valid(lines: &[Value]) {
    let schema = event_schema();
    for line in lines {
        let errors: Vec<String> = schema.iter_errors(line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line} is not schema-valid: {errors:?}");
    }
}

#[tokio::test]
async fn switch_model_name_log_and_request_headers_go_through_the_loop() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();

    // requestHeaders reach that message's model calls, and only those.
    let first = client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "first", "requestHeaders": {"X-Trace-Id": "trace-1"}}),
        )
        .await;
    assert_eq!(first["response"]["data"]["content"], "one");
    let bad = client
        .err(
            "session.send",
            json!({"sessionId": id, "prompt": "x", "requestHeaders": {"X-Bad": "a\r\nInjected: 1"}}),
        )
        .await;
    assert_eq!(bad["code"], codes::INVALID_PARAMS);
    let bad = client
        .err(
            "session.send",
            json!({"sessionId": id, "prompt": "x", "requestHeaders": {"bad name": "v"}}),
        )
        .await;
    assert_eq!(bad["code"], codes::INVALID_PARAMS);

    // switchTo answers as the Copilot CLI does; the next call uses the new model.
    let switched = client
        .ok(
            "session.model.switchTo",
            json!({"sessionId": id, "modelId": "other-model", "reasoningEffort": "high"}),
        )
        .await;
    assert_eq!(
        switched,
        json!({"modelId": "other-model", "deferred": false})
    );
    assert_eq!(
        client
            .ok("session.model.getCurrent", json!({"sessionId": id}))
            .await,
        json!({"modelId": "other-model", "reasoningEffort": "high"})
    );
    let empty = client
        .err(
            "session.model.switchTo",
            json!({"sessionId": id, "modelId": "  "}),
        )
        .await;
    assert_eq!(empty["code"], codes::INVALID_PARAMS);

    // name.set announces an ephemeral title.
    client
        .ok(
            "session.name.set",
            json!({"sessionId": id, "name": "My name"}),
        )
        .await;
    let seen = client
        .events_until(no_answers, |e| {
            e["type"] == "session.title_changed" && e["data"]["title"] == "My name"
        })
        .await;
    assert_eq!(seen.last().unwrap()["ephemeral"], true);

    // session.log: one event per level, its id answered.
    let mut logged = Vec::new();
    for (level, message) in [
        (None, "note"),
        (Some("warning"), "hello log"),
        (Some("error"), "broke"),
    ] {
        let mut params = json!({"sessionId": id, "message": message});
        if let Some(level) = level {
            params["level"] = json!(level);
        }
        let answer = client.ok("session.log", params).await;
        logged.push(answer["eventId"].as_str().unwrap().to_owned());
    }
    let tipped = client
        .ok(
            "session.log",
            json!({"sessionId": id, "message": "m", "type": "model", "tip": "try /model", "url": "https://example.invalid/doc"}),
        )
        .await;
    // A live-only entry: announced marked ephemeral, never journaled (checked below).
    let live = client
        .ok(
            "session.log",
            json!({"sessionId": id, "message": "live only", "ephemeral": true}),
        )
        .await;
    assert!(live["eventId"].is_string(), "{live}");
    let seen = client
        .events_until(no_answers, |e| {
            e["type"] == "session.info" && e["data"]["message"] == "live only"
        })
        .await;
    assert_eq!(seen.last().unwrap()["ephemeral"], true);
    for bad in [
        json!({"sessionId": id, "message": "m", "level": "debug"}),
        json!({"sessionId": id}),
    ] {
        let error = client.err("session.log", bad).await;
        assert_eq!(error["code"], codes::INVALID_PARAMS, "{error}");
    }

    let second = client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "second"}),
        )
        .await;
    assert_eq!(second["response"]["data"]["content"], "two");
    let asked = model.recorded();
    let chats: Vec<_> = asked
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0].header("x-trace-id"), Some("trace-1"));
    assert_eq!(chats[1].header("x-trace-id"), None);
    assert_eq!(chats[0].body["model"], "scripted-model");
    assert_eq!(chats[1].body["model"], "other-model");

    client.ok("session.detach", json!({"sessionId": id})).await;
    let lines = journal_lines(&t.journal(&id));
    assert_schema_valid(&lines);
    let of = |ty: &str| -> Vec<&Value> { lines.iter().filter(|l| l["type"] == ty).collect() };
    let change = of("session.model_change");
    assert_eq!(change.len(), 1);
    assert_eq!(change[0]["data"]["newModel"], "other-model");
    assert_eq!(change[0]["data"]["previousModel"], "scripted-model");
    assert_eq!(change[0]["data"]["reasoningEffort"], "high");
    assert!(change[0]["data"]["contextTier"].is_null());
    assert!(
        of("session.title_changed").is_empty(),
        "the title is ephemeral"
    );
    let info = of("session.info");
    assert_eq!(info.len(), 2, "the live-only entry is not in the journal");
    assert!(lines.iter().all(|l| l["data"]["message"] != "live only"));
    assert_eq!(info[0]["id"], logged[0].as_str());
    assert_eq!(
        info[0]["data"],
        json!({"infoType": "notification", "message": "note"})
    );
    assert_eq!(info[1]["id"], tipped["eventId"]);
    assert_eq!(
        info[1]["data"],
        json!({"infoType": "model", "message": "m", "tip": "try /model", "url": "https://example.invalid/doc"})
    );
    let warning = of("session.warning");
    assert_eq!(warning.len(), 1);
    assert_eq!(warning[0]["id"], logged[1].as_str());
    assert_eq!(
        warning[0]["data"],
        json!({"warningType": "notification", "message": "hello log"})
    );
    let error = of("session.error");
    assert_eq!(error[0]["id"], logged[2].as_str());
    assert_eq!(
        error[0]["data"],
        json!({"errorType": "notification", "message": "broke"})
    );
    // The log entries sit between the two messages, in the order they were sent.
    let position = |id: &str| lines.iter().position(|l| l["id"] == id).unwrap();
    let users: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "user.message")
        .map(|(i, _)| i)
        .collect();
    let at: Vec<usize> = logged.iter().map(|id| position(id)).collect();
    assert!(
        users[0] < at[0] && at[0] < at[1] && at[1] < at[2] && at[2] < users[1],
        "{at:?} {users:?}"
    );
    t.stop().await;
}

#[tokio::test]
async fn plan_mode_is_recorded_and_prefixes_the_prompt() {
    let model = ScriptedServer::start(Script::new().text("planned").text("done"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let set = client
        .ok("session.mode.set", json!({"sessionId": id, "mode": "plan"}))
        .await;
    assert_eq!(set["modeApplied"], true);
    // Setting the mode it already has records nothing more.
    client
        .ok("session.mode.set", json!({"sessionId": id, "mode": "plan"}))
        .await;
    assert_eq!(
        client
            .ok("session.mode.get", json!({"sessionId": id}))
            .await,
        "plan"
    );
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "design it"}),
        )
        .await;
    // A send may name its own mode.
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "build it", "agentMode": "interactive"}),
        )
        .await;
    client.ok("session.detach", json!({"sessionId": id})).await;

    let lines = journal_lines(&t.journal(&id));
    assert_schema_valid(&lines);
    let changes: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "session.mode_changed")
        .collect();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        changes[0]["data"],
        json!({"previousMode": "interactive", "newMode": "plan"})
    );
    let users: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "user.message")
        .collect();
    assert_eq!(users[0]["data"]["agentMode"], "plan");
    let transformed = users[0]["data"]["transformedContent"].as_str().unwrap();
    assert!(transformed.contains("[[PLAN]] design it"), "{transformed}");
    assert_eq!(users[1]["data"].get("agentMode"), None);
    assert!(
        !users[1]["data"]["transformedContent"]
            .as_str()
            .unwrap()
            .contains("[[PLAN]]")
    );
    // The model reads the prefixed prompt.
    let asked = model.requests();
    let last_user = |body: &Value| {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()
            .to_string()
    };
    assert!(last_user(&asked[0]).contains("[[PLAN]] design it"));
    assert!(!last_user(&asked[1]).contains("[[PLAN]]"));
    t.stop().await;
}

/// The system prompt of a new session's first message, after the TypeScript client's
/// `mode: "empty"` options patch when `empty_mode`.
async fn first_system_prompt(
    client: &mut Client,
    t: &TestServer,
    url: &str,
    empty_mode: bool,
) -> String {
    let created = client
        .ok("session.create", create_params(url, json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    if empty_mode {
        let answer = client
            .ok(
                "session.options.update",
                json!({"sessionId": id, "skipCustomInstructions": true,
                    "customAgentsLocalOnly": true, "coauthorEnabled": false,
                    "manageScheduleEnabled": false, "installedPlugins": [],
                    "includedBuiltinSkills": []}),
            )
            .await;
        assert_eq!(answer, json!({"success": true}));
        let refused = client
            .err(
                "session.options.update",
                json!({"sessionId": id, "workingDirectory": "/elsewhere"}),
            )
            .await;
        assert_eq!(refused["code"], codes::INVALID_PARAMS);
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("workingDirectory")
        );
    }
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "go"}),
        )
        .await;
    client.ok("session.detach", json!({"sessionId": id})).await;
    let lines = journal_lines(&t.journal(&id));
    assert_schema_valid(&lines);
    lines
        .iter()
        .find(|l| l["type"] == "system.message")
        .unwrap()["data"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn options_update_takes_the_typescript_clients_empty_mode_patch() {
    let model = ScriptedServer::start(Script::new().text("a").text("b"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    std::fs::write(t.work().join("AGENTS.md"), "agents-md-marker-text").unwrap();
    let mut client = t.client().await;
    let url = model.url();
    let skipped = first_system_prompt(&mut client, &t, &url, true).await;
    assert!(!skipped.contains("agents-md-marker-text"));
    let kept = first_system_prompt(&mut client, &t, &url, false).await;
    assert!(kept.contains("agents-md-marker-text"));
    t.stop().await;
}
