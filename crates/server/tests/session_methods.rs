//! The smaller methods of an open session, over real TCP against the real server: the plan
//! file, the name, foreground (headless), allowed paths, the model and its effort.

use crate::common;

use common::{TestServer, create_params};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

#[tokio::test]
async fn plan_name_foreground_paths_and_model() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let extra = tempfile::tempdir().unwrap();
    let extra_dir = extra.path().to_path_buf();
    let t = TestServer::start(move |c| {
        c.additional_dirs = vec![extra_dir];
        c.default_reasoning_effort = Some("low".into());
    })
    .await;
    let mut client = t.client().await;
    let created = client
        .ok(
            "session.create",
            create_params(&model.url(), json!({"reasoningEffort": "high"})),
        )
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let plan_file = t.dir.path().join("state").join(&id).join("plan.md");

    // The plan lives in plan.md in the session's directory.
    let none = client
        .ok("session.plan.read", json!({"sessionId": id}))
        .await;
    assert_eq!(
        none,
        json!({"exists": false, "content": null, "path": plan_file.to_string_lossy()})
    );
    let updated = client
        .ok(
            "session.plan.update",
            json!({"sessionId": id, "content": "# Plan\n- a\n"}),
        )
        .await;
    assert_eq!(updated, Value::Null);
    assert_eq!(
        std::fs::read_to_string(&plan_file).unwrap(),
        "# Plan\n- a\n"
    );
    let read = client
        .ok("session.plan.read", json!({"sessionId": id}))
        .await;
    assert_eq!(read["exists"], true);
    assert_eq!(read["content"], "# Plan\n- a\n");
    client
        .ok("session.plan.delete", json!({"sessionId": id}))
        .await;
    assert!(!plan_file.exists());
    // Deleting what is not there is fine.
    client
        .ok("session.plan.delete", json!({"sessionId": id}))
        .await;

    // The name.
    assert_eq!(
        client
            .ok("session.name.get", json!({"sessionId": id}))
            .await,
        json!({"name": null})
    );
    client
        .ok(
            "session.name.set",
            json!({"sessionId": id, "name": "  My name  "}),
        )
        .await;
    assert_eq!(
        client
            .ok("session.name.get", json!({"sessionId": id}))
            .await,
        json!({"name": "My name"})
    );
    for bad in ["   ", &"x".repeat(101)] {
        let error = client
            .err("session.name.set", json!({"sessionId": id, "name": bad}))
            .await;
        assert_eq!(error["code"], codes::INVALID_PARAMS);
    }

    // Headless: no foreground session, as the Copilot CLI answers.
    assert_eq!(
        client.ok("session.getForeground", json!({})).await,
        json!({})
    );
    let set = client
        .ok("session.setForeground", json!({"sessionId": id}))
        .await;
    assert_eq!(set["success"], false);
    assert!(
        set["error"]
            .as_str()
            .unwrap()
            .contains("Not running in TUI+server mode")
    );

    // Allowed paths: the working directory first, then --add-dir.
    let paths = client
        .ok("session.permissions.paths.list", json!({"sessionId": id}))
        .await;
    let work = t.work().canonicalize().unwrap();
    assert_eq!(paths["primary"], json!(work.to_string_lossy()));
    assert_eq!(
        paths["directories"],
        json!([work.to_string_lossy(), extra.path().to_string_lossy()])
    );

    // The session's own effort wins over the server's.
    let current = client
        .ok("session.model.getCurrent", json!({"sessionId": id}))
        .await;
    assert_eq!(current["reasoningEffort"], "high");
    let other = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let current = client
        .ok(
            "session.model.getCurrent",
            json!({"sessionId": other["sessionId"]}),
        )
        .await;
    assert_eq!(current["reasoningEffort"], "low");

    // A method of the schema that is not served says why.
    let error = client
        .err("session.model.list", json!({"sessionId": id}))
        .await;
    assert_eq!(error["code"], codes::METHOD_NOT_FOUND);
    assert!(
        error["message"].as_str().unwrap().contains(
            "only model.getCurrent, model.switchTo and model.setReasoningEffort are served"
        ),
        "{error}"
    );
    t.stop().await;
}
