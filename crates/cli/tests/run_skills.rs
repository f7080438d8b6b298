//! Skills through `turnstile run` and `turnstile resume` on a scripted model at 127.0.0.1:
//! `--skill-dir` lists the directory's skills in the live `session.skills_loaded`, the model
//! loads one with `skill` and its context reaches the next request after the tool result, a
//! skill named by `--disable-skill` is refused, and a resume sends the same history again.

use crate::common;

use std::path::Path;

use common::{Env, audit_clean, call, journal_values, tool_result};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

fn write_skill(work: &Path, name: &str, text: &str) {
    let dir = work.join("skills").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

fn messages(request: &Value) -> &[Value] {
    request["messages"].as_array().unwrap()
}

fn tool_names(request: &Value) -> Vec<&str> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

/// `messages` without the `refusal: null` a streamed request keeps on the current prompt's
/// answers only: after a resume they belong to an earlier prompt.
fn without_refusals(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .cloned()
        .map(|mut m| {
            m.as_object_mut().unwrap().remove("refusal");
            m
        })
        .collect()
}

/// The message that follows the result of call `id` in `request`.
fn after_result<'a>(request: &'a Value, id: &str) -> &'a Value {
    let all = messages(request);
    let at = all
        .iter()
        .position(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    &all[at + 1]
}

#[test]
fn a_skill_loaded_through_run_reaches_the_next_request_and_a_disabled_one_is_refused() {
    let env = Env::new();
    write_skill(
        env.work.path(),
        "demo",
        "---\nname: demo\ndescription: A demo skill\n---\n\nSay DEMO.\n",
    );
    write_skill(
        env.work.path(),
        "off",
        "---\nname: off\ndescription: Off\n---\nNever.\n",
    );
    let server = env.server(
        Script::new()
            .respond(call("s1", "skill", json!({"skill": "demo"})))
            .respond(call("s2", "skill", json!({"skill": "off"})))
            .text("DEMO")
            .text("Again."),
    );
    let skill_flags = ["--skill-dir", "skills", "--disable-skill", "off"];
    let out = env.run_ok(
        &server,
        &[&["run", "--json"][..], &skill_flags, &["Use the skill"]].concat(),
    );

    // The live stream lists both skills; the journal does not keep the ephemeral event.
    let live: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let loaded: Vec<&Value> = live
        .iter()
        .filter(|e| e["type"] == "session.skills_loaded")
        .collect();
    assert_eq!(loaded.len(), 1, "one skills_loaded at the start");
    let listed: Vec<(&str, bool, &str)> = loaded[0]["data"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["enabled"].as_bool().unwrap(),
                s["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed, [("demo", true, "custom"), ("off", false, "custom")]);
    let skill_md = env.work.path().join("skills/demo/SKILL.md");
    let canonical_md = skill_md.canonicalize().unwrap();
    assert_eq!(
        loaded[0]["data"]["skills"][0]["path"],
        canonical_md.to_str().unwrap()
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(tool_names(&requests[0]).contains(&"skill"));
    let system = messages(&requests[0])[0]["content"].as_str().unwrap();
    assert!(system.contains("<name>demo</name>"), "{system}");
    assert!(!system.contains("<name>off</name>"), "{system}");

    // The loaded skill: its result, then its context as the user message after it.
    assert_eq!(
        tool_result(&requests[1], "s1"),
        "Skill \"demo\" loaded successfully. Follow the instructions in the skill context."
    );
    let context = after_result(&requests[1], "s1");
    assert_eq!(context["role"], "user");
    let base = canonical_md.parent().unwrap();
    assert_eq!(
        context["content"],
        format!(
            "<skill-context name=\"demo\">\nBase directory for this skill: {}\n\nSay DEMO.\n\n</skill-context>",
            base.display()
        )
    );
    // The disabled one: refused, naming only the enabled skills.
    assert_eq!(
        tool_result(&requests[2], "s2"),
        "Skill \"off\" not found. Available skills: demo"
    );

    let (id, journal) = env.only_session();
    let events = journal_values(&journal);
    let of_type = |ty: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == ty).collect() };
    assert!(of_type("session.skills_loaded").is_empty());
    let invoked = of_type("skill.invoked");
    assert_eq!(invoked.len(), 1, "only the enabled skill is invoked");
    assert_eq!(invoked[0]["data"]["name"], "demo");
    assert_eq!(invoked[0]["data"]["content"], "Say DEMO.\n");
    let sources: Vec<&str> = of_type("user.message")
        .iter()
        .filter_map(|e| e["data"]["source"].as_str())
        .collect();
    assert_eq!(sources, ["skill-demo"]);
    let refused: Vec<&Value> = of_type("tool.execution_complete")
        .into_iter()
        .filter(|e| e["data"]["toolCallId"] == "s2")
        .collect();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["data"]["success"], false);
    audit_clean(&journal);

    // A resume with the same flags sends the history the live run sent, context included.
    env.run_ok(
        &server,
        &[&["resume", &id][..], &skill_flags, &["Once more"]].concat(),
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let before = without_refusals(messages(&requests[2]));
    let resumed = without_refusals(messages(&requests[3]));
    assert_eq!(
        resumed[1..before.len()],
        before[1..],
        "the history after the system message"
    );
    assert_eq!(after_result(&requests[3], "s1"), context);
    audit_clean(&journal);
}
