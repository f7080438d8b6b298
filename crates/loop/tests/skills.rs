//! Skills through a real session on the scripted model: `session.skills_loaded` at the start,
//! a bad skill file as a warning, the `skill` tool's events in the runtime's order, and the
//! skill's context in the request after the tool result, the same after a resume.

use crate::common;

use std::sync::Arc;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_loop::{Outcome, SendOptions, SessionHandle, SessionParts};
use turnstile_scripted_model::{Script, ScriptedResponse};
use turnstile_tools::ToolRegistry;
use turnstile_tools::skills::SkillSet;

fn skill_parts(fx: &Fixture, dir: &std::path::Path) -> SessionParts {
    let (skills, warnings) = SkillSet::load(&[dir.to_path_buf()], &["off".into()]);
    let skills = Arc::new(skills);
    let mut parts = fx.base_parts(|c| {
        c.skills = Arc::clone(&skills);
        c.skill_warnings = warnings;
    });
    let mut tools = ToolRegistry::builtin(false);
    tools.offer_skills(skills);
    parts.tools = Arc::new(tools);
    parts
}

fn messages(request: &Value) -> Vec<Value> {
    request["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_loaded_skill_reaches_the_model_after_its_result_and_survives_a_resume() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(
            "skill",
            json!({"skill": "demo"}),
        ))
        .respond(ScriptedResponse::text("DEMO"))
        .respond(ScriptedResponse::text("Again."));
    let fx = Fixture::start(script, |work| {
        let write = |name: &str, text: &str| {
            std::fs::create_dir_all(work.join("skills").join(name)).unwrap();
            std::fs::write(work.join("skills").join(name).join("SKILL.md"), text).unwrap();
        };
        write(
            "demo",
            "---\nname: demo\ndescription: A demo skill\n---\n\nSay DEMO.\n",
        );
        write("off", "---\nname: off\ndescription: Off\n---\nNever.\n");
        write("bad", "No front matter.\n");
    })
    .await;
    let dir = fx.work.path().join("skills");
    let (session, mut rx) =
        SessionHandle::create_subscribed(&fx.root, None, skill_parts(&fx, &dir)).unwrap();
    let outcome = session
        .send_and_wait("Use the skill", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let mut live = Vec::new();
    while let Ok(event) = rx.try_recv() {
        live.push(event);
    }
    let loaded = live
        .iter()
        .find(|e| e.event_type.as_str() == "session.skills_loaded")
        .expect("skills_loaded");
    let skills: Value = serde_json::from_str(loaded.data.get()).unwrap();
    let names: Vec<(&str, bool)> = skills["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["enabled"].as_bool().unwrap()))
        .collect();
    assert_eq!(names, vec![("demo", true), ("off", false)]);
    let session_id = session.id();
    session.shutdown().await.unwrap();

    let journal = fx.journal(session_id);
    let types: Vec<&str> = journal.iter().map(|e| e.event_type.as_str()).collect();
    let warning = journal
        .iter()
        .find(|e| e.event_type.as_str() == "session.warning")
        .expect("a warning for the bad file");
    assert!(
        warning.data.get().contains("bad/SKILL.md"),
        "{}",
        warning.data.get()
    );
    let complete = types
        .iter()
        .position(|t| *t == "tool.execution_complete")
        .unwrap();
    assert_eq!(
        types[complete..complete + 4],
        [
            "tool.execution_complete",
            "skill.invoked",
            "user.message",
            "assistant.turn_end"
        ]
    );
    let context: Value = serde_json::from_str(journal[complete + 2].data.get()).unwrap();
    assert_eq!(context["source"], "skill-demo");

    let requests = fx.server.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<available_skills>\n<skill>\n  <name>demo</name>\n  <description>A demo skill</description>"),
        "{system}"
    );
    assert!(
        !system.contains("<name>off</name>"),
        "a disabled skill is not listed"
    );
    let after = messages(&requests[1]);
    let n = after.len();
    assert_eq!(after[n - 2]["role"], "tool");
    assert_eq!(
        after[n - 2]["content"],
        "Skill \"demo\" loaded successfully. Follow the instructions in the skill context."
    );
    assert_eq!(after[n - 1]["role"], "user");
    assert_eq!(
        after[n - 1]["content"],
        format!(
            "<skill-context name=\"demo\">\nBase directory for this skill: {}\n\nSay DEMO.\n\n</skill-context>",
            dir.join("demo").display()
        )
    );

    // The fold puts the context where the live loop had it.
    let (resumed, _) = SessionHandle::resume(&fx.root, session_id, skill_parts(&fx, &dir)).unwrap();
    resumed
        .send_and_wait("Once more", SendOptions::default())
        .await
        .unwrap();
    resumed.shutdown().await.unwrap();
    let requests = fx.server.requests();
    assert_eq!(requests.len(), 3);
    let resumed_messages = messages(&requests[2]);
    assert_eq!(
        resumed_messages[1..n],
        after[1..n],
        "the history before the answer"
    );
    fx.audit_clean(session_id);
}

#[tokio::test]
async fn without_an_enabled_skill_the_tool_is_not_offered() {
    let fx = Fixture::start(
        Script::new().respond(ScriptedResponse::text("Hi.")),
        |work| {
            std::fs::create_dir_all(work.join("skills/off")).unwrap();
            std::fs::write(
                work.join("skills/off/SKILL.md"),
                "---\nname: off\ndescription: Off\n---\nx\n",
            )
            .unwrap();
        },
    )
    .await;
    let parts = skill_parts(&fx, &fx.work.path().join("skills"));
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    session
        .send_and_wait("Say hi", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    let tools: Vec<String> = fx.server.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(!tools.contains(&"skill".to_owned()), "{tools:?}");
    assert!(tools.contains(&"web_fetch".to_owned()));
}
