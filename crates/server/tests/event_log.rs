//! `session.eventLog.*` over real TCP against the real server and the scripted model: pages
//! that add up to the journal exactly, filters, the tail, a long poll woken by the next
//! message, backward pages, stale cursors and bounds; the plan's changes in the log, and a
//! long poll that gets a live-only `session.title_changed`.

use crate::common;

use common::{Client, TestServer, create_params, is_idle, journal_lines, no_answers};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

fn ids(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn read(client: &mut Client, params: Value) -> Value {
    client.ok("session.eventLog.read", params).await
}

#[tokio::test]
async fn pages_filters_tail_long_poll_and_backward_reads() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "first"}))
        .await;
    client.events_until(no_answers, is_idle).await;
    let journal = journal_lines(&t.journal(&id));
    assert!(journal.len() > 4);

    // Forward pages of 2 add up to the journal, in order, nothing twice.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = json!({"sessionId": id, "max": 2});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let page = read(&mut client, params).await;
        assert_eq!(page["cursorStatus"], "ok", "{page}");
        let events = page["events"].as_array().unwrap();
        assert!(events.len() <= 2);
        seen.extend(events.iter().cloned());
        cursor = Some(page["cursor"].as_str().unwrap().to_owned());
        if page["hasMore"] == false {
            break;
        }
    }
    assert_eq!(ids(&seen), ids(&journal));
    assert_eq!(seen[0]["type"], "session.start");

    // A type filter.
    let only = read(
        &mut client,
        json!({"sessionId": id, "types": ["user.message", "assistant.message"]}),
    )
    .await;
    let types: Vec<_> = only["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["user.message", "assistant.message"]);

    // The tail: reading there gives nothing and keeps the cursor.
    let tail = client
        .ok("session.eventLog.tail", json!({"sessionId": id}))
        .await;
    let tail = tail["cursor"].as_str().unwrap().to_owned();
    assert_eq!(
        Some(&tail),
        cursor.as_ref(),
        "the last page ended at the tail"
    );
    let at_tail = read(&mut client, json!({"sessionId": id, "cursor": tail})).await;
    assert_eq!(at_tail["events"], json!([]));
    assert_eq!(at_tail["cursor"], json!(tail));
    assert_eq!(at_tail["hasMore"], false);

    // A long poll at the tail is answered by the next message's events.
    let mut watcher = t.client().await;
    let poll = watcher
        .start_request(
            "session.eventLog.read",
            json!({"sessionId": id, "cursor": tail, "waitMs": 30000}),
        )
        .await;
    // Whether the poll reads before or after the send, it answers with what follows its cursor.
    watcher.ok("ping", json!({})).await;
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "second"}))
        .await;
    let woken = watcher.response(poll).await;
    let events = woken["result"]["events"].as_array().unwrap();
    assert!(!events.is_empty(), "{woken}");
    let journal = journal_lines(&t.journal(&id));
    // The message's events begin with the system message written before every prompt.
    let first_new = journal
        .iter()
        .position(|e| e["data"]["content"] == "second")
        .unwrap()
        - 1;
    assert_eq!(journal[first_new]["type"], "system.message");
    assert_eq!(
        events[0]["id"], journal[first_new]["id"],
        "the poll starts right after its cursor"
    );
    client.events_until(no_answers, is_idle).await;

    // Backward: the newest events first, pages toward older ones, each chronological.
    let journal = journal_lines(&t.journal(&id));
    let newest = read(
        &mut client,
        json!({"sessionId": id, "direction": "backward", "max": 3}),
    )
    .await;
    assert_eq!(
        ids(newest["events"].as_array().unwrap()),
        ids(&journal[journal.len() - 3..])
    );
    assert_eq!(newest["hasMore"], true);
    let older = read(
        &mut client,
        json!({"sessionId": id, "direction": "backward", "max": 3, "cursor": newest["cursor"]}),
    )
    .await;
    assert_eq!(
        ids(older["events"].as_array().unwrap()),
        ids(&journal[journal.len() - 6..journal.len() - 3])
    );

    // A cursor that does not fit the journal: expired, and a window from the start.
    for stale in [
        "garbage",
        "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10|0",
        "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10|99999999",
    ] {
        let page = read(
            &mut client,
            json!({"sessionId": id, "cursor": stale, "max": 1}),
        )
        .await;
        assert_eq!(page["cursorStatus"], "expired", "{stale}: {page}");
        assert_eq!(page["events"][0]["type"], "session.start");
    }

    // Bounds and shapes.
    for bad in [
        json!({"sessionId": id, "max": 0}),
        json!({"sessionId": id, "max": 1001}),
        json!({"sessionId": id, "types": []}),
        json!({"sessionId": id, "types": "user.message"}),
        json!({"sessionId": id, "direction": "sideways"}),
    ] {
        let error = client.err("session.eventLog.read", bad.clone()).await;
        assert_eq!(error["code"], codes::INVALID_PARAMS, "{bad}: {error}");
    }

    // Interest handles: fresh each time, release idempotent.
    let a = client
        .ok(
            "session.eventLog.registerInterest",
            json!({"sessionId": id, "eventType": "user_input.requested"}),
        )
        .await;
    let b = client
        .ok(
            "session.eventLog.registerInterest",
            json!({"sessionId": id, "eventType": "user_input.requested"}),
        )
        .await;
    assert_ne!(a["handle"], b["handle"]);
    for _ in 0..2 {
        let released = client
            .ok(
                "session.eventLog.releaseInterest",
                json!({"sessionId": id, "handle": a["handle"]}),
            )
            .await;
        assert_eq!(released, json!({"success": true}));
    }
    let error = client
        .err(
            "session.eventLog.registerInterest",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(error["code"], codes::INVALID_PARAMS);
    t.stop().await;
}

#[tokio::test]
async fn plan_changes_are_logged_and_a_waiting_read_gets_a_live_title_change() {
    let model = ScriptedServer::start(Script::new().text("unused"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();

    // The plan written, rewritten and removed: each change is in the journal and the log.
    for content in ["# plan", "# plan, again"] {
        client
            .ok(
                "session.plan.update",
                json!({"sessionId": id, "content": content}),
            )
            .await;
    }
    client
        .ok("session.plan.delete", json!({"sessionId": id}))
        .await;
    client
        .ok("session.plan.delete", json!({"sessionId": id}))
        .await;
    let operations = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["type"] == "session.plan_changed")
            .map(|e| e["data"]["operation"].clone())
            .collect()
    };
    let expected = vec![json!("create"), json!("update"), json!("delete")];
    assert_eq!(operations(&journal_lines(&t.journal(&id))), expected);
    let page = read(&mut client, json!({"sessionId": id, "waitMs": 0})).await;
    assert_eq!(operations(page["events"].as_array().unwrap()), expected);

    // A read waiting at the tail for title changes gets the one announced meanwhile (never
    // journaled), and the cursor stays at the tail.
    let tail = client
        .ok("session.eventLog.tail", json!({"sessionId": id}))
        .await;
    let waiting = client
        .start_request(
            "session.eventLog.read",
            json!({"sessionId": id, "cursor": tail["cursor"], "waitMs": 30_000,
                   "types": ["session.title_changed"]}),
        )
        .await;
    // A name set right after the read was sent is in it, whichever handler runs first (the
    // official clients send the two without waiting in between).
    client
        .ok(
            "session.name.set",
            json!({"sessionId": id, "name": "title 0"}),
        )
        .await;
    let answer = client.response(waiting).await["result"].clone();
    let events = answer["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{answer}");
    assert_eq!(events[0]["type"], "session.title_changed", "{answer}");
    assert_eq!(events[0]["data"]["title"], "title 0", "{answer}");
    assert_eq!(answer["cursor"], tail["cursor"]);
    assert!(
        journal_lines(&t.journal(&id))
            .iter()
            .all(|l| l["type"] != "session.title_changed")
    );
    t.stop().await;
}
