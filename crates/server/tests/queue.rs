//! The session's queue over real TCP against the real server, as the Copilot CLI serves it
//! to SDK clients: a host that registered interest in `command.queued` is handed each queued
//! command in turn and holds the queue until it answers; what waits behind (commands and
//! messages) is listed by `session.queue.pendingItems` and dropped by `removeMostRecent`,
//! `clear`, a `stopProcessingQueue` answer or an abort. Without a host a queued command is
//! dropped when taken.

use crate::common;

use common::{Client, TestServer, create, is_idle, journal_lines, no_answers, types};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

async fn pending(client: &mut Client, id: &str) -> Value {
    client
        .ok("session.queue.pendingItems", json!({"sessionId": id}))
        .await
}

async fn enqueue(client: &mut Client, id: &str, command: &str) {
    let queued = client
        .ok(
            "session.commands.enqueue",
            json!({"sessionId": id, "command": command}),
        )
        .await;
    assert_eq!(queued, json!({"queued": true}), "{command}");
}

async fn respond(client: &mut Client, id: &str, request_id: &Value, result: Value) -> Value {
    client
        .ok(
            "session.commands.respondToQueuedCommand",
            json!({"sessionId": id, "requestId": request_id, "result": result}),
        )
        .await
}

/// Reads events up to the next `command.queued`; returns them all.
async fn until_queued(client: &mut Client) -> Vec<Value> {
    client
        .events_until(no_answers, |e| e["type"] == "command.queued")
        .await
}

async fn register_host(client: &mut Client, id: &str) {
    client
        .ok(
            "session.eventLog.registerInterest",
            json!({"sessionId": id, "eventType": "command.queued"}),
        )
        .await;
}

fn row(id: &str, kind: &str, text: &str) -> Value {
    json!({"id": id, "kind": kind, "displayText": text, "agentMode": "interactive"})
}

#[tokio::test]
async fn a_host_takes_queued_commands_in_turn_and_the_queue_lists_what_waits() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let at = json!({"sessionId": id});

    // An empty queue: nothing listed, nothing to remove.
    let empty = json!({"items": [], "steeringMessages": []});
    assert_eq!(pending(&mut client, &id).await, empty);
    assert_eq!(
        client
            .ok("session.queue.removeMostRecent", at.clone())
            .await,
        json!({"removed": false})
    );
    assert_eq!(
        client.ok("session.queue.clear", at.clone()).await,
        Value::Null
    );

    register_host(&mut client, &id).await;
    enqueue(&mut client, &id, "/first a b").await;
    let seen = until_queued(&mut client).await;
    // The queue grows, the command leaves it, and is handed over.
    assert_eq!(
        types(&seen[seen.len() - 3..]),
        [
            "pending_messages.modified",
            "pending_messages.modified",
            "command.queued"
        ]
    );
    let first = seen.last().unwrap().clone();
    assert_eq!(first["ephemeral"], true);
    assert_eq!(first["data"]["command"], "/first a b");
    let first_id = first["data"]["requestId"].clone();
    assert_eq!(pending(&mut client, &id).await, empty, "held, not waiting");

    // What comes meanwhile waits behind it, messages too; any text is a command.
    enqueue(&mut client, &id, "/second").await;
    enqueue(&mut client, &id, "plain text").await;
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "queued prompt"}),
        )
        .await;
    enqueue(&mut client, &id, "/third").await;
    assert_eq!(
        pending(&mut client, &id).await["items"],
        json!([
            row("1", "command", "/second"),
            row("2", "command", "plain text"),
            row("3", "message", "queued prompt"),
            row("4", "command", "/third"),
        ])
    );
    assert_eq!(
        client
            .ok("session.queue.removeMostRecent", at.clone())
            .await,
        json!({"removed": true})
    );
    assert_eq!(
        pending(&mut client, &id).await["items"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Only the held command's id is answered.
    let unknown = respond(&mut client, &id, &json!("nope"), json!({"handled": true})).await;
    assert_eq!(unknown, json!({"success": false}));
    let answered = respond(
        &mut client,
        &id,
        &first_id,
        json!({"handled": true, "stopProcessingQueue": false}),
    )
    .await;
    assert_eq!(answered, json!({"success": true}));
    let seen = until_queued(&mut client).await;
    let completed = seen
        .iter()
        .find(|e| e["type"] == "command.completed")
        .expect("the first command completed");
    assert_eq!(completed["data"], json!({"requestId": first_id}));
    let second = seen.last().unwrap().clone();
    assert_eq!(second["data"]["command"], "/second");
    assert_eq!(
        respond(&mut client, &id, &first_id, json!({"handled": true})).await,
        json!({"success": false}),
        "answered once"
    );

    // Not handled: the queue goes on.
    respond(
        &mut client,
        &id,
        &second["data"]["requestId"],
        json!({"handled": false}),
    )
    .await;
    let third = until_queued(&mut client).await.last().unwrap().clone();
    assert_eq!(third["data"]["command"], "plain text");
    assert_eq!(
        pending(&mut client, &id).await["items"],
        json!([row("3", "message", "queued prompt")])
    );

    // Stop: the message behind it is dropped, never run, and the session goes idle.
    respond(
        &mut client,
        &id,
        &third["data"]["requestId"],
        json!({"handled": true, "stopProcessingQueue": true}),
    )
    .await;
    let seen = client.events_until(no_answers, is_idle).await;
    assert!(types(&seen).contains(&"assistant.idle".to_owned()));
    assert_eq!(pending(&mut client, &id).await, empty);
    let journal = journal_lines(&t.journal(&id));
    assert!(
        !journal.iter().any(|e| e["type"] == "user.message"),
        "the dropped message never ran"
    );
    t.stop().await;
}

#[tokio::test]
async fn without_a_host_a_queued_command_is_dropped_and_the_session_goes_idle() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"commands": [{"name": "deploy", "description": "d"}]}),
    )
    .await;

    // A client's command and a built-in alike: neither runs.
    enqueue(&mut client, &id, "/deploy now").await;
    let seen = client.events_until(no_answers, is_idle).await;
    let kinds = types(&seen);
    assert!(
        !kinds.iter().any(|k| k.starts_with("command.")),
        "{kinds:?}"
    );
    assert_eq!(
        kinds[kinds.len() - 4..],
        [
            "pending_messages.modified",
            "pending_messages.modified",
            "assistant.idle",
            "session.idle"
        ]
    );
    assert_eq!(seen.last().unwrap()["data"], json!({}));
    enqueue(&mut client, &id, "/model other-model").await;
    client.events_until(no_answers, is_idle).await;
    let current = client
        .ok("session.model.getCurrent", json!({"sessionId": id}))
        .await;
    assert_eq!(current["modelId"], "scripted-model");
    assert_eq!(
        pending(&mut client, &id).await,
        json!({"items": [], "steeringMessages": []})
    );

    // The registration is what makes a host: released, the queue drops commands again.
    let interest = client
        .ok(
            "session.eventLog.registerInterest",
            json!({"sessionId": id, "eventType": "command.queued"}),
        )
        .await;
    client
        .ok(
            "session.eventLog.releaseInterest",
            json!({"sessionId": id, "handle": interest["handle"]}),
        )
        .await;
    enqueue(&mut client, &id, "/again").await;
    let seen = client.events_until(no_answers, is_idle).await;
    assert!(!types(&seen).contains(&"command.queued".to_owned()));
    t.stop().await;
}

#[tokio::test]
async fn a_message_waits_behind_a_held_command_and_clear_leaves_the_held_one() {
    let model = ScriptedServer::start(Script::new().text("answered"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    register_host(&mut client, &id).await;

    enqueue(&mut client, &id, "/held").await;
    let held = until_queued(&mut client).await.last().unwrap().clone();
    enqueue(&mut client, &id, "/dropped").await;
    assert_eq!(
        client
            .ok("session.queue.clear", json!({"sessionId": id}))
            .await,
        Value::Null
    );
    assert_eq!(
        client
            .ok("session.queue.removeMostRecent", json!({"sessionId": id}))
            .await,
        json!({"removed": false}),
        "the held command is not removable"
    );
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "after it"}),
        )
        .await;
    assert_eq!(
        pending(&mut client, &id).await["items"],
        json!([row("2", "message", "after it")])
    );
    assert!(
        !journal_lines(&t.journal(&id))
            .iter()
            .any(|e| e["type"] == "user.message"),
        "the message waits for the host"
    );

    // Answered: the message runs, and its idle ends the queue.
    respond(
        &mut client,
        &id,
        &held["data"]["requestId"],
        json!({"handled": true}),
    )
    .await;
    let seen = client.events_until(no_answers, is_idle).await;
    let kinds = types(&seen);
    let completed = kinds.iter().position(|k| k == "command.completed").unwrap();
    let message = kinds.iter().position(|k| k == "user.message").unwrap();
    assert!(completed < message, "{kinds:?}");
    assert!(
        !kinds.contains(&"command.queued".to_owned()),
        "the cleared command never reached the host"
    );
    assert_eq!(
        pending(&mut client, &id).await,
        json!({"items": [], "steeringMessages": []})
    );
    t.stop().await;
}

#[tokio::test]
async fn an_abort_ends_the_held_command_and_drops_the_queue() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    register_host(&mut client, &id).await;

    enqueue(&mut client, &id, "/held").await;
    let held = until_queued(&mut client).await.last().unwrap().clone();
    enqueue(&mut client, &id, "/behind").await;
    client.ok("session.abort", json!({"sessionId": id})).await;
    let seen = client.events_until(no_answers, is_idle).await;
    let kinds = types(&seen);
    assert!(kinds.contains(&"abort".to_owned()), "{kinds:?}");
    assert!(
        !kinds.contains(&"command.completed".to_owned()),
        "{kinds:?}"
    );
    assert_eq!(
        pending(&mut client, &id).await,
        json!({"items": [], "steeringMessages": []})
    );
    assert_eq!(
        respond(
            &mut client,
            &id,
            &held["data"]["requestId"],
            json!({"handled": true})
        )
        .await,
        json!({"success": false}),
        "the aborted command is no longer held"
    );
    let journal = journal_lines(&t.journal(&id));
    let abort = journal
        .iter()
        .find(|e| e["type"] == "abort")
        .expect("recorded");
    assert_eq!(abort["data"], json!({"reason": "user_initiated"}));

    // The queue takes commands again.
    enqueue(&mut client, &id, "/next").await;
    let next = until_queued(&mut client).await.last().unwrap().clone();
    assert_eq!(next["data"]["command"], "/next");
    respond(
        &mut client,
        &id,
        &next["data"]["requestId"],
        json!({"handled": true}),
    )
    .await;
    client.events_until(no_answers, is_idle).await;
    t.stop().await;
}
