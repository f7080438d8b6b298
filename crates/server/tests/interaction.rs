//! What a client does for a running session besides prompts, over a real socket with a
//! scripted model: a tool handler that throws (the model reads the runtime's words, never the
//! handler's message), the model's `ask_user` questions answered by the client's user-input
//! handler (`userInput.request`; the answer is in the journal), and elicitations
//! (`capabilities.ui.elicitation`, `session.ui.elicitation` answered with
//! `session.ui.handlePendingElicitation`).

use crate::common;

use common::{TestServer, audit_clean, create_and_send, is_idle, journal_lines, no_answers};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

/// The `tool` messages of the model's last request.
fn tool_messages(model: &ScriptedServer) -> Vec<Value> {
    let last = model.requests().last().cloned().expect("a model request");
    last["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].clone())
        .collect()
}

/// The tool names offered in the model's first request.
fn offered(model: &ScriptedServer) -> Vec<String> {
    model.requests()[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name").to_owned())
        .collect()
}

/// Creates a session against `url` with `extra` params; its id and the elicitation
/// capability reported.
async fn create_reporting(client: &mut common::Client, url: &str, extra: Value) -> (String, Value) {
    let created = client
        .ok("session.create", common::create_params(url, extra))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    (id, created["capabilities"]["ui"]["elicitation"].clone())
}

/// Asks session `id` for a form, expecting a refusal: nobody answers elicitations.
async fn elicitation_refused(client: &mut common::Client, id: &str) {
    let refused = client
        .err(
            "session.ui.elicitation",
            json!({"sessionId": id, "message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}),
        )
        .await;
    assert_eq!(refused["code"], codes::SESSION_FAILED);
}

#[tokio::test]
async fn a_throwing_tool_handler_is_read_by_the_model_in_the_runtimes_words() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("get_user_location", json!({}))
            .tool_call("lookup", json!({"city": "Oslo", "units": "metric"}))
            .text("unknown"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = t.client().await;
    let tools = json!({"tools": [
        {"name": "get_user_location", "description": "Where the user is"},
        {"name": "lookup", "description": "Looks a city up"},
    ]});
    let id = create_and_send(&mut client, &model.url(), tools, "where am I?").await;
    for _ in 0..2 {
        let events = client
            .events_until(no_answers, |e| e["type"] == "external_tool.requested")
            .await;
        let request = &events.last().unwrap()["data"];
        client
            .ok(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": id, "requestId": request["requestId"], "error": "Melbourne"}),
            )
            .await;
    }
    client.events_until(no_answers, is_idle).await;
    let told = tool_messages(&model);
    assert_eq!(
        told,
        vec![
            json!(
                "Failed to execute `get_user_location` tool with arguments: {} due to error: Error: Tool execution failed"
            ),
            json!(
                r#"Failed to execute `lookup` tool with arguments: {"city":"Oslo","units":"metric"} due to error: Error: Tool execution failed"#
            ),
        ]
    );
    // The journal holds what the model read, so a resumed session tells it the same.
    let journal = journal_lines(&t.journal(&id));
    let failures: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .map(|l| &l["data"]["error"])
        .collect();
    assert_eq!(failures.len(), 2);
    assert_eq!(failures[0]["message"], told[0]);
    assert_eq!(failures[0]["code"], "failure");
    let text = std::fs::read_to_string(t.journal(&id)).unwrap();
    assert!(
        !text.contains("Melbourne"),
        "the handler's message stays out of the journal"
    );
    client.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn ask_user_is_answered_by_the_clients_user_input_handler_and_journaled() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "ask_user",
                json!({"question": "Pick one", "choices": ["Red", "Blue"], "allow_freeform": false}),
            )
            .tool_call("ask_user", json!({"question": "Favourite colour?"}))
            .text("done"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = t.client().await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestUserInput": true}),
        "ask me",
    )
    .await;
    let mut asked = Vec::new();
    client
        .events_until(
            |method, params| {
                assert_eq!(method, "userInput.request");
                asked.push(params.clone());
                match params["choices"].get(0) {
                    Some(first) => json!({"answer": first, "wasFreeform": false}),
                    None => json!({"answer": "teal, mostly", "wasFreeform": true}),
                }
            },
            is_idle,
        )
        .await;
    assert_eq!(
        asked,
        vec![
            json!({"sessionId": id, "question": "Pick one", "allowFreeform": false, "choices": ["Red", "Blue"]}),
            json!({"sessionId": id, "question": "Favourite colour?", "allowFreeform": true}),
        ]
    );
    assert!(offered(&model).contains(&"ask_user".to_owned()));
    assert_eq!(
        tool_messages(&model),
        vec![
            json!("User selected: Red"),
            json!("User responded: teal, mostly")
        ]
    );
    // What the user answered is in the journal: a resume, a replay and the audit see it.
    let journal = journal_lines(&t.journal(&id));
    let answers: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .map(|l| &l["data"]["result"]["content"])
        .collect();
    assert_eq!(
        answers,
        [
            &json!("User selected: Red"),
            &json!("User responded: teal, mostly")
        ]
    );
    client.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn ask_user_is_offered_only_to_a_client_that_answers_and_not_when_excluded() {
    for extra in [
        json!({}),
        json!({"requestUserInput": true, "excludedTools": ["ask_user"]}),
    ] {
        let model = ScriptedServer::start(Script::new().text("hi"))
            .await
            .unwrap();
        let t = TestServer::start(|c| c.permissions.allow_all = true).await;
        let mut client = t.client().await;
        let id = create_and_send(&mut client, &model.url(), extra.clone(), "hi").await;
        client.events_until(no_answers, is_idle).await;
        assert!(
            !offered(&model).contains(&"ask_user".to_owned()),
            "{extra}: {:?}",
            offered(&model)
        );
        client.ok("session.detach", json!({"sessionId": id})).await;
        t.stop().await;
    }
}

#[tokio::test]
async fn an_unanswered_question_ends_as_a_failure_when_the_client_goes_away() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("ask_user", json!({"question": "Still there?"}))
            .text("no answer"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = t.client().await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestUserInput": true}),
        "ask me",
    )
    .await;
    // The question arrives; the client leaves without answering.
    loop {
        let msg = client.next().await.expect("the question");
        if msg["method"] == "userInput.request" {
            break;
        }
    }
    drop(client);
    // The session was the client's only one: it is closed, the call recorded as ended.
    common::eventually(|| {
        journal_lines(&t.journal(&id))
            .iter()
            .any(|l| l["type"] == "session.shutdown")
    })
    .await;
    let journal = journal_lines(&t.journal(&id));
    let done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .expect("the ask_user call is closed");
    assert_eq!(done["data"]["success"], false);
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn elicitation_is_reported_and_answered_by_the_client_with_a_handler() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    // Without a handler: reported as unavailable, and asking fails at once.
    let (plain, reported) = create_reporting(&mut client, &model.url(), json!({})).await;
    assert_eq!(reported, false);
    elicitation_refused(&mut client, &plain).await;

    let (id, reported) = create_reporting(
        &mut client,
        &model.url(),
        json!({"requestElicitation": true}),
    )
    .await;
    assert_eq!(reported, true);
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let call = client
        .start_request(
            "session.ui.elicitation",
            json!({"sessionId": id, "message": "Name?", "requestedSchema": schema}),
        )
        .await;
    let events = client
        .events_until(no_answers, |e| e["type"] == "elicitation.requested")
        .await;
    let requested = &events.last().unwrap()["data"];
    assert_eq!(requested["message"], "Name?");
    assert_eq!(requested["requestedSchema"], schema);
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let taken = client
        .ok(
            "session.ui.handlePendingElicitation",
            json!({"sessionId": id, "requestId": requested["requestId"], "result": answer}),
        )
        .await;
    assert_eq!(taken["success"], true);
    let response = client.response(call).await;
    assert_eq!(response["result"], answer);
    let completed = client
        .events_until(no_answers, |e| e["type"] == "elicitation.completed")
        .await;
    let completed = &completed.last().unwrap()["data"];
    assert_eq!(completed["action"], "accept");
    assert_eq!(completed["content"]["name"], "Ada");
    // A second answer is moot; a malformed one is refused.
    let again = client
        .ok(
            "session.ui.handlePendingElicitation",
            json!({"sessionId": id, "requestId": requested["requestId"], "result": {"action": "decline"}}),
        )
        .await;
    assert_eq!(again["success"], false);
    let bad = client
        .err(
            "session.ui.handlePendingElicitation",
            json!({"sessionId": id, "requestId": requested["requestId"], "result": {"action": "maybe"}}),
        )
        .await;
    assert_eq!(bad["code"], codes::INVALID_PARAMS);
    // Elicitations are live notices, never journal lines.
    let text = std::fs::read_to_string(t.journal(&id)).unwrap();
    assert!(!text.contains("elicitation."), "{text}");
    client.ok("session.detach", json!({"sessionId": id})).await;
    client
        .ok("session.detach", json!({"sessionId": plain}))
        .await;
    t.stop().await;
}

#[tokio::test]
async fn a_client_with_an_elicitation_handler_joining_and_leaving_is_announced() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut first = t.client().await;
    let (id, reported) = create_reporting(&mut first, &model.url(), json!({})).await;
    assert_eq!(reported, false);
    let is_change = |e: &Value| e["type"] == "capabilities.changed";

    let mut second = t.client().await;
    let joined = second
        .ok(
            "session.resume",
            common::create_params(
                &model.url(),
                json!({"sessionId": id, "requestElicitation": true}),
            ),
        )
        .await;
    assert_eq!(joined["capabilities"]["ui"]["elicitation"], true);
    let seen = first.events_until(no_answers, is_change).await;
    assert_eq!(
        seen.last().unwrap()["data"],
        json!({"ui": {"elicitation": true}})
    );
    assert_eq!(seen.last().unwrap()["ephemeral"], true);

    // The handler's connection goes away: the first client hears the session can no longer ask.
    drop(second);
    let seen = first.events_until(no_answers, is_change).await;
    assert_eq!(
        seen.last().unwrap()["data"],
        json!({"ui": {"elicitation": false}})
    );
    elicitation_refused(&mut first, &id).await;
    first.ok("session.detach", json!({"sessionId": id})).await;
    t.stop().await;
}
