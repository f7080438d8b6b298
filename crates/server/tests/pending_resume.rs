//! A session whose last client leaves while the engine waits on that client (a client tool's
//! result, a permission decision) is suspended, as the Copilot CLI does: its requests stay
//! open in the journal, and a client that resumes it with `continuePendingWork: true` answers
//! the same request ids and the message goes on; a second client that resumes it while it
//! still runs joins it, `session.resume` recorded with `sessionWasActive: true`. Real
//! clients over real sockets, a scripted model.

use crate::common;

use common::{
    Client, TestServer, audit_clean, create_and_send, create_params, eventually, is_idle,
    journal_lines, no_answers, types,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

fn tool(name: &str) -> Value {
    json!({"name": name, "description": "answers later", "parameters": {"type": "object", "properties": {"value": {"type": "string"}}}})
}

/// Reads until `count` `external_tool.requested` were seen; their request ids by tool name.
async fn tool_requests(client: &mut Client, count: usize) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    client
        .events_until(no_answers, |e| {
            if e["type"] == "external_tool.requested" {
                seen.push((
                    e["data"]["toolName"].as_str().unwrap_or("").to_owned(),
                    e["data"]["requestId"].clone(),
                ));
            }
            seen.len() == count
        })
        .await;
    seen
}

/// Drops `client` and waits until the server has closed the session it was the last to have.
async fn leave(t: &TestServer, client: Client) {
    drop(client);
    let server = t.server.clone();
    eventually(|| server.open_sessions() == 0).await;
}

/// The journal after the suspension: it ends with `session.shutdown`, and nothing closed the
/// call (no result, no turn end, no abort).
fn assert_left_open(journal: &[Value]) {
    let kinds = types(journal);
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("session.shutdown"),
        "{kinds:?}"
    );
    for closing in ["tool.execution_complete", "assistant.turn_end", "abort"] {
        assert!(
            !kinds.iter().any(|k| k == closing),
            "{closing} in {kinds:?}"
        );
    }
}

fn resume_params(url: &str, id: &str, extra: Value) -> Value {
    let mut params = create_params(url, json!({"sessionId": id, "continuePendingWork": true}));
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    params
}

#[tokio::test]
async fn a_client_tool_left_waiting_is_answered_by_the_client_that_resumes() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("lookup", json!({"value": "beta"}))
            .text("the lookup said RESUMED"),
    )
    .await
    .unwrap();
    let t = TestServer::start(TestServer::allow_all).await;
    let mut first = t.client().await;
    let id = create_and_send(
        &mut first,
        &model.url(),
        json!({"tools": [tool("lookup")]}),
        "look it up",
    )
    .await;
    let requested = tool_requests(&mut first, 1).await;
    let request_id = requested[0].1.clone();
    leave(&t, first).await;
    assert_left_open(&journal_lines(&t.journal(&id)));

    // Another client, without the tool, answers the request by its id.
    let mut next = t.client().await;
    next.ok(
        "session.resume",
        resume_params(&model.url(), &id, json!({})),
    )
    .await;
    let answered = next
        .ok(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": request_id, "result": "RESUMED"}),
        )
        .await;
    assert_eq!(answered, json!({"success": true}));
    let events = next.events_until(no_answers, is_idle).await;
    let answer = events
        .iter()
        .rfind(|e| e["type"] == "assistant.message")
        .unwrap();
    assert_eq!(answer["data"]["content"], "the lookup said RESUMED");
    let journal = journal_lines(&t.journal(&id));
    // Its engine had shut it down: not active, as the Copilot CLI reports it.
    let resume = journal
        .iter()
        .find(|l| l["type"] == "session.resume")
        .unwrap();
    assert_eq!(resume["data"]["sessionWasActive"], false);
    assert_eq!(resume["data"]["continuePendingWork"], true);
    let done: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .collect();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["data"]["result"]["content"], "RESUMED");
    // The model got the client's answer as the call's result.
    let requests = model.requests();
    let results: Vec<&Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["content"], "RESUMED");
    next.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn a_permission_left_waiting_is_listed_and_answered_after_the_resume() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("lookup", json!({"value": "alpha"}))
            .text("approved and looked up"),
    )
    .await
    .unwrap();
    // No rule allows client tools: the client is asked.
    let t = TestServer::start(|_| {}).await;
    let mut first = t.client().await;
    let params = json!({"tools": [tool("lookup")], "requestPermission": true});
    let id = create_and_send(&mut first, &model.url(), params.clone(), "look it up").await;
    let asked = first
        .events_until(no_answers, |e| e["type"] == "permission.requested")
        .await;
    let request_id = asked.last().unwrap()["data"]["requestId"].clone();
    leave(&t, first).await;
    let journal = journal_lines(&t.journal(&id));
    assert_left_open(&journal);
    assert!(
        !journal.iter().any(|l| l["type"] == "permission.completed"),
        "{:?}",
        types(&journal)
    );

    let mut next = t.client().await;
    next.ok("session.resume", resume_params(&model.url(), &id, params))
        .await;
    // The same request, by its id, until it is answered.
    let listed = tokio::time::timeout(common::GUARD, async {
        loop {
            let listed = next
                .ok(
                    "session.permissions.pendingRequests",
                    json!({"sessionId": id}),
                )
                .await;
            if listed["items"].as_array().is_some_and(|i| !i.is_empty()) {
                break listed;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the request was never listed");
    assert_eq!(listed["items"][0]["requestId"], request_id, "{listed}");
    let approved = next
        .ok(
            "session.permissions.handlePendingPermissionRequest",
            json!({"sessionId": id, "requestId": request_id, "result": {"kind": "approve-once"}}),
        )
        .await;
    assert_eq!(approved, json!({"success": true}));
    // Approved, the tool runs on the client that has it now.
    let call = tool_requests(&mut next, 1).await;
    next.ok(
        "session.tools.handlePendingToolCall",
        json!({"sessionId": id, "requestId": call[0].1, "result": "ALPHA"}),
    )
    .await;
    let events = next.events_until(no_answers, is_idle).await;
    assert!(
        events.iter().any(|e| e["type"] == "assistant.message"
            && e["data"]["content"] == "approved and looked up"),
        "{:?}",
        types(&events)
    );
    next.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn parallel_calls_left_waiting_are_answered_in_any_order() {
    let model = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::tool_call("lookup_a", json!({"value": "alpha"}))
                    .and_tool_call("lookup_b", json!({"value": "beta"})),
            )
            .text("both answered"),
    )
    .await
    .unwrap();
    let t = TestServer::start(TestServer::allow_all).await;
    let mut first = t.client().await;
    let id = create_and_send(
        &mut first,
        &model.url(),
        json!({"tools": [tool("lookup_a"), tool("lookup_b")]}),
        "look both up",
    )
    .await;
    let requested = tool_requests(&mut first, 2).await;
    let of = |name: &str| {
        requested
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.clone())
            .unwrap()
    };
    leave(&t, first).await;
    assert_left_open(&journal_lines(&t.journal(&id)));

    let mut next = t.client().await;
    next.ok(
        "session.resume",
        resume_params(&model.url(), &id, json!({})),
    )
    .await;
    for (name, result) in [("lookup_b", "B_BETA"), ("lookup_a", "A_ALPHA")] {
        let answered = next
            .ok(
                "session.tools.handlePendingToolCall",
                json!({"sessionId": id, "requestId": of(name), "result": result}),
            )
            .await;
        assert_eq!(answered, json!({"success": true}), "{name}");
    }
    next.events_until(no_answers, is_idle).await;
    // The model gets both results in the order of its calls.
    let requests = model.requests();
    let results: Vec<&Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| &m["content"])
        .collect();
    assert_eq!(results, [&json!("A_ALPHA"), &json!("B_BETA")]);
    next.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn a_second_client_joins_a_waiting_session_and_the_resume_is_recorded() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("lookup", json!({"value": "beta"}))
            .text("answered by the second client"),
    )
    .await
    .unwrap();
    let t = TestServer::start(TestServer::allow_all).await;
    let mut first = t.client().await;
    let id = create_and_send(
        &mut first,
        &model.url(),
        json!({"tools": [tool("lookup")]}),
        "look it up",
    )
    .await;
    let requested = tool_requests(&mut first, 1).await;
    let request_id = requested[0].1.clone();

    // The first client stays; the second resumes the session while it waits.
    let mut second = t.client().await;
    let mut params = create_params(&model.url(), json!({"sessionId": id}));
    params["continuePendingWork"] = json!(false);
    second.ok("session.resume", params).await;
    let messages = second
        .ok("session.getMessages", json!({"sessionId": id}))
        .await;
    let resumes: Vec<&Value> = messages["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "session.resume")
        .collect();
    assert_eq!(resumes.len(), 1, "{messages}");
    assert_eq!(resumes[0]["data"]["sessionWasActive"], true);
    assert_eq!(resumes[0]["data"]["continuePendingWork"], false);
    // Both clients see it.
    let seen = first
        .events_until(no_answers, |e| e["type"] == "session.resume")
        .await;
    assert_eq!(seen.last().unwrap()["data"]["sessionWasActive"], true);

    let answered = second
        .ok(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": request_id, "result": "FROM_SECOND"}),
        )
        .await;
    assert_eq!(answered, json!({"success": true}));
    let events = second.events_until(no_answers, is_idle).await;
    assert!(
        events
            .iter()
            .any(|e| e["data"]["content"] == "answered by the second client"),
        "{:?}",
        types(&events)
    );
    // The first client's late answer changes nothing.
    let late = first
        .ok(
            "session.tools.handlePendingToolCall",
            json!({"sessionId": id, "requestId": request_id, "result": "TOO_LATE"}),
        )
        .await;
    assert_eq!(late, json!({"success": false}));
    second.ok("session.detach", json!({"sessionId": id})).await;
    first.ok("session.detach", json!({"sessionId": id})).await;
    audit_clean(&t.journal(&id));
    t.stop().await;
}
