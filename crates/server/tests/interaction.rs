//! What a client does for a running session besides prompts, over a real socket with a
//! scripted model: a tool handler that throws (the model reads the runtime's words, never the
//! handler's message), the model's `ask_user` questions answered by the client's user-input
//! handler (`userInput.request`; the answer is in the journal), and elicitations
//! (`capabilities.ui.elicitation`, `session.ui.elicitation` answered with
//! `session.ui.handlePendingElicitation`).

use crate::common;

use common::{
    Client, TestServer, audit_clean, create_and_send, detach_audit_stop, is_idle, journal_lines,
    next_event, no_answers, of_type, resume, tool_contents, with_model,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

/// The `tool` messages of the model's last request.
fn tool_messages(model: &ScriptedServer) -> Vec<Value> {
    tool_contents(model.requests().last().expect("a model request"))
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

/// `script`'s model, a server letting every tool run, and a client that answers the model's
/// questions (`requestUserInput`) and sent "ask me" in a new session: the model, the server,
/// the client and the session's id.
async fn asking(script: Script) -> (ScriptedServer, TestServer, Client, String) {
    let (model, t, mut client) = with_model(script, |c| c.permissions.allow_all = true).await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestUserInput": true}),
        "ask me",
    )
    .await;
    (model, t, client, id)
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
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("get_user_location", json!({}))
            .tool_call("lookup", json!({"city": "Oslo", "units": "metric"}))
            .text("unknown"),
        |c| c.permissions.allow_all = true,
    )
    .await;
    let tools = json!({"tools": [
        {"name": "get_user_location", "description": "Where the user is"},
        {"name": "lookup", "description": "Looks a city up"},
    ]});
    let id = create_and_send(&mut client, &model.url(), tools, "where am I?").await;
    for _ in 0..2 {
        let requested = next_event(&mut client, "external_tool.requested").await;
        let request = &requested["data"];
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
    let failures: Vec<&Value> = of_type(&journal, "tool.execution_complete")
        .into_iter()
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
    detach_audit_stop(t, &mut client, &id).await;
}

#[tokio::test]
async fn ask_user_is_answered_by_the_clients_user_input_handler_and_journaled() {
    let (model, t, mut client, id) = asking(
        Script::new()
            .tool_call(
                "ask_user",
                json!({"question": "Pick one", "choices": ["Red", "Blue"], "allow_freeform": false}),
            )
            .tool_call("ask_user", json!({"question": "Favourite colour?"}))
            .text("done"),
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
    let answers: Vec<&Value> = of_type(&journal, "tool.execution_complete")
        .into_iter()
        .map(|l| &l["data"]["result"]["content"])
        .collect();
    assert_eq!(
        answers,
        [
            &json!("User selected: Red"),
            &json!("User responded: teal, mostly")
        ]
    );
    detach_audit_stop(t, &mut client, &id).await;
}

#[tokio::test]
async fn ask_user_is_offered_only_to_a_client_that_answers_and_not_when_excluded() {
    for extra in [
        json!({}),
        json!({"requestUserInput": true, "excludedTools": ["ask_user"]}),
    ] {
        let (model, t, mut client) =
            with_model(Script::new().text("hi"), |c| c.permissions.allow_all = true).await;
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
    let (_model, t, mut client, id) = asking(
        Script::new()
            .tool_call("ask_user", json!({"question": "Still there?"}))
            .text("no answer"),
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
    let done = *of_type(&journal, "tool.execution_complete")
        .first()
        .expect("the ask_user call is closed");
    assert_eq!(done["data"]["success"], false);
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn elicitation_is_reported_and_answered_by_the_client_with_a_handler() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
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
    let requested = next_event(&mut client, "elicitation.requested").await;
    let requested = &requested["data"];
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
    let completed = next_event(&mut client, "elicitation.completed").await;
    let completed = &completed["data"];
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
    let (model, t, mut first) = with_model(Script::new(), |_| {}).await;
    let (id, reported) = create_reporting(&mut first, &model.url(), json!({})).await;
    assert_eq!(reported, false);

    let mut second = t.client().await;
    let joined = resume(
        &mut second,
        &model.url(),
        &id,
        json!({"requestElicitation": true}),
    )
    .await;
    assert_eq!(joined["capabilities"]["ui"]["elicitation"], true);
    let seen = next_event(&mut first, "capabilities.changed").await;
    assert_eq!(seen["data"], json!({"ui": {"elicitation": true}}));
    assert_eq!(seen["ephemeral"], true);

    // The handler's connection goes away: the first client hears the session can no longer ask.
    drop(second);
    let seen = next_event(&mut first, "capabilities.changed").await;
    assert_eq!(seen["data"], json!({"ui": {"elicitation": false}}));
    elicitation_refused(&mut first, &id).await;
    first.ok("session.detach", json!({"sessionId": id})).await;
    t.stop().await;
}
