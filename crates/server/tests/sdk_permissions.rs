//! Permission requests as the SDK clients answer them, over a real socket with a scripted model
//! and a session created with `requestPermission`: reads inside the working directory asked
//! and approved once or for the session, a shell command rejected with feedback and a file
//! creation approved, the open request listed until it is answered; URL fetches unasked in
//! unrestricted mode (`urls.setUnrestrictedMode`) and asked again when it is turned off; a
//! client that cannot ask anyone (`user-not-available`) and the workspace `configure` names.

use crate::common;

use common::{
    TestServer, answer_permission, audit_clean, create, create_and_send, journal_lines,
    next_permission_request,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn reads_inside_the_working_directory_ask_a_client_that_answers_permissions() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("view", json!({"path": "note.txt"}))
            .tool_call("view", json!({"path": "note.txt"}))
            .tool_call("grep", json!({"pattern": "hello"}))
            .text("read it twice"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    std::fs::write(t.work().join("note.txt"), "hello\n").unwrap();
    let mut client = t.client().await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
        "read the note",
    )
    .await;
    // Approved once, the file is asked for again; then approved for the session, the search
    // is not asked.
    let answers = [
        json!({"kind": "approve-once"}),
        json!({"kind": "approve-for-session", "approval": {"kind": "read"}}),
    ];
    let mut asked = Vec::new();
    while let Some(last) = next_permission_request(&mut client).await {
        asked.push(last["data"]["permissionRequest"].clone());
        let result = answers
            .get(asked.len() - 1)
            .cloned()
            .unwrap_or_else(|| json!({"kind": "reject"}));
        answer_permission(&mut client, &id, &last["data"]["requestId"], result).await;
    }
    let work = std::path::absolute(t.work()).unwrap();
    let note = work.join("note.txt").display().to_string();
    assert_eq!(asked.len(), 2, "{asked:?}");
    for request in &asked {
        assert_eq!(request["kind"], "read");
        assert_eq!(request["intention"], format!("Read file: {note}"));
        assert_eq!(request["path"], note);
    }
    let journal = journal_lines(&t.journal(&id));
    let done: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .collect();
    assert_eq!(done.len(), 3);
    assert!(
        done.iter().all(|d| d["data"]["success"] == true),
        "{done:?}"
    );
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn permission_requests_go_to_the_client_which_can_reject_or_approve() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "touch made-by-bash", "description": "touch"}),
            )
            .tool_call(
                "create",
                json!({"path": "made-by-create.txt", "file_text": "ok\n"}),
            )
            .text("one refused, one done"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
        "make files",
    )
    .await;
    while let Some(last) = next_permission_request(&mut client).await {
        let request = &last["data"]["permissionRequest"];
        // The open request is listed until it is answered, as its prompt (as the runtime
        // lists it).
        let prompt = &last["data"]["promptRequest"];
        assert_eq!(prompt["toolCallId"], request["toolCallId"]);
        let pending = client
            .ok(
                "session.permissions.pendingRequests",
                json!({"sessionId": id}),
            )
            .await;
        assert_eq!(
            pending["items"],
            json!([{"requestId": last["data"]["requestId"], "request": prompt}])
        );
        let result = if request["kind"] == "shell" {
            json!({"kind": "reject", "feedback": "no shell today"})
        } else {
            json!({"kind": "approve-once"})
        };
        answer_permission(&mut client, &id, &last["data"]["requestId"], result).await;
    }
    assert_eq!(
        client
            .ok(
                "session.permissions.pendingRequests",
                json!({"sessionId": id}),
            )
            .await,
        json!({"items": []})
    );
    assert!(!t.work().join("made-by-bash").exists());
    assert!(t.work().join("made-by-create.txt").exists());
    let journal = journal_lines(&t.journal(&id));
    let results: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "permission.completed")
        .map(|l| &l["data"]["result"])
        .collect();
    assert_eq!(
        results[0],
        &json!({"kind": "denied-interactively-by-user", "feedback": "no shell today"})
    );
    assert_eq!(results[1], &json!({"kind": "approved"}));
    let bash_done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .unwrap();
    assert_eq!(bash_done["data"]["success"], false);
    assert!(
        bash_done["data"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no shell today")
    );
    t.stop().await;
}

#[tokio::test]
async fn unrestricted_url_mode_fetches_unasked_until_it_is_turned_off() {
    // A private address no rule names: the fetch passes the permission step (or not) and is
    // then refused by web_fetch's block on local addresses, so nothing leaves the machine.
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("web_fetch", json!({"url": "http://10.255.255.1/one"}))
            .text("one")
            .tool_call("web_fetch", json!({"url": "http://10.255.255.1/two"}))
            .text("two"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
    )
    .await;
    let mode = |enabled: bool| json!({"sessionId": id, "enabled": enabled});
    assert_eq!(
        client
            .ok("session.permissions.urls.setUnrestrictedMode", mode(true))
            .await,
        json!({"success": true})
    );
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "fetch one"}),
        )
        .await;
    assert_eq!(
        next_permission_request(&mut client).await,
        None,
        "asked nobody"
    );
    client
        .ok("session.permissions.urls.setUnrestrictedMode", mode(false))
        .await;
    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "fetch two"}),
        )
        .await;
    let asked = next_permission_request(&mut client)
        .await
        .expect("asked again with the mode off");
    assert_eq!(asked["data"]["permissionRequest"]["kind"], "url");
    assert_eq!(
        asked["data"]["permissionRequest"]["url"],
        "http://10.255.255.1/two"
    );
    answer_permission(
        &mut client,
        &id,
        &asked["data"]["requestId"],
        json!({"kind": "reject"}),
    )
    .await;
    assert_eq!(next_permission_request(&mut client).await, None);
    let journal = journal_lines(&t.journal(&id));
    let requested: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "permission.requested")
        .collect();
    assert_eq!(requested.len(), 1, "the unasked fetch records no request");
    let results: Vec<&Value> = journal
        .iter()
        .filter(|l| l["type"] == "tool.execution_complete")
        .map(|l| &l["data"]["error"]["message"])
        .collect();
    assert!(
        results[0]
            .as_str()
            .is_some_and(|m| m.contains("resolves to blocked address 10.255.255.1")),
        "{results:?}"
    );
    audit_clean(&t.journal(&id));
    t.stop().await;
}

#[tokio::test]
async fn a_client_that_cannot_ask_anyone_gets_the_runtime_denial_and_the_model_goes_on() {
    // `user-not-available` is also what the official clients answer when their handler throws.
    let model = ScriptedServer::start(
        Script::new()
            .tool_call(
                "bash",
                json!({"command": "touch made-by-bash", "description": "touch"}),
            )
            .text("could not run it"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create_and_send(
        &mut client,
        &model.url(),
        json!({"requestPermission": true}),
        "make a file",
    )
    .await;
    while let Some(last) = next_permission_request(&mut client).await {
        let result = json!({"kind": "user-not-available"});
        answer_permission(&mut client, &id, &last["data"]["requestId"], result).await;
    }
    assert!(!t.work().join("made-by-bash").exists());
    let journal = journal_lines(&t.journal(&id));
    let done = journal
        .iter()
        .find(|l| l["type"] == "tool.execution_complete")
        .unwrap();
    assert_eq!(done["data"]["success"], false);
    assert_eq!(
        done["data"]["error"]["message"],
        "Permission denied and could not request permission from user"
    );
    // Not a rejection that ends the message: the model is called again and answers.
    let answer = journal
        .iter()
        .rfind(|l| l["type"] == "assistant.message")
        .unwrap();
    assert_eq!(answer["data"]["content"], "could not run it");
    assert_eq!(model.requests().len(), 2);
    t.stop().await;
}

#[tokio::test]
async fn the_configured_workspace_path_is_the_workspace_paths_are_checked_against() {
    let model = ScriptedServer::start(Script::new().text("unused"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let inside = root.join("child.txt").display().to_string();
    let within = |answer: Value| answer["allowed"].as_bool().unwrap();
    let check = json!({"sessionId": id, "path": inside});
    assert!(!within(
        client
            .ok(
                "session.permissions.paths.isPathWithinWorkspace",
                check.clone()
            )
            .await
    ));
    let configured = client
        .ok(
            "session.permissions.configure",
            json!({"sessionId": id, "paths": {"workspacePath": root.display().to_string()}}),
        )
        .await;
    assert_eq!(configured, json!({"success": true}));
    assert!(within(
        client
            .ok("session.permissions.paths.isPathWithinWorkspace", check)
            .await
    ));
    // A relative workspace is refused, naming the field.
    let refused = client
        .err(
            "session.permissions.configure",
            json!({"sessionId": id, "paths": {"workspacePath": "relative/dir"}}),
        )
        .await;
    assert_eq!(refused["code"], -32602);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("paths.workspacePath"),
        "{refused}"
    );
    t.stop().await;
}
