//! The session-state methods a client calls besides the workspace files and the name, over a
//! real socket with a scripted model: the todo tables the `sql` tool wrote read back
//! (`session.plan.readSqlTodosWithDependencies`), the schedules a session has none of, the
//! CLI's compaction checkpoints listed and read from `checkpoints/`, a large paste kept under
//! `files/`, the compaction controls with nothing in flight, and `session.suspend` stopping a
//! message that waits on a permission answer while the session stays open.

use crate::common;

use common::{
    TestServer, audit_clean, create, create_and_send, is_idle, journal_lines, next_event,
    next_permission_request, no_answers, of_type, with_model,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn todos_the_sql_tool_wrote_are_read_back_with_their_dependencies() {
    let query = "INSERT INTO todos (id, title, status) VALUES ('alpha', 'First todo', 'pending'); \
                 INSERT INTO todos (id, title, status) VALUES ('beta', 'Second todo', 'done'); \
                 INSERT INTO todo_deps (todo_id, depends_on) VALUES ('beta', 'alpha');";
    let (model, t, mut client) = with_model(
        Script::new()
            .tool_call("sql", json!({"description": "Add todos", "query": query}))
            .text("added"),
        |_| {},
    )
    .await;
    let id = create(&mut client, &model.url(), json!({})).await;
    // No sql call yet: no database, no todos, and none is made by reading.
    let before = client
        .ok(
            "session.plan.readSqlTodosWithDependencies",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(before, json!({"rows": [], "dependencies": []}));
    assert!(
        !t.dir
            .path()
            .join("state")
            .join(&id)
            .join("session.db")
            .exists()
    );

    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "add the todos"}),
        )
        .await;
    next_event(&mut client, "session.todos_changed").await;
    client.events_until(no_answers, is_idle).await;

    let read = client
        .ok(
            "session.plan.readSqlTodosWithDependencies",
            json!({"sessionId": id}),
        )
        .await;
    let rows = read["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["alpha", "beta"]);
    assert_eq!(rows[0]["title"], "First todo");
    assert_eq!(rows[1]["status"], "done");
    assert!(rows[0]["createdAt"].is_string());
    // A column the row leaves empty is left out, as the runtime answers.
    assert!(rows[0].get("description").is_none(), "{read}");
    assert_eq!(
        read["dependencies"],
        json!([{"todoId": "beta", "dependsOn": "alpha"}])
    );
    let rows_only = client
        .ok("session.plan.readSqlTodos", json!({"sessionId": id}))
        .await;
    assert_eq!(rows_only, json!({"rows": read["rows"]}));
    t.stop().await;
}

#[tokio::test]
async fn a_session_has_no_schedules_to_list_or_stop() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let listed = client
        .ok("session.schedule.list", json!({"sessionId": id}))
        .await;
    assert_eq!(listed, json!({"entries": []}));
    let stopped = client
        .ok(
            "session.schedule.stop",
            json!({"sessionId": id, "id": 9_007_199_254_740_991_u64}),
        )
        .await;
    assert_eq!(stopped, json!({}));
    // Not an unsigned integer: refused, as the runtime refuses it.
    client
        .err("session.schedule.stop", json!({"sessionId": id, "id": -1}))
        .await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    client
        .err("session.schedule.list", json!({"sessionId": unknown}))
        .await;
    t.stop().await;
}

#[tokio::test]
async fn checkpoints_are_listed_from_the_index_and_read_by_number() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let listed = client
        .ok(
            "session.workspaces.listCheckpoints",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(listed, json!({"checkpoints": []}));
    let missing = client
        .ok(
            "session.workspaces.readCheckpoint",
            json!({"sessionId": id, "number": 4_294_967_294_u64}),
        )
        .await;
    assert_eq!(missing, json!({"content": null}));

    // A session directory the CLI wrote: its index and one checkpoint file.
    let checkpoints = t.dir.path().join("state").join(&id).join("checkpoints");
    std::fs::create_dir_all(&checkpoints).unwrap();
    std::fs::write(
        checkpoints.join("index.md"),
        "# Checkpoint History\n\n| # | Title | File |\n|---|-------|------|\n| 1 | Parser set up | 001-parser-set-up.md |\n",
    )
    .unwrap();
    std::fs::write(
        checkpoints.join("001-parser-set-up.md"),
        "<overview>x</overview>",
    )
    .unwrap();
    let listed = client
        .ok(
            "session.workspaces.listCheckpoints",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(
        listed,
        json!({"checkpoints": [{"number": 1, "title": "Parser set up", "filename": "001-parser-set-up.md"}]})
    );
    let read = client
        .ok(
            "session.workspaces.readCheckpoint",
            json!({"sessionId": id, "number": 1}),
        )
        .await;
    assert_eq!(read, json!({"content": "<overview>x</overview>"}));
    client
        .err(
            "session.workspaces.readCheckpoint",
            json!({"sessionId": id, "number": -1}),
        )
        .await;
    t.stop().await;
}

#[tokio::test]
async fn a_large_paste_is_kept_under_files_and_read_back() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let content = "Large paste payload 🚀\n".repeat(512);
    let first = client
        .ok(
            "session.workspaces.saveLargePaste",
            json!({"sessionId": id, "content": content}),
        )
        .await;
    let second = client
        .ok(
            "session.workspaces.saveLargePaste",
            json!({"sessionId": id, "content": "small"}),
        )
        .await;
    let saved = &first["saved"];
    let filename = saved["filename"].as_str().unwrap();
    assert!(
        filename.starts_with("paste-") && filename.ends_with(".txt"),
        "{filename}"
    );
    assert_ne!(second["saved"]["filename"], saved["filename"]);
    assert_eq!(saved["sizeBytes"], content.len());
    let files = t.dir.path().join("state").join(&id).join("files");
    assert_eq!(
        std::path::Path::new(saved["filePath"].as_str().unwrap()),
        files.join(filename)
    );
    let read = client
        .ok(
            "session.workspaces.readFile",
            json!({"sessionId": id, "path": filename}),
        )
        .await;
    assert_eq!(read["content"], content.as_str());
    t.stop().await;
}

#[tokio::test]
async fn compaction_controls_stop_nothing_and_a_fresh_session_hands_off_nothing() {
    let (model, t, mut client) = with_model(Script::new().text("hello"), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let cancelled = client
        .ok(
            "session.history.cancelBackgroundCompaction",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(cancelled, json!({"cancelled": false}));
    let aborted = client
        .ok(
            "session.history.abortManualCompaction",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(aborted, json!({"aborted": false}));
    client
        .ok(
            "session.log",
            json!({"sessionId": id, "message": "handoff summary log coverage"}),
        )
        .await;
    let summary = client
        .ok(
            "session.history.summarizeForHandoff",
            json!({"sessionId": id}),
        )
        .await;
    assert_eq!(summary, json!({"summary": ""}));
    // With a conversation there is something to hand off, which this engine does not write.
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    client.events_until(no_answers, is_idle).await;
    client
        .err(
            "session.history.summarizeForHandoff",
            json!({"sessionId": id}),
        )
        .await;
    t.stop().await;
}

#[tokio::test]
async fn suspend_stops_a_message_waiting_on_a_permission_and_the_session_goes_on() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "touch ran.txt", "description": "touch"}),
            )
            .text("after the suspend"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    // An idle session answers at once.
    let idle = client.ok("session.suspend", json!({"sessionId": id})).await;
    assert_eq!(idle, Value::Null);

    let id2 = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
        "touch the file",
    )
    .await;
    let asked = next_permission_request(&mut client).await.expect("asked");
    assert_eq!(asked["data"]["permissionRequest"]["kind"], "shell");
    let suspended = client
        .ok("session.suspend", json!({"sessionId": id2}))
        .await;
    assert_eq!(suspended, Value::Null);
    assert!(!t.work().join("ran.txt").exists());
    let journal = journal_lines(&t.journal(&id2));
    let completed = of_type(&journal, "permission.completed");
    assert_eq!(completed.len(), 1, "{journal:?}");
    assert_eq!(completed[0]["data"]["result"]["kind"], "cancelled");

    // Still open: the next message runs.
    client
        .ok(
            "session.send",
            json!({"sessionId": id2, "prompt": "carry on"}),
        )
        .await;
    // The aborted message's own idle comes first.
    let events = client
        .events_until(no_answers, |e| is_idle(e) && e["data"]["aborted"] != true)
        .await;
    assert!(
        events.iter().any(
            |e| e["type"] == "assistant.message" && e["data"]["content"] == "after the suspend"
        ),
        "{events:?}"
    );
    client.ok("session.detach", json!({"sessionId": id2})).await;
    audit_clean(&t.journal(&id2));
    t.stop().await;
}

#[tokio::test]
async fn the_workspace_diff_is_gits_view_of_the_working_directory() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let work = t.work();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&work)
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    let id = create(&mut client, &model.url(), json!({})).await;
    // Not a repository: no changes.
    let none = client
        .ok(
            "session.workspaces.diff",
            json!({"sessionId": id, "mode": "unstaged"}),
        )
        .await;
    assert_eq!(
        none,
        json!({"requestedMode": "unstaged", "mode": "unstaged", "changes": [], "isFallback": false})
    );

    git(&["init", "-q", "-b", "trunk"]);
    std::fs::write(work.join("t.txt"), "one\ntwo\n").unwrap();
    std::fs::write(work.join("g.txt"), "gone\n").unwrap();
    git(&["add", "t.txt", "g.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    std::fs::write(work.join("t.txt"), "one\nTWO\n").unwrap();
    std::fs::remove_file(work.join("g.txt")).unwrap();
    std::fs::write(work.join("s.txt"), "staged\n").unwrap();
    git(&["add", "s.txt"]);
    std::fs::write(work.join("u.txt"), "new\n").unwrap();

    let diff = client
        .ok(
            "session.workspaces.diff",
            json!({"sessionId": id, "mode": "unstaged"}),
        )
        .await;
    let changes = diff["changes"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = changes
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap(),
                c["changeType"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("g.txt", "deleted"),
            ("s.txt", "added"),
            ("t.txt", "modified"),
            ("u.txt", "added")
        ]
    );
    assert!(
        changes[2]["diff"]
            .as_str()
            .unwrap()
            .ends_with("@@ -1,2 +1,2 @@\n one\n-two\n+TWO"),
        "{diff}"
    );
    assert_eq!(
        changes[3]["diff"],
        "diff --git a/u.txt b/u.txt\nnew file mode 100644\n--- /dev/null\n+++ b/u.txt\n@@ -0,0 +1,1 @@\n+new"
    );
    // No main or master: the branch diff falls back, naming the branch it looked for.
    let branch = client
        .ok(
            "session.workspaces.diff",
            json!({"sessionId": id, "mode": "branch"}),
        )
        .await;
    assert_eq!(branch["mode"], "unstaged");
    assert_eq!(branch["baseBranch"], "main");
    assert_eq!(branch["isFallback"], true);
    assert_eq!(branch["changes"], diff["changes"]);
    // With a main branch, the changes since it forked off.
    git(&["branch", "main"]);
    let branch = client
        .ok(
            "session.workspaces.diff",
            json!({"sessionId": id, "mode": "branch"}),
        )
        .await;
    assert_eq!(branch["mode"], "branch");
    assert_eq!(branch["isFallback"], false);
    assert_eq!(branch["changes"], diff["changes"]);
    let session = client
        .ok(
            "session.workspaces.diff",
            json!({"sessionId": id, "mode": "session"}),
        )
        .await;
    assert_eq!(
        session["unavailableReason"],
        "file-change-tracking-disabled"
    );
    assert_eq!(session["isFallback"], true);
    t.stop().await;
}
