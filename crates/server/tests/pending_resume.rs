//! A session whose last client leaves while the engine waits on that client (a client tool's
//! result, a permission decision) is suspended, as the Copilot CLI does: its requests stay
//! open in the journal, and a client that resumes it with `continuePendingWork: true` answers
//! the same request ids and the message goes on; a second client that resumes it while it
//! still runs joins it, `session.resume` recorded with `sessionWasActive: true`. Real
//! clients over real sockets, a scripted model.

use crate::common;

use common::{
    Client, TestServer, answer_tool, assert_left_open, create_and_send, detach_audit_stop, is_idle,
    journal_lines, leave, next_event, no_answers, of_type, resume, tool_contents, types,
    with_model,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

/// What closes a call left waiting: none of it is in the journal of a suspended session.
const CLOSING: &[&str] = &["tool.execution_complete", "assistant.turn_end", "abort"];

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

/// A session whose model called client tools, waiting on them.
struct Waiting {
    model: ScriptedServer,
    t: TestServer,
    /// The client that declared the tools and sent the prompt.
    client: Client,
    id: String,
    /// The calls' request ids by tool name.
    calls: Vec<(String, Value)>,
}

/// Starts `script`'s model and a server letting every tool run; a client declares `tools` and
/// sends `prompt`; returns once the model's `count` calls wait on the client.
async fn waiting(script: Script, tools: &[&str], prompt: &str, count: usize) -> Waiting {
    let (model, t, mut client) = with_model(script, TestServer::allow_all).await;
    let tools: Vec<Value> = tools.iter().map(|name| tool(name)).collect();
    let id = create_and_send(&mut client, &model.url(), json!({"tools": tools}), prompt).await;
    let calls = tool_requests(&mut client, count).await;
    Waiting {
        model,
        t,
        client,
        id,
        calls,
    }
}

/// `extra` with `continuePendingWork: true`.
fn continuing(extra: Value) -> Value {
    let mut extra = extra;
    extra["continuePendingWork"] = json!(true);
    extra
}

#[tokio::test]
async fn a_client_tool_left_waiting_is_answered_by_the_client_that_resumes() {
    let script = Script::new()
        .tool_call("lookup", json!({"value": "beta"}))
        .text("the lookup said RESUMED");
    let Waiting {
        model,
        t,
        client: first,
        id,
        calls,
    } = waiting(script, &["lookup"], "look it up", 1).await;
    let request_id = calls[0].1.clone();
    leave(&t, first).await;
    assert_left_open(&journal_lines(&t.journal(&id)), CLOSING);

    // Another client, without the tool, answers the request by its id.
    let mut next = t.client().await;
    resume(&mut next, &model.url(), &id, continuing(json!({}))).await;
    let answered = answer_tool(&mut next, &id, &request_id, "RESUMED").await;
    assert_eq!(answered, json!({"success": true}));
    let events = next.events_until(no_answers, is_idle).await;
    let answer = events
        .iter()
        .rfind(|e| e["type"] == "assistant.message")
        .unwrap();
    assert_eq!(answer["data"]["content"], "the lookup said RESUMED");
    let journal = journal_lines(&t.journal(&id));
    // Its engine had shut it down: not active, as the Copilot CLI reports it.
    let resume = of_type(&journal, "session.resume")[0];
    assert_eq!(resume["data"]["sessionWasActive"], false);
    assert_eq!(resume["data"]["continuePendingWork"], true);
    let done = of_type(&journal, "tool.execution_complete");
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["data"]["result"]["content"], "RESUMED");
    // The model got the client's answer as the call's result.
    assert_eq!(tool_contents(&model.requests()[1]), [json!("RESUMED")]);
    detach_audit_stop(t, &mut next, &id).await;
}

#[tokio::test]
async fn a_permission_left_waiting_is_listed_and_answered_after_the_resume() {
    // No rule allows client tools: the client is asked.
    let (model, t, mut first) = with_model(
        Script::new()
            .tool_call("lookup", json!({"value": "alpha"}))
            .text("approved and looked up"),
        |_| {},
    )
    .await;
    let params = json!({"tools": [tool("lookup")], "requestPermission": true});
    let id = create_and_send(&mut first, &model.url(), params.clone(), "look it up").await;
    let asked = next_event(&mut first, "permission.requested").await;
    let request_id = asked["data"]["requestId"].clone();
    leave(&t, first).await;
    let journal = journal_lines(&t.journal(&id));
    assert_left_open(&journal, CLOSING);
    assert!(
        of_type(&journal, "permission.completed").is_empty(),
        "{:?}",
        types(&journal)
    );

    let mut next = t.client().await;
    resume(&mut next, &model.url(), &id, continuing(params)).await;
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
    answer_tool(&mut next, &id, &call[0].1, "ALPHA").await;
    let events = next.events_until(no_answers, is_idle).await;
    assert!(
        events.iter().any(|e| e["type"] == "assistant.message"
            && e["data"]["content"] == "approved and looked up"),
        "{:?}",
        types(&events)
    );
    detach_audit_stop(t, &mut next, &id).await;
}

#[tokio::test]
async fn parallel_calls_left_waiting_are_answered_in_any_order() {
    let script = Script::new()
        .respond(
            ScriptedResponse::tool_call("lookup_a", json!({"value": "alpha"}))
                .and_tool_call("lookup_b", json!({"value": "beta"})),
        )
        .text("both answered");
    let Waiting {
        model,
        t,
        client: first,
        id,
        calls,
    } = waiting(script, &["lookup_a", "lookup_b"], "look both up", 2).await;
    let of = |name: &str| {
        calls
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id.clone())
            .unwrap()
    };
    leave(&t, first).await;
    assert_left_open(&journal_lines(&t.journal(&id)), CLOSING);

    let mut next = t.client().await;
    resume(&mut next, &model.url(), &id, continuing(json!({}))).await;
    for (name, result) in [("lookup_b", "B_BETA"), ("lookup_a", "A_ALPHA")] {
        let answered = answer_tool(&mut next, &id, &of(name), result).await;
        assert_eq!(answered, json!({"success": true}), "{name}");
    }
    next.events_until(no_answers, is_idle).await;
    // The model gets both results in the order of its calls.
    assert_eq!(
        tool_contents(&model.requests()[1]),
        [json!("A_ALPHA"), json!("B_BETA")]
    );
    detach_audit_stop(t, &mut next, &id).await;
}

#[tokio::test]
async fn a_second_client_joins_a_waiting_session_and_the_resume_is_recorded() {
    let script = Script::new()
        .tool_call("lookup", json!({"value": "beta"}))
        .text("answered by the second client");
    let Waiting {
        model,
        t,
        client: mut first,
        id,
        calls,
    } = waiting(script, &["lookup"], "look it up", 1).await;
    let request_id = calls[0].1.clone();

    // The first client stays; the second resumes the session while it waits.
    let mut second = t.client().await;
    resume(
        &mut second,
        &model.url(),
        &id,
        json!({"continuePendingWork": false}),
    )
    .await;
    let messages = second
        .ok("session.getMessages", json!({"sessionId": id}))
        .await;
    let resumes = of_type(messages["events"].as_array().unwrap(), "session.resume");
    assert_eq!(resumes.len(), 1, "{messages}");
    assert_eq!(resumes[0]["data"]["sessionWasActive"], true);
    assert_eq!(resumes[0]["data"]["continuePendingWork"], false);
    // Both clients see it.
    let seen = next_event(&mut first, "session.resume").await;
    assert_eq!(seen["data"]["sessionWasActive"], true);

    let answered = answer_tool(&mut second, &id, &request_id, "FROM_SECOND").await;
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
    let late = answer_tool(&mut first, &id, &request_id, "TOO_LATE").await;
    assert_eq!(late, json!({"success": false}));
    second.ok("session.detach", json!({"sessionId": id})).await;
    detach_audit_stop(t, &mut first, &id).await;
}
