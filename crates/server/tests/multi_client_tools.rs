//! Tools of several clients of one session: a second client that joins an idle session adds
//! its tools to the first's (a client joining without tools takes none away), a call is
//! answered by the client that implements it while both see the request, and a client that
//! leaves takes its tools with it. Real server, real TCP clients, a scripted model whose
//! recorded requests show what was offered.

use crate::common;

use common::{
    Client, TestServer, answer_permission, answer_tool, create, eventually, is_idle, journal_lines,
    next_event, next_permission_request, no_answers, resume,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("The {name} tool"),
        "parameters": {"type": "object", "properties": {"input": {"type": "string"}}},
    })
}

/// The client tools offered in the model's request `n` (0-based), by name, in order.
fn offered(model: &ScriptedServer, n: usize, names: &[&str]) -> Vec<String> {
    let requests = model.requests();
    let request = requests.get(n).expect("the model request");
    request["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|name| names.contains(name))
        .map(str::to_owned)
        .collect()
}

/// Approves, from `client`, the next permission request of session `id`.
async fn approve(client: &mut Client, id: &str) {
    let asked = next_permission_request(client)
        .await
        .expect("a permission request");
    answer_permission(
        client,
        id,
        &asked["data"]["requestId"],
        json!({"kind": "approved"}),
    )
    .await;
}

#[tokio::test]
async fn tools_of_two_clients_are_offered_together_and_leave_with_their_client() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("stable_tool", json!({"input": "one"}))
            .text("stable done")
            .tool_call("ephemeral_tool", json!({"input": "two"}))
            .text("ephemeral done")
            .tool_call("stable_tool", json!({"input": "still_here"}))
            .respond(ScriptedResponse::text("only stable now")),
    )
    .await
    .expect("the scripted model starts");
    let t = TestServer::start(|_| {}).await;
    let names = ["stable_tool", "ephemeral_tool"];

    let mut first = t.client().await;
    let id = create(
        &mut first,
        &model.url(),
        json!({"tools": [tool("stable_tool")], "requestPermission": true}),
    )
    .await;
    // The second client joins the idle session with a tool of its own.
    let mut second = t.client().await;
    resume(
        &mut second,
        &model.url(),
        &id,
        json!({"tools": [tool("ephemeral_tool")], "requestPermission": true}),
    )
    .await;

    // Both tools are offered, the first client's first. The first client's tool, called
    // from a prompt of the first, is answered by the first; the second sees the request too.
    first
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "use stable"}),
        )
        .await;
    approve(&mut first, &id).await;
    let seen = next_event(&mut first, "external_tool.requested").await;
    assert_eq!(seen["data"]["toolName"], "stable_tool");
    answer_tool(&mut first, &id, &seen["data"]["requestId"], "STABLE_one").await;
    first.events_until(no_answers, is_idle).await;
    assert_eq!(
        offered(&model, 0, &names),
        ["stable_tool", "ephemeral_tool"]
    );
    let in_second = next_event(&mut second, "external_tool.requested").await;
    assert_eq!(in_second["data"]["requestId"], seen["data"]["requestId"]);

    // The second client's tool, called from the first client's prompt, is answered by the
    // second.
    first
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "use ephemeral"}),
        )
        .await;
    approve(&mut first, &id).await;
    let seen = next_event(&mut second, "external_tool.requested").await;
    assert_eq!(seen["data"]["toolName"], "ephemeral_tool");
    answer_tool(
        &mut second,
        &id,
        &seen["data"]["requestId"],
        "EPHEMERAL_two",
    )
    .await;
    first.events_until(no_answers, is_idle).await;
    let requests = model.requests();
    let answered = requests[3]["messages"].to_string();
    assert!(answered.contains("EPHEMERAL_two"), "{answered}");

    // The second client, which reopened the session, leaves: its tool is not offered any
    // more, the first's is, and the first client is asked for its permission and runs it.
    drop(second);
    let server = t.server.clone();
    let session: uuid::Uuid = id.parse().expect("a session id");
    eventually(|| server.session_connections(session) == 1).await;
    first
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "what is left?"}),
        )
        .await;
    approve(&mut first, &id).await;
    let seen = next_event(&mut first, "external_tool.requested").await;
    assert_eq!(seen["data"]["toolName"], "stable_tool");
    answer_tool(
        &mut first,
        &id,
        &seen["data"]["requestId"],
        "STABLE_still_here",
    )
    .await;
    first.events_until(no_answers, is_idle).await;
    assert_eq!(offered(&model, 4, &names), ["stable_tool"]);
    assert!(
        model.requests()[5]["messages"]
            .to_string()
            .contains("STABLE_still_here")
    );
    // The prompt tells the model, in the runtime's words, and the journal records it.
    let requests = model.requests();
    let prompt = requests[4]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .expect("the prompt")
        .to_owned();
    let notice = "<tools_changed_notice>\nTools no longer available: ephemeral_tool\n\n\
                  Important: Do not attempt to call tools that are no longer available unless \
                  you've been notified that they're available again.\n</tools_changed_notice>\n\n\
                  what is left?";
    assert!(prompt.contains(notice), "{prompt}");
    let journal = journal_lines(&t.journal(&id));
    let last_prompt = journal
        .iter()
        .rev()
        .find(|e| e["type"] == "user.message")
        .expect("the user.message");
    assert!(
        last_prompt["data"]["transformedContent"]
            .as_str()
            .is_some_and(|c| c.contains(notice)),
        "{last_prompt}"
    );
    // The prompts before the client left carried none.
    assert!(!requests[2].to_string().contains("tools_changed_notice"));
    t.stop().await;
}

#[tokio::test]
async fn a_client_joining_without_tools_leaves_the_first_clients_tools_offered() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("magic_number", json!({"input": "hello"}))
            .text("MAGIC_hello_42"),
    )
    .await
    .expect("the scripted model starts");
    let t = TestServer::start(TestServer::allow_all).await;
    let mut first = t.client().await;
    let id = create(
        &mut first,
        &model.url(),
        json!({"tools": [tool("magic_number")]}),
    )
    .await;
    let mut second = t.client().await;
    resume(&mut second, &model.url(), &id, json!({})).await;

    first
        .ok("session.send", json!({"sessionId": id, "prompt": "magic?"}))
        .await;
    // Both clients see the request; the first answers it.
    let in_second = next_event(&mut second, "external_tool.requested").await;
    let in_first = next_event(&mut first, "external_tool.requested").await;
    assert_eq!(
        in_first["data"]["requestId"],
        in_second["data"]["requestId"]
    );
    answer_tool(
        &mut first,
        &id,
        &in_first["data"]["requestId"],
        "MAGIC_hello_42",
    )
    .await;
    let completed = next_event(&mut second, "external_tool.completed").await;
    assert_eq!(
        completed["data"]["requestId"],
        in_first["data"]["requestId"]
    );
    first.events_until(no_answers, is_idle).await;
    assert_eq!(offered(&model, 0, &["magic_number"]), ["magic_number"]);
    let requests = model.requests();
    assert!(
        requests[1]["messages"]
            .to_string()
            .contains("MAGIC_hello_42")
    );
    t.stop().await;
}
