//! Sessions as the SDK clients list and close them, over a real socket with a scripted model:
//! `session.list` (newest first, filtered, from the session index, a damaged journal skipped),
//! `getLastId`, `getMetadata`, `delete`, an idle session closed after its timeout, and
//! `session.updated` for a change recorded while idle.

use crate::common;

use std::time::Duration;

use common::{
    TestServer, create, create_and_send, create_params, eventually, is_idle, journal_lines,
    no_answers,
};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

#[tokio::test]
async fn list_last_id_metadata_and_delete() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
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
    let mut client = t.client().await;
    let mut ids = Vec::new();
    for prompt in ["first", "second"] {
        let id = create_and_send(&mut client, &model.url(), json!({}), prompt).await;
        client.events_until(no_answers, is_idle).await;
        ids.push(id);
    }
    let listed = client.ok("session.list", json!({})).await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    let index = turnstile_journal::index::index_path(t.root().dir());
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
    let mut client = t.client().await;
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
async fn a_change_recorded_while_idle_announces_session_updated() {
    let model = ScriptedServer::start(Script::new().text("unused"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let updated = |client: &common::Client| {
        client
            .notifications()
            .iter()
            .filter(|m| {
                m["method"] == "session.lifecycle"
                    && m["params"]["type"] == "session.updated"
                    && m["params"]["sessionId"] == id.as_str()
            })
            .count()
    };
    client
        .ok("session.mode.set", json!({"sessionId": id, "mode": "plan"}))
        .await;
    client
        .events_until(no_answers, |e| e["type"] == "session.mode_changed")
        .await;
    // The notice follows the event on the same connection: a later answer comes after it.
    client
        .ok("session.mode.get", json!({"sessionId": id}))
        .await;
    assert_eq!(updated(&client), 1, "{:?}", client.notifications());
    t.stop().await;
}
