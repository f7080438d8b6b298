//! Custom agents and slash commands over real TCP against the real server: the client's
//! agents listed and selected (the selection in the journal, found again by a resume), a
//! second client joining with commands (`commands.changed` to the first), the listing's
//! filters, a client command run in the client that registered it, the built-ins, and the
//! queue.

use crate::common;

use common::{Client, TestServer, create, create_params, journal_lines};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

fn agents() -> Value {
    json!([
        {"name": "test-agent", "displayName": "Test Agent", "description": "A test agent",
         "prompt": "You are a test agent."},
        {"name": "another-agent", "description": "Another", "prompt": "p", "tools": ["view"]},
    ])
}

fn selections(t: &TestServer, id: &str) -> Vec<Value> {
    journal_lines(&t.journal(id))
        .into_iter()
        .filter(|e| e["type"] == "subagent.selected" || e["type"] == "subagent.deselected")
        .collect()
}

#[tokio::test]
async fn agents_are_listed_selected_and_the_selection_survives_a_resume() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({"customAgents": agents()})).await;
    let at = |id: &str| json!({"sessionId": id});

    let listed = client.ok("session.agent.list", at(&id)).await;
    assert_eq!(
        listed,
        json!({"agents": [
            {"name": "test-agent", "displayName": "Test Agent", "description": "A test agent", "id": "test-agent"},
            {"name": "another-agent", "displayName": "another-agent", "description": "Another", "id": "another-agent", "tools": ["view"]},
        ]})
    );
    assert_eq!(client.ok("session.agent.reload", at(&id)).await, listed);
    assert_eq!(
        client.ok("session.agent.getCurrent", at(&id)).await,
        json!({"agent": null})
    );
    let error = client
        .err(
            "session.agent.select",
            json!({"sessionId": id, "name": "nope"}),
        )
        .await;
    assert_eq!(error["message"], "Custom agent 'nope' not found");
    let selected = client
        .ok(
            "session.agent.select",
            json!({"sessionId": id, "name": "another-agent"}),
        )
        .await;
    assert_eq!(selected["agent"]["name"], "another-agent");
    assert_eq!(
        client.ok("session.agent.getCurrent", at(&id)).await["agent"]["name"],
        "another-agent"
    );
    let recorded = selections(&t, &id);
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0]["data"],
        json!({"agentName": "another-agent", "agentDisplayName": "another-agent", "tools": ["view"]})
    );

    // A resume with the same agents finds the selection in the journal.
    client.ok("session.detach", at(&id)).await;
    client
        .ok(
            "session.resume",
            create_params(
                &model.url(),
                json!({"sessionId": id, "customAgents": agents()}),
            ),
        )
        .await;
    assert_eq!(
        client.ok("session.agent.getCurrent", at(&id)).await["agent"]["name"],
        "another-agent"
    );
    assert_eq!(
        client.ok("session.agent.deselect", at(&id)).await,
        json!({})
    );
    assert_eq!(
        client.ok("session.agent.getCurrent", at(&id)).await,
        json!({"agent": null})
    );
    let recorded = selections(&t, &id);
    assert_eq!(recorded.last().unwrap()["type"], "subagent.deselected");
    assert_eq!(recorded.last().unwrap()["data"], json!({}));

    // Without agents the list is empty.
    let plain = create(&mut client, &model.url(), json!({})).await;
    assert_eq!(
        client.ok("session.agent.list", at(&plain)).await,
        json!({"agents": []})
    );
    t.stop().await;
}

/// Reads `client`'s messages until a `session.event` of `event_type`; its data.
async fn event_of(client: &mut Client, event_type: &str) -> Value {
    let events = client
        .events_until(common::no_answers, |e| e["type"] == event_type)
        .await;
    events.last().unwrap()["data"].clone()
}

#[tokio::test]
async fn commands_join_list_run_in_their_client_and_queue() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut first = t.client().await;
    let id = create(&mut first, &model.url(), json!({})).await;

    // A second client joins with a command: the first is told.
    let mut second = t.client().await;
    second
        .ok(
            "session.resume",
            create_params(
                &model.url(),
                json!({"sessionId": id, "commands": [{"name": "deploy", "description": "Deploy the app"}]}),
            ),
        )
        .await;
    let changed = event_of(&mut first, "commands.changed").await;
    assert_eq!(
        changed,
        json!({"commands": [{"name": "deploy", "description": "Deploy the app"}]})
    );

    // The listing's filters.
    let only = |builtins: bool, clients: bool| json!({"sessionId": id, "includeBuiltins": builtins, "includeClientCommands": clients, "includeSkills": false});
    let clients = first.ok("session.commands.list", only(false, true)).await;
    assert_eq!(
        clients["commands"],
        json!([{"name": "deploy", "description": "Deploy the app", "kind": "client", "allowDuringAgentExecution": false}])
    );
    let builtins = first.ok("session.commands.list", only(true, false)).await;
    let names: Vec<&str> = builtins["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compact", "model"]);
    assert!(
        builtins["commands"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["kind"] == "builtin")
    );

    // The first client runs the second's command: it runs in the second.
    let running = first
        .start_request(
            "session.commands.execute",
            json!({"sessionId": id, "commandName": "deploy", "args": "production"}),
        )
        .await;
    let execute = event_of(&mut second, "command.execute").await;
    assert_eq!(execute["command"], "/deploy production");
    assert_eq!(execute["commandName"], "deploy");
    assert_eq!(execute["args"], "production");
    let answered = second
        .ok(
            "session.commands.handlePendingCommand",
            json!({"sessionId": id, "requestId": execute["requestId"], "error": "no target"}),
        )
        .await;
    assert_eq!(answered, json!({"success": true}));
    let response = first.response(running).await;
    assert_eq!(response["result"], json!({"error": "no target"}));
    let completed = event_of(&mut first, "command.completed").await;
    assert_eq!(completed["requestId"], execute["requestId"]);

    // Nobody registered it: the runtime's words.
    let none = first
        .ok(
            "session.commands.execute",
            json!({"sessionId": id, "commandName": "help", "args": ""}),
        )
        .await;
    assert_eq!(none, json!({"error": "No client found for command: help"}));

    // The built-ins run here.
    let model_text = first
        .ok(
            "session.commands.invoke",
            json!({"sessionId": id, "name": "/model"}),
        )
        .await;
    assert_eq!(
        model_text,
        json!({"kind": "text", "text": "Current model: scripted-model"})
    );
    let unknown = first
        .err(
            "session.commands.invoke",
            json!({"sessionId": id, "name": "nope"}),
        )
        .await;
    assert_eq!(unknown["message"], "Unknown slash command: /nope");

    // The queue takes any command line; with no host registered for `command.queued`, it
    // is dropped when taken (queue.rs covers the host).
    let queued = first
        .ok(
            "session.commands.enqueue",
            json!({"sessionId": id, "command": "/model"}),
        )
        .await;
    assert_eq!(queued, json!({"queued": true}));
    let plain = first
        .ok(
            "session.commands.enqueue",
            json!({"sessionId": id, "command": "hello"}),
        )
        .await;
    assert_eq!(plain, json!({"queued": true}));
    let respond = first
        .ok(
            "session.commands.respondToQueuedCommand",
            json!({"sessionId": id, "requestId": "missing", "result": {"handled": false}}),
        )
        .await;
    assert_eq!(respond, json!({"success": false}));

    // The second client leaves: its command goes, and the first is told.
    second.ok("session.detach", json!({"sessionId": id})).await;
    let changed = event_of(&mut first, "commands.changed").await;
    assert_eq!(changed, json!({"commands": []}));
    t.stop().await;
}
