//! The session as state a client reads and changes, over real TCP against the real server:
//! its workspace files (under `files/`, each write journaled), `workspace.yaml` read back,
//! the name's refusals, the permission mode of the newer clients, and `sessions.fork` (a new
//! journal whose prefix is the source's, resumable, the source untouched).

use crate::common;

use common::{TestServer, create, is_idle, journal_lines, no_answers, of_type, with_model};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

#[tokio::test]
async fn workspace_files_live_under_files_and_each_write_is_journaled() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let files = t.dir.path().join("state").join(&id).join("files");

    let listed = client
        .ok("session.workspaces.listFiles", json!({"sessionId": id}))
        .await;
    assert_eq!(listed, json!({"files": []}));
    for content in ["v1", "v2"] {
        let created = client
            .ok(
                "session.workspaces.createFile",
                json!({"sessionId": id, "path": "nested/dir/../sub/a.txt", "content": content}),
            )
            .await;
        assert_eq!(created, Value::Null);
    }
    assert_eq!(
        std::fs::read_to_string(files.join("nested/sub/a.txt")).unwrap(),
        "v2"
    );
    let read = client
        .ok(
            "session.workspaces.readFile",
            json!({"sessionId": id, "path": "nested/sub/a.txt"}),
        )
        .await;
    assert_eq!(read, json!({"content": "v2"}));
    let listed = client
        .ok("session.workspaces.listFiles", json!({"sessionId": id}))
        .await;
    assert_eq!(listed, json!({"files": ["nested/sub/a.txt"]}));
    let missing = client
        .err(
            "session.workspaces.readFile",
            json!({"sessionId": id, "path": "never.txt"}),
        )
        .await;
    assert!(missing["message"].as_str().unwrap().contains("never.txt"));

    // The writes are in the journal, create then update, as the runtime records them.
    let lines = journal_lines(&t.journal(&id));
    let changed: Vec<_> = of_type(&lines, "session.workspace_file_changed")
        .into_iter()
        .map(|l| l["data"].clone())
        .collect();
    assert_eq!(
        changed,
        vec![
            json!({"path": "nested/sub/a.txt", "operation": "create"}),
            json!({"path": "nested/sub/a.txt", "operation": "update"}),
        ]
    );

    // The workspace as workspace.yaml says it.
    let workspace = client
        .ok("session.workspaces.getWorkspace", json!({"sessionId": id}))
        .await;
    assert_eq!(workspace["workspace"]["id"], id.as_str());
    assert_eq!(workspace["workspace"]["user_named"], false);
    assert_eq!(workspace["workspace"]["summary_count"], 0);
    assert_eq!(
        workspace["path"],
        t.dir
            .path()
            .join("state")
            .join(&id)
            .to_string_lossy()
            .as_ref()
    );
    t.stop().await;
}

#[tokio::test]
async fn workspace_paths_outside_files_are_refused_and_nothing_lands_there() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let session_dir = t.dir.path().join("state").join(&id);
    let secret = t.dir.path().join("secret.txt");
    std::fs::write(&secret, "outside").unwrap();
    // A link inside files/ to the outside is no way out either.
    std::fs::create_dir_all(session_dir.join("files")).unwrap();
    std::os::unix::fs::symlink(t.dir.path(), session_dir.join("files/out")).unwrap();

    for path in [
        "../escaped.txt",
        "../../escaped.txt",
        "nested/../../../escaped.txt",
        "/tmp/escaped.txt",
        "out/secret.txt",
        "out/new.txt",
    ] {
        for (method, params) in [
            (
                "session.workspaces.createFile",
                json!({"sessionId": id, "path": path, "content": "x"}),
            ),
            (
                "session.workspaces.readFile",
                json!({"sessionId": id, "path": path}),
            ),
        ] {
            let error = client.err(method, params).await;
            assert!(
                error["message"]
                    .as_str()
                    .unwrap()
                    .contains("workspace files directory"),
                "{method} {path}: {error}"
            );
        }
    }
    assert!(!session_dir.join("escaped.txt").exists());
    assert!(!t.dir.path().join("state/escaped.txt").exists());
    assert!(!t.dir.path().join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "outside");
    let lines = journal_lines(&t.journal(&id));
    assert!(of_type(&lines, "session.workspace_file_changed").is_empty());
    t.stop().await;
}

#[tokio::test]
async fn an_empty_name_is_refused_in_the_runtimes_words() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    for empty in ["", "   ", "\t\n  \r"] {
        let error = client
            .err("session.name.set", json!({"sessionId": id, "name": empty}))
            .await;
        assert_eq!(error["message"], "Session name cannot be empty");
    }
    t.stop().await;
}

#[tokio::test]
async fn permission_mode_is_approve_all_in_the_newer_spelling() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let get = json!({"sessionId": id});
    assert_eq!(
        client.ok("session.permissions.getMode", get.clone()).await,
        json!({"mode": "manual"})
    );
    let set = client
        .ok(
            "session.permissions.setMode",
            json!({"sessionId": id, "mode": "allow-all"}),
        )
        .await;
    assert_eq!(set, json!({"success": true, "mode": "allow-all"}));
    assert_eq!(
        client.ok("session.permissions.getMode", get.clone()).await,
        json!({"mode": "allow-all"})
    );
    // The older spelling sees and changes the same setting.
    client
        .ok(
            "session.permissions.setApproveAll",
            json!({"sessionId": id, "enabled": false}),
        )
        .await;
    assert_eq!(
        client.ok("session.permissions.getMode", get.clone()).await,
        json!({"mode": "manual"})
    );
    let refused = client
        .err(
            "session.permissions.setMode",
            json!({"sessionId": id, "mode": "assisted"}),
        )
        .await;
    assert!(refused["message"].as_str().unwrap().contains("assisted"));
    // The change to allow-all is journaled.
    common::eventually(|| {
        !of_type(
            &journal_lines(&t.journal(&id)),
            "session.permissions_changed",
        )
        .is_empty()
    })
    .await;
    let lines = journal_lines(&t.journal(&id));
    assert_eq!(
        of_type(&lines, "session.permissions_changed")[0]["data"],
        json!({"previousMode": "manual", "mode": "allow-all"})
    );
    t.stop().await;
}

async fn send_and_idle(client: &mut common::Client, id: &str, prompt: &str) {
    client
        .ok("session.send", json!({"sessionId": id, "prompt": prompt}))
        .await;
    client.events_until(no_answers, is_idle).await;
}

#[tokio::test]
async fn a_fork_is_a_new_journal_beginning_with_the_sources() {
    let (model, t, mut client) = with_model(
        Script::new().text("ALPHA").text("BETA").text("GAMMA"),
        |_| {},
    )
    .await;
    let id = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.name.set",
            json!({"sessionId": id, "name": "source"}),
        )
        .await;
    send_and_idle(&mut client, &id, "first").await;
    send_and_idle(&mut client, &id, "second").await;
    client
        .ok(
            "session.workspaces.createFile",
            json!({"sessionId": id, "path": "notes/a.md", "content": "kept"}),
        )
        .await;
    let source = journal_lines(&t.journal(&id));

    // The whole session.
    let fork = client.ok("sessions.fork", json!({"sessionId": id})).await;
    let fork_id = fork["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork_id, id);
    assert_eq!(fork["name"], "source (fork)");
    let forked = journal_lines(&t.journal(&fork_id));
    assert_eq!(forked.len(), source.len() + 1);
    assert_eq!(forked[0]["type"], "session.start");
    assert_eq!(forked[0]["id"], source[0]["id"]);
    assert_eq!(forked[0]["data"]["sessionId"], fork_id.as_str());
    // Every event after the start is the source's, verbatim.
    assert_eq!(forked[1..source.len()], source[1..]);
    let note = forked.last().unwrap();
    assert_eq!(note["type"], "session.info");
    assert_eq!(note["data"]["infoType"], "fork");
    assert_eq!(note["parentId"], source.last().unwrap()["id"]);
    // The workspace files go with it.
    let fork_files = t.dir.path().join("state").join(&fork_id).join("files");
    assert_eq!(
        std::fs::read_to_string(fork_files.join("notes/a.md")).unwrap(),
        "kept"
    );
    // The source notes the fork after what it had.
    common::eventually(|| journal_lines(&t.journal(&id)).len() == source.len() + 1).await;
    let noted = journal_lines(&t.journal(&id));
    assert_eq!(noted.last().unwrap()["data"]["infoType"], "fork");

    // The fork resumes and goes its own way; the source does not see it.
    client
        .ok(
            "session.resume",
            common::create_params(&model.url(), json!({"sessionId": fork_id})),
        )
        .await;
    send_and_idle(&mut client, &fork_id, "third").await;
    let source_now = journal_lines(&t.journal(&id));
    assert!(source_now.iter().all(|l| l["data"]["content"] != "third"));
    let fork_now = journal_lines(&t.journal(&fork_id));
    assert!(
        fork_now
            .iter()
            .any(|l| l["type"] == "user.message" && l["data"]["content"] == "third")
    );

    // To an event: the events before it, not it.
    let second = source
        .iter()
        .find(|l| l["type"] == "user.message" && l["data"]["content"] == "second")
        .unwrap();
    let cut = client
        .ok(
            "sessions.fork",
            json!({"sessionId": id, "toEventId": second["id"], "name": "cut"}),
        )
        .await;
    assert_eq!(cut["name"], "cut");
    let cut_lines = journal_lines(&t.journal(cut["sessionId"].as_str().unwrap()));
    assert!(cut_lines.iter().all(|l| l["id"] != second["id"]));
    assert!(
        cut_lines
            .iter()
            .any(|l| l["type"] == "user.message" && l["data"]["content"] == "first")
    );

    // An event the session does not have.
    let bogus = "5a3c7f0e-8d1b-4c2a-9e6f-0b1d2c3e4f50";
    let error = client
        .err(
            "sessions.fork",
            json!({"sessionId": id, "toEventId": bogus}),
        )
        .await;
    assert_eq!(
        error["message"],
        format!("Event {bogus} not found in session {id}")
    );
    // A session that does not exist.
    let error = client
        .err(
            "sessions.fork",
            json!({"sessionId": "6f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f"}),
        )
        .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not found or has no persisted events")
    );
    t.stop().await;
}

#[tokio::test]
async fn a_shutdown_closes_the_session_for_a_later_resume() {
    let (model, t, mut client) = with_model(Script::new().text("after"), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let answered = client
        .ok(
            "session.shutdown",
            json!({"sessionId": id, "type": "routine", "reason": "done for today"}),
        )
        .await;
    assert_eq!(answered, Value::Null);
    let seen = client
        .events_until(no_answers, |e| e["type"] == "session.shutdown")
        .await;
    assert_eq!(seen.last().unwrap()["data"]["shutdownType"], "routine");
    let lines = journal_lines(&t.journal(&id));
    assert_eq!(lines.last().unwrap()["type"], "session.shutdown");
    let refused = client
        .err("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("the client shut it down (done for today)"),
        "{refused}"
    );
    // An error shutdown would be recorded as routine: refused.
    let error = client
        .err(
            "session.shutdown",
            json!({"sessionId": id, "type": "error"}),
        )
        .await;
    assert!(error["message"].as_str().unwrap().contains("error"));
    client
        .ok(
            "session.resume",
            common::create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    send_and_idle(&mut client, &id, "again").await;
    t.stop().await;
}

#[tokio::test]
async fn the_sessions_api_closes_finds_and_deletes_what_is_on_disk() {
    let (model, t, mut client) = with_model(Script::new().text("kept"), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    send_and_idle(&mut client, &id, "hello").await;
    assert_eq!(
        client.ok("sessions.save", json!({"sessionId": id})).await,
        json!({})
    );
    // Open here: not another process's, and its lock is not given away.
    let in_use = client
        .ok("sessions.checkInUse", json!({"sessionIds": [id]}))
        .await;
    assert_eq!(in_use, json!({"inUse": []}));
    client
        .err("sessions.releaseLock", json!({"sessionId": id}))
        .await;

    // Another process holding the lock is in use.
    let other = TestServer::beside(&t, |_| {}).await;
    let mut other_client = other.client().await;
    let other_id = create(&mut other_client, &model.url(), json!({})).await;
    send_and_idle(&mut other_client, &other_id, "there").await;
    let in_use = client
        .ok("sessions.checkInUse", json!({"sessionIds": [id, other_id]}))
        .await;
    assert_eq!(in_use, json!({"inUse": [other_id]}));
    other.stop().await;

    assert_eq!(
        client.ok("sessions.close", json!({"sessionId": id})).await,
        json!({})
    );
    let refused = client
        .err("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("sessions.close")
    );
    assert_eq!(
        client
            .ok("sessions.releaseLock", json!({"sessionId": id}))
            .await,
        json!({})
    );

    let enriched = client
        .ok(
            "sessions.enrichMetadata",
            json!({"sessions": [{"sessionId": id, "isRemote": false}]}),
        )
        .await;
    assert_eq!(
        enriched,
        json!({"sessions": [{"sessionId": id, "isRemote": false, "clientName": "sdk", "isDetached": false}]})
    );
    let found = client
        .ok("sessions.findByPrefix", json!({"prefix": &id[..8]}))
        .await;
    assert_eq!(found, json!({"sessionId": id}));
    let sizes = client.ok("sessions.getSizes", json!({})).await;
    let size = std::fs::metadata(t.journal(&id)).unwrap().len();
    assert_eq!(sizes["sizes"][&id], size);

    // Pruning everything, dry: nothing goes.
    let prune = client
        .ok(
            "sessions.pruneOld",
            json!({"olderThanDays": 0, "dryRun": true, "includeNamed": true}),
        )
        .await;
    assert_eq!(prune["dryRun"], true);
    assert!(prune["candidates"].as_array().unwrap().contains(&json!(id)));
    assert_eq!(prune["deleted"], json!([]));
    assert!(t.journal(&id).is_file());

    let missing = "0b6d7c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e";
    let deleted = client
        .ok("sessions.bulkDelete", json!({"sessionIds": [id, missing]}))
        .await;
    assert!(deleted["freedBytes"][&id].as_u64().unwrap() >= size);
    assert_eq!(deleted["freedBytes"][missing], 0);
    assert!(!t.journal(&id).exists());
    let listed = client.ok("sessions.list", json!({})).await;
    assert!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["sessionId"] != id.as_str())
    );
    t.stop().await;
}
