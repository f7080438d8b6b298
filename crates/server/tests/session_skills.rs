//! `session.skills.*` over real TCP against the real server and a scripted model: the skills of
//! `skillDirectories` listed, turned on and off, read again, and the ones the model loaded;
//! what a toggle changes reaches the next request and the journal's `system.message`, and a
//! resume takes `disabledSkills` from its own params, as in the Copilot CLI.

use std::path::Path;

use crate::common;

use common::{create, journal_lines, leave, of_type, resume, with_model};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

fn write_skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\nBody of {name}.\n"),
    )
    .unwrap();
}

/// (name, enabled) of each skill `session.skills.list` answers.
async fn states(client: &mut common::Client, id: &str) -> Vec<(String, bool)> {
    let listed = client
        .ok("session.skills.list", json!({"sessionId": id}))
        .await;
    listed["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_owned(),
                s["enabled"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The names of the tools a model request offered.
fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn system_text(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn skills_are_listed_toggled_reloaded_and_reported_invoked() {
    let script = Script::new()
        .text("first")
        .tool_call("skill", json!({"skill": "beta"}))
        .text("loaded")
        .text("none left");
    let (model, t, mut client) = with_model(script, |_| {}).await;
    let dir = t.work().join("skills");
    write_skill(&dir, "alpha", "Alpha skill.");
    write_skill(&dir, "beta", "Beta skill.");
    let open = json!({"skillDirectories": [dir], "disabledSkills": ["beta"]});
    let id = create(&mut client, &model.url(), open.clone()).await;
    let session = json!({"sessionId": id});

    let listed = client.ok("session.skills.list", session.clone()).await;
    let beta = &listed["skills"][1];
    assert_eq!(
        (&beta["name"], &beta["enabled"], &beta["source"]),
        (&json!("beta"), &json!(false), &json!("custom"))
    );
    assert!(
        beta["path"]
            .as_str()
            .unwrap()
            .ends_with("skills/beta/SKILL.md"),
        "{beta}"
    );
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "one"}),
        )
        .await;

    // Toggled: beta on, alpha off; a name no skill has is taken and kept for later.
    for (method, name) in [
        ("enable", "beta"),
        ("disable", "alpha"),
        ("disable", "gamma"),
    ] {
        let answer = client
            .ok(
                &format!("session.skills.{method}"),
                json!({"sessionId": id, "name": name}),
            )
            .await;
        assert_eq!(answer, Value::Null);
    }
    assert_eq!(
        states(&mut client, &id).await,
        [("alpha".into(), false), ("beta".into(), true)]
    );
    assert_eq!(
        client
            .ok("session.skills.getInvoked", session.clone())
            .await,
        json!({"skills": []})
    );
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "two"}),
        )
        .await;

    let requests = model.requests();
    let first = system_text(&requests[0]);
    assert!(first.contains("<name>alpha</name>") && !first.contains("<name>beta</name>"));
    let second = system_text(&requests[1]);
    assert!(
        second.contains("<name>beta</name>") && !second.contains("<name>alpha</name>"),
        "{second}"
    );
    let invoked = client
        .ok("session.skills.getInvoked", session.clone())
        .await;
    assert_eq!(invoked["skills"].as_array().unwrap().len(), 1, "{invoked}");
    let beta = &invoked["skills"][0];
    assert_eq!(
        (&beta["name"], &beta["content"]),
        (&json!("beta"), &json!("Body of beta.\n"))
    );
    // Before it: "one", "first", "two", the skill call and its result.
    assert_eq!(beta["invokedAtTurn"], 5);

    // A reload finds the new skills (gamma stays off, as toggled) and names a broken file.
    write_skill(&dir, "gamma", "Gamma skill.");
    write_skill(&dir, "delta", "Delta skill.");
    std::fs::create_dir_all(dir.join("broken")).unwrap();
    std::fs::write(dir.join("broken/SKILL.md"), "no front matter\n").unwrap();
    let reloaded = client.ok("session.skills.reload", session.clone()).await;
    assert_eq!(reloaded["warnings"], json!([]));
    let errors = reloaded["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{reloaded}");
    assert!(
        errors[0].as_str().unwrap().contains("broken/SKILL.md"),
        "{reloaded}"
    );
    assert_eq!(
        states(&mut client, &id).await,
        [
            ("alpha".into(), false),
            ("beta".into(), true),
            ("delta".into(), true),
            ("gamma".into(), false)
        ]
    );
    assert_eq!(
        client
            .ok("session.skills.ensureLoaded", session.clone())
            .await,
        json!({})
    );
    // Every skill off: the next request offers no `skill` tool.
    for name in ["beta", "delta"] {
        client
            .ok(
                "session.skills.disable",
                json!({"sessionId": id, "name": name}),
            )
            .await;
    }
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "three"}),
        )
        .await;
    let requests = model.requests();
    assert!(tool_names(&requests[2]).contains(&"skill".to_owned()));
    let last = requests.last().unwrap();
    assert!(!tool_names(last).contains(&"skill".to_owned()));
    assert!(!system_text(last).contains("<available_skills>"));

    // Each change was announced; the journal's system prompts show what the model was told.
    let announced: Vec<Value> = client
        .notifications()
        .into_iter()
        .filter(|n| n["params"]["event"]["type"] == "session.skills_loaded")
        .map(|n| n["params"]["event"]["data"]["skills"].clone())
        .collect();
    // Three toggles, the reload and two more toggles (and the session's start).
    assert!(announced.len() >= 6, "{announced:?}");
    let enabled: Vec<&Value> = announced
        .last()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["enabled"])
        .collect();
    assert_eq!(enabled, [&json!(false); 4]);
    let journal = journal_lines(&t.journal(&id));
    let systems = of_type(&journal, "system.message");
    assert_eq!(systems.len(), 3);
    let told = |i: usize| systems[i]["data"]["content"].as_str().unwrap().to_owned();
    assert!(told(0).contains("<name>alpha</name>"));
    assert!(told(1).contains("<name>beta</name>") && !told(1).contains("<name>alpha</name>"));
    assert!(!told(2).contains("<available_skills>"));
    leave(&t, client).await;

    // A resume takes disabledSkills from its params, as the runtime does.
    let mut client = t.client().await;
    resume(&mut client, &model.url(), &id, open).await;
    assert_eq!(
        states(&mut client, &id).await,
        [
            ("alpha".into(), true),
            ("beta".into(), false),
            ("delta".into(), true),
            ("gamma".into(), true)
        ]
    );
    // An unknown session is refused as for every session method.
    let unknown = json!({"sessionId": "00000000-0000-4000-8000-000000000000"});
    let error = client.err("session.skills.list", unknown).await;
    assert_eq!(error["code"], -32001, "{error}");
    leave(&t, client).await;
}
