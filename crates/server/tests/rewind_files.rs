//! File-change tracking and `conversation-and-files` rewinds over a real socket with a
//! scripted model: the store laid out as the runtime's (`rewind-file-snapshots/`), the
//! points' and preview's figures, a created file removed and an edited one given its
//! preimage back, and what a rewind refuses to touch, checked on disk: a file changed since,
//! a directory or file swapped for a link, a path outside the working directory (written by
//! a tool, or planted in the index), and a preimage over the bound.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;

use common::{TestServer, create, leave, resume, send_until_idle, with_model};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

fn tracked() -> Value {
    json!({"enableFileChangeTracking": true})
}

fn store(t: &TestServer, id: &str) -> PathBuf {
    t.dir
        .path()
        .join("state")
        .join(id)
        .join("rewind-file-snapshots")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("read")).expect("json")
}

fn points(v: &Value) -> Vec<Value> {
    v["points"].as_array().expect("points").clone()
}

async fn list(client: &mut common::Client, id: &str) -> Value {
    client
        .ok("session.history.listRewindPoints", json!({"sessionId": id}))
        .await
}

async fn rewind_files(client: &mut common::Client, id: &str, event: &Value) -> Value {
    client
        .ok(
            "session.history.rewind",
            json!({"sessionId": id, "eventId": event, "mode": "conversation-and-files"}),
        )
        .await
}

fn path_of(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[tokio::test]
async fn a_files_rewind_removes_created_files_and_restores_edited_ones() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("create", json!({"path": "a.txt", "file_text": "one"}))
            .text("D1")
            .tool_call(
                "edit",
                json!({"path": "m.txt", "old_str": "two", "new_str": "TWO"}),
            )
            .tool_call(
                "edit",
                json!({"path": "a.txt", "old_str": "one", "new_str": "uno"}),
            )
            .text("D2")
            .tool_call("create", json!({"path": "c.txt", "file_text": "c"}))
            .text("D3"),
        TestServer::allow_all,
    )
    .await;
    let work = t.work();
    fs::write(work.join("m.txt"), "one\ntwo\nthree\n").unwrap();
    let id = create(&mut client, &model.url(), tracked()).await;
    for prompt in ["T1", "T2", "T3"] {
        send_until_idle(&mut client, &id, prompt).await;
    }
    let dir = store(&t, &id);
    assert_eq!(
        read_json(&dir.join("tracking.json")),
        json!({"schema": 1, "tracking": true})
    );
    let index = read_json(&dir.join("index.json"));
    let snapshots = index["snapshots"].as_array().expect("snapshots");
    assert_eq!(snapshots.len(), 3);
    let t2 = &snapshots[1];
    assert_eq!(t2["userMessage"], "T2");
    assert_eq!(t2["fileCount"], 2);
    let m = t2["files"]
        .as_object()
        .unwrap()
        .values()
        .find(|f| f["path"] == path_of(&work, "m.txt"))
        .expect("m.txt captured");
    assert_eq!(m["preimage"]["kind"], "content");
    let backup = m["preimage"]["backupFile"].as_str().expect("a backup");
    assert_eq!(
        fs::read_to_string(dir.join("backups").join(backup)).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(m["postimage"]["kind"], "content");
    assert_eq!(m["postimage"]["encodedPath"]["encoding"], "unix-bytes");
    assert_eq!(
        (m["linesAdded"].clone(), m["linesRemoved"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(
        t2["backupFiles"].as_array().unwrap().len(),
        2,
        "m.txt's and a.txt's preimages"
    );

    let listed = list(&mut client, &id).await;
    assert_eq!(listed["fileChangeTrackingEnabled"], true);
    let pts = points(&listed);
    let figures: Vec<(Value, Value, Value, Value)> = pts
        .iter()
        .map(|p| {
            (
                p["fileCount"].clone(),
                p["turnChangedFiles"].clone(),
                p["linesAdded"].clone(),
                p["linesRemoved"].clone(),
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (json!(3), json!(true), json!(1), json!(0)),
            (json!(3), json!(true), json!(2), json!(2)),
            (json!(1), json!(true), json!(1), json!(0)),
        ]
    );
    assert!(pts.iter().all(|p| p["canRestoreFiles"] == true));

    let preview = client
        .ok(
            "session.history.previewRewind",
            json!({"sessionId": id, "eventId": pts[0]["eventId"]}),
        )
        .await;
    assert_eq!(preview["available"], true);
    assert_eq!(preview["fileCount"], 3);
    assert_eq!(
        preview["files"][0],
        json!({"path": path_of(&work, "a.txt"), "changeType": "created", "linesAdded": 2, "linesRemoved": 1})
    );
    assert_eq!(preview["files"][2]["changeType"], "modified");

    // Someone else changes c.txt after the session wrote it: it is left alone.
    fs::write(work.join("c.txt"), "user changed\n").unwrap();
    let rewound = rewind_files(&mut client, &id, &pts[1]["eventId"]).await;
    assert_eq!(rewound["outcome"], "success");
    assert!(rewound["eventsRemoved"].as_u64().unwrap() > 0);
    assert_eq!(
        rewound["restoredFiles"],
        json!([path_of(&work, "m.txt"), path_of(&work, "a.txt")])
    );
    assert_eq!(
        rewound["skippedFiles"],
        json!([{"path": path_of(&work, "c.txt"), "reason": "user-modified"}])
    );
    assert_eq!(fs::read_to_string(work.join("a.txt")).unwrap(), "one");
    assert_eq!(
        fs::read_to_string(work.join("m.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        fs::read_to_string(work.join("c.txt")).unwrap(),
        "user changed\n"
    );
    // The discarded turns' snapshots and their backups are gone.
    let after = list(&mut client, &id).await;
    assert_eq!(points(&after).len(), 1);
    assert_eq!(points(&after)[0]["fileCount"], 1);
    assert_eq!(
        read_json(&dir.join("index.json"))["snapshots"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(fs::read_dir(dir.join("backups")).unwrap().count(), 0);

    // Back to the first turn: the created file goes.
    let rewound = rewind_files(&mut client, &id, &pts[0]["eventId"]).await;
    assert_eq!(rewound["outcome"], "success");
    assert_eq!(rewound["restoredFiles"], json!([path_of(&work, "a.txt")]));
    assert!(!work.join("a.txt").exists());
    t.stop().await;
}

#[tokio::test]
async fn a_rewind_writes_nothing_through_a_link_swapped_in_since() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("create", json!({"path": "sub/f.txt", "file_text": "x"}))
            .tool_call("create", json!({"path": "g.txt", "file_text": "y"}))
            .text("done"),
        TestServer::allow_all,
    )
    .await;
    let work = t.work();
    fs::create_dir(work.join("sub")).unwrap();
    let outside = t.dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let id = create(&mut client, &model.url(), tracked()).await;
    send_until_idle(&mut client, &id, "make them").await;
    assert_eq!(fs::read_to_string(work.join("sub/f.txt")).unwrap(), "x");
    // The directory becomes a link to a place outside holding the same content, and the
    // file a link to an outside file with the same content.
    fs::rename(work.join("sub"), t.dir.path().join("moved")).unwrap();
    fs::write(outside.join("f.txt"), "x").unwrap();
    std::os::unix::fs::symlink(&outside, work.join("sub")).unwrap();
    fs::remove_file(work.join("g.txt")).unwrap();
    fs::write(outside.join("g.txt"), "y").unwrap();
    std::os::unix::fs::symlink(outside.join("g.txt"), work.join("g.txt")).unwrap();

    let first = points(&list(&mut client, &id).await)[0]["eventId"].clone();
    let rewound = rewind_files(&mut client, &id, &first).await;
    assert_eq!(rewound["outcome"], "success");
    assert_eq!(rewound["restoredFiles"], json!([]));
    let reasons: Vec<&Value> = rewound["skippedFiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["reason"])
        .collect();
    assert_eq!(reasons, [&json!("user-modified"), &json!("user-modified")]);
    assert_eq!(fs::read_to_string(outside.join("f.txt")).unwrap(), "x");
    assert_eq!(fs::read_to_string(outside.join("g.txt")).unwrap(), "y");
    assert!(
        fs::symlink_metadata(work.join("g.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    t.stop().await;
}

#[tokio::test]
async fn a_path_outside_the_working_directory_is_neither_captured_nor_restored() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("create", json!({"path": "a.txt", "file_text": "x"}))
            .tool_call("create", json!({"path": "../escape.txt", "file_text": "e"}))
            .text("done")
            .text("again"),
        |c| {
            TestServer::allow_all(c);
            c.allow_outside_cwd = true;
        },
    )
    .await;
    let work = t.work();
    let id = create(&mut client, &model.url(), tracked()).await;
    send_until_idle(&mut client, &id, "write").await;
    let escape = t.dir.path().join("escape.txt");
    assert_eq!(fs::read_to_string(&escape).unwrap(), "e");
    let listed = list(&mut client, &id).await;
    assert_eq!(points(&listed)[0]["fileCount"], 1, "only a.txt is captured");

    // The index is rewritten to name a file outside with a.txt's content; the session is
    // reopened (without asking for tracking: its marker keeps it on) and reads it.
    let victim = t.dir.path().join("victim.txt");
    fs::write(&victim, "x").unwrap();
    leave(&t, client).await;
    let index = store(&t, &id).join("index.json");
    let planted = fs::read_to_string(&index)
        .unwrap()
        .replace(&path_of(&work, "a.txt"), &victim.display().to_string());
    fs::write(&index, planted).unwrap();
    let mut client = t.client().await;
    resume(&mut client, &model.url(), &id, json!({})).await;
    let listed = list(&mut client, &id).await;
    assert_eq!(listed["fileChangeTrackingEnabled"], true);
    let first = points(&listed)[0]["eventId"].clone();
    let rewound = rewind_files(&mut client, &id, &first).await;
    assert_eq!(rewound["outcome"], "success");
    assert_eq!(rewound["restoredFiles"], json!([]));
    assert_eq!(
        rewound["skippedFiles"],
        json!([{"path": victim.display().to_string(), "reason": "user-modified"}])
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "x");
    assert_eq!(fs::read_to_string(&escape).unwrap(), "e");
    assert_eq!(fs::read_to_string(work.join("a.txt")).unwrap(), "x");
    t.stop().await;
}

#[tokio::test]
async fn shell_writes_are_tracked_and_a_preimage_over_the_bound_is_a_skipped_capture() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "echo hi > b.txt; echo x >> big.txt; rm gone.txt", "description": "write"}),
            )
            .text("done"),
        |c| {
            TestServer::allow_all(c);
            c.sandbox = false;
        },
    )
    .await;
    let work = t.work();
    let big = vec![b'.'; (turnstile_loop::rewind_files::MAX_FILE_BYTES + 1) as usize];
    fs::write(work.join("big.txt"), &big).unwrap();
    fs::write(work.join("gone.txt"), "gone\n").unwrap();
    let id = create(&mut client, &model.url(), tracked()).await;
    send_until_idle(&mut client, &id, "run it").await;
    assert!(work.join("b.txt").exists());
    assert!(!work.join("gone.txt").exists());
    let first = points(&list(&mut client, &id).await)[0]["eventId"].clone();
    let preview = client
        .ok(
            "session.history.previewRewind",
            json!({"sessionId": id, "eventId": first}),
        )
        .await;
    let kinds: Vec<(Value, Value)> = preview["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].clone(), f["changeType"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (json!(path_of(&work, "b.txt")), json!("created")),
            (json!(path_of(&work, "big.txt")), json!("modified")),
            (json!(path_of(&work, "gone.txt")), json!("deleted")),
        ]
    );
    let rewound = rewind_files(&mut client, &id, &first).await;
    assert_eq!(
        rewound["restoredFiles"],
        json!([path_of(&work, "b.txt"), path_of(&work, "gone.txt")])
    );
    assert_eq!(
        rewound["skippedFiles"],
        json!([{"path": path_of(&work, "big.txt"), "reason": "skipped-capture"}])
    );
    assert!(!work.join("b.txt").exists());
    assert_eq!(fs::read_to_string(work.join("gone.txt")).unwrap(), "gone\n");
    assert_eq!(
        fs::metadata(work.join("big.txt")).unwrap().len(),
        big.len() as u64 + 2
    );
    t.stop().await;
}

#[tokio::test]
async fn a_session_resumed_with_tracking_after_untracked_turns_stays_untracked() {
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("create", json!({"path": "a.txt", "file_text": "x"}))
            .text("done"),
        TestServer::allow_all,
    )
    .await;
    let id = create(&mut client, &model.url(), json!({})).await;
    send_until_idle(&mut client, &id, "write").await;
    leave(&t, client).await;
    let mut client = t.client().await;
    resume(&mut client, &model.url(), &id, tracked()).await;
    let listed = list(&mut client, &id).await;
    assert_eq!(listed["fileChangeTrackingEnabled"], false);
    assert!(!store(&t, &id).exists());
    let first = points(&listed)[0]["eventId"].clone();
    let rewound = rewind_files(&mut client, &id, &first).await;
    assert_eq!(rewound["outcome"], "file-change-tracking-disabled");
    assert!(t.work().join("a.txt").exists());
    t.stop().await;
}
