//! `systemMessage.customize` with `transform` sections: the server asks the client that
//! declared them (`systemMessage.transform`) and the prompt the model gets carries its texts.

use crate::common;

use common::{Client, TestServer, create_params, is_idle, journal_lines};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

fn system_message(journal: &[Value]) -> String {
    journal
        .iter()
        .find(|l| l["type"] == "system.message")
        .and_then(|l| l["data"]["content"].as_str())
        .expect("a system.message")
        .to_owned()
}

/// A session whose `systemMessage` customizes `sections`, with one prompt sent.
async fn sent_with(sections: Value) -> (TestServer, Client, String, ScriptedServer) {
    let model = ScriptedServer::start(Script::new().text("ok"))
        .await
        .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let params = create_params(
        &model.url(),
        json!({"systemMessage": {"mode": "customize", "sections": sections}}),
    );
    let id = client.ok("session.create", params).await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "hi"}))
        .await;
    (t, client, id, model)
}

#[tokio::test]
async fn the_client_rewrites_the_sections_it_transforms() {
    let (t, mut client, id, _model) = sent_with(json!({
        "tone": {"action": "transform"},
        "safety": {"action": "transform"},
    }))
    .await;
    let mut asked = Vec::new();
    client
        .events_until(
            |method, params| {
                assert_eq!(method, "systemMessage.transform");
                assert_eq!(params["sessionId"], id.as_str());
                asked.push(params["sections"].clone());
                let tone = params["sections"]["tone"]["content"].as_str().unwrap();
                // `safety` is left out: it keeps its text.
                json!({"sections": {
                    "tone": {"content": format!("TRANSFORMED TONE\n{}", tone.len())},
                }})
            },
            is_idle,
        )
        .await;
    assert_eq!(asked.len(), 1, "one transform call per prompt build");
    let sections = asked[0].as_object().unwrap();
    let mut ids: Vec<&String> = sections.keys().collect();
    ids.sort();
    assert_eq!(
        ids,
        ["safety", "tone"],
        "exactly the transformed sections are sent"
    );
    let original_tone = sections["tone"]["content"].as_str().unwrap().to_owned();
    let safety = sections["safety"]["content"].as_str().unwrap().to_owned();
    assert!(!original_tone.is_empty() && !safety.is_empty());
    let prompt = system_message(&journal_lines(&t.journal(&id)));
    assert!(prompt.contains("TRANSFORMED TONE"), "{prompt}");
    assert!(
        !prompt.contains(&original_tone),
        "the old tone text is gone"
    );
    assert!(prompt.contains(&safety), "an unanswered section is kept");
    t.stop().await;
}

#[tokio::test]
async fn a_client_error_keeps_the_sections() {
    let (t, mut client, id, _model) = sent_with(json!({"tone": {"action": "transform"}})).await;
    let mut tone = String::new();
    client
        .events_until(
            |_, params| {
                tone = params["sections"]["tone"]["content"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                json!("not an object with sections")
            },
            is_idle,
        )
        .await;
    let prompt = system_message(&journal_lines(&t.journal(&id)));
    assert!(!tone.is_empty() && prompt.contains(&tone), "{prompt}");
    t.stop().await;
}
