//! A `session.resume` naming another model than the session's: the session goes on with the
//! model its journal names last, as the Copilot CLI does, so the journal's model calls and
//! its events name one model.

use crate::common;

use common::{create, journal_lines, of_type, resume, with_model};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

#[tokio::test]
async fn a_resume_naming_another_model_goes_on_with_the_journals_model() {
    let (model, t, mut client) = with_model(Script::new().text("one").text("two"), |_| {}).await;
    // Started on scripted-model, switched to model-b: the journal names model-b last.
    let id = create(&mut client, &model.url(), json!({})).await;
    client
        .ok(
            "session.model.switchTo",
            json!({"sessionId": id, "modelId": "model-b"}),
        )
        .await;
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "first"}),
        )
        .await;
    client.ok("session.detach", json!({"sessionId": id})).await;
    drop(client);

    // Another client resumes naming a third model.
    let mut next = t.client().await;
    resume(&mut next, &model.url(), &id, json!({"model": "model-c"})).await;
    let current = next
        .ok("session.model.getCurrent", json!({"sessionId": id}))
        .await;
    assert_eq!(current["modelId"], "model-b", "{current}");
    let second = next
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "second"}),
        )
        .await;
    assert_eq!(second["response"]["data"]["content"], "two");
    next.ok("session.detach", json!({"sessionId": id})).await;

    let chats: Vec<Value> = model
        .recorded()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(chats, [json!("model-b"), json!("model-b")]);

    let lines = journal_lines(&t.journal(&id));
    let resumes = of_type(&lines, "session.resume");
    assert_eq!(resumes.len(), 1, "{lines:?}");
    assert_eq!(resumes[0]["data"]["selectedModel"], "model-b");
    // The one change is the client's switch; the resume records none.
    let changes = of_type(&lines, "session.model_change");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["data"]["newModel"], "model-b");
    // Nothing the journal records (the shutdown's model metrics included) names the model
    // the resume asked for.
    assert!(
        lines.iter().all(|l| !l.to_string().contains("model-c")),
        "the named model is recorded nowhere: {lines:?}"
    );
    t.stop().await;
}
