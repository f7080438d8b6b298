//! A session moved to another directory, over real TCP against the real server and the
//! scripted model: `session.metadata.setWorkingDirectory` and `session.options.update`'s
//! `workingDirectory` (the commands run there, the journal's two `session.context_changed`,
//! the fold's context, the refusals in the runtime's words), the options a client changes on
//! an open session (`enableStreaming`, `askUserDisabled`), and `session.gitHubAuth.
//! setCredentials` (a user's identity installed, a secret-bearing credential refused without
//! a trace of it).

use crate::common;

use common::{
    TestServer, create, journal_lines, leave, of_type, send_until_idle, types, with_model,
};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

/// The tool names of the model's request `n`.
fn offered(model: &ScriptedServer, n: usize) -> Vec<String> {
    model.requests()[n]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name").to_owned())
        .collect()
}

#[tokio::test]
async fn a_moved_session_runs_its_commands_in_the_new_directory_and_journals_the_move() {
    let script = Script::new()
        .tool_call(
            "bash",
            json!({"command": "pwd > where.txt", "description": "where am I"}),
        )
        .text("done");
    let (model, t, mut client) = with_model(script, TestServer::allow_all).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let second = t.dir.path().join("second");
    std::fs::create_dir(&second).unwrap();
    let second = second.canonicalize().unwrap();
    let second_text = second.to_string_lossy().into_owned();

    // Refused as the runtime refuses them, and nothing moves.
    for (asked, expected) in [
        (
            "relative".to_owned(),
            "Directory path must be absolute: relative".to_owned(),
        ),
        (
            format!("{second_text}/missing"),
            format!("Directory does not exist or cannot be accessed: {second_text}/missing"),
        ),
    ] {
        let error = client
            .err(
                "session.metadata.setWorkingDirectory",
                json!({"sessionId": id, "workingDirectory": asked}),
            )
            .await;
        assert_eq!(error["message"], expected.as_str(), "{error}");
    }

    let moved = client
        .ok(
            "session.metadata.setWorkingDirectory",
            json!({"sessionId": id, "workingDirectory": second_text}),
        )
        .await;
    assert_eq!(moved, json!({"workingDirectory": second_text}));
    let snapshot = client
        .ok("session.metadata.snapshot", json!({"sessionId": id}))
        .await;
    assert_eq!(snapshot["workingDirectory"], second_text.as_str());
    assert_eq!(snapshot["workspace"]["cwd"], second_text.as_str());

    // The model's command runs in the new directory, inside the sandbox built for it.
    send_until_idle(&mut client, &id, "where are you?").await;
    let written = std::fs::read_to_string(second.join("where.txt")).expect("written there");
    assert_eq!(written.trim(), second_text);
    assert!(!t.work().join("where.txt").exists());

    leave(&t, client).await;
    let lines = journal_lines(&t.journal(&id));
    let changes: Vec<&Value> = of_type(&lines, "session.context_changed")
        .into_iter()
        .map(|l| &l["data"])
        .collect();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(
        changes[0],
        &json!({"cwd": second_text, "pendingGitContext": true})
    );
    assert_eq!(changes[1]["cwd"], second_text.as_str());
    assert!(changes[1].get("pendingGitContext").is_none());
    // The move comes before the prompt that ran there.
    let moved_at = lines
        .iter()
        .position(|l| l["type"] == "session.context_changed")
        .unwrap();
    let prompt_at = lines
        .iter()
        .position(|l| l["type"] == "user.message")
        .unwrap();
    assert!(moved_at < prompt_at);
    // A replay knows where the session works now.
    let folded = turnstile_replay::fold_file(&t.journal(&id)).unwrap();
    let context = folded.state.session.context.expect("a context");
    assert_eq!(context.cwd, second_text);
}

#[tokio::test]
async fn options_update_moves_the_session_and_changes_streaming_and_ask_user() {
    let (model, t, mut client) =
        with_model(Script::new().text("one").text("two"), TestServer::allow_all).await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"requestUserInput": true, "streaming": true}),
    )
    .await;
    let first = send_until_idle(&mut client, &id, "first").await;
    assert!(
        types(&first).contains(&"assistant.message_delta".to_owned()),
        "streamed at first"
    );
    assert!(offered(&model, 0).contains(&"ask_user".to_owned()));

    let other = t.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let other = other.canonicalize().unwrap();
    // A directory that cannot be used refuses the whole patch: nothing changes.
    let refused = client
        .err(
            "session.options.update",
            json!({"sessionId": id, "workingDirectory": "/no/such/dir", "enableStreaming": false}),
        )
        .await;
    assert_eq!(
        refused["code"],
        turnstile_server::rpc::codes::INVALID_PARAMS
    );
    assert_eq!(
        refused["message"],
        "workingDirectory: Directory does not exist or cannot be accessed: /no/such/dir"
    );
    let updated = client
        .ok(
            "session.options.update",
            json!({
                "sessionId": id, "clientName": "probe", "lspClientName": "lsp",
                "integrationId": "x", "featureFlags": {"f": true},
                "workingDirectory": other, "enableStreaming": false, "askUserDisabled": true,
            }),
        )
        .await;
    assert_eq!(updated, json!({"success": true}));
    let snapshot = client
        .ok("session.metadata.snapshot", json!({"sessionId": id}))
        .await;
    assert_eq!(
        snapshot["workingDirectory"],
        other.to_string_lossy().as_ref()
    );

    let second = send_until_idle(&mut client, &id, "second").await;
    assert!(
        !types(&second).contains(&"assistant.message_delta".to_owned()),
        "no deltas once streaming is off"
    );
    assert!(!offered(&model, 1).contains(&"ask_user".to_owned()));
    assert_ne!(model.requests()[1]["stream"], json!(true));
    assert_eq!(model.requests()[0]["stream"], json!(true));
    leave(&t, client).await;
}

#[tokio::test]
async fn set_credentials_installs_a_users_identity_and_refuses_a_secret_without_echoing_it() {
    let (model, t, mut client) = with_model(Script::new(), |_| {}).await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let session = json!({"sessionId": id});
    // Nothing given: nothing changes.
    assert_eq!(
        client
            .ok("session.gitHubAuth.setCredentials", session.clone())
            .await,
        json!({"success": true})
    );
    let secret = "ghp_never_anywhere_0123456789";
    let refused = client
        .err(
            "session.gitHubAuth.setCredentials",
            json!({"sessionId": id, "credentials": {"type": "token", "host": "https://github.com", "token": secret}}),
        )
        .await;
    assert!(!refused.to_string().contains(secret), "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("\"token\""));

    let set = client
        .ok(
            "session.gitHubAuth.setCredentials",
            json!({"sessionId": id, "credentials": {
                "type": "user", "host": "https://github.com", "login": "octo-user",
                "copilotUser": {"login": "octo-user", "copilot_plan": "individual_pro",
                                "endpoints": {"api": "https://api.test"}},
            }}),
        )
        .await;
    assert_eq!(set, json!({"success": true, "copilotUserResolved": true}));
    let status = client
        .ok("session.gitHubAuth.getStatus", session.clone())
        .await;
    assert_eq!(
        status,
        json!({"isAuthenticated": true, "authType": "user", "host": "https://github.com",
               "login": "octo-user", "statusMessage": "octo-user", "copilotPlan": "individual_pro"})
    );
    leave(&t, client).await;
    let journal = std::fs::read_to_string(t.journal(&id)).unwrap();
    assert!(!journal.contains(secret));
}
