//! Hooks that shape a message beyond the prompt and the tools: `userPromptTransformed`
//! replaces the text the model reads (with its date and reminders), and `agentStop` keeps the
//! agent going with a queued prompt when it blocks, at most `MAX_STOP_BLOCKS` times. Command
//! hooks in the working directory stand in for any hook runner (a client's are the same calls).

use crate::common;

use common::{Fixture, data};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

/// Writes `.github/hooks/hooks.json` with `hooks` (type -> a python3 program reading the input).
fn write_hooks(fx: &Fixture, hooks: &[(&str, &str)]) {
    let dir = fx.work.path().join(".github/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let mut table = serde_json::Map::new();
    for (hook_type, program) in hooks {
        let bash = format!("python3 -c '{program}'");
        table.insert(
            (*hook_type).to_owned(),
            json!([{"type": "command", "bash": bash}]),
        );
    }
    std::fs::write(
        dir.join("hooks.json"),
        json!({"version": 1, "hooks": table}).to_string(),
    )
    .unwrap();
}

/// The user messages of a model request, as sent.
fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn user_prompt_transformed_replaces_what_the_model_reads_and_the_journal_keeps_it() {
    let fx = Fixture::start(Script::new().text("HOOKED"), |_| {}).await;
    // The hook sees the prompt and the wrapped text (with its date), and answers with its own.
    write_hooks(
        &fx,
        &[(
            "userPromptTransformed",
            r#"import json,sys; d=json.load(sys.stdin); ok=d["prompt"]=="answer it" and "<current_datetime>" in d["transformedPrompt"]; print(json.dumps({"modifiedTransformedPrompt": "Reply with exactly: HOOKED" if ok else "bad input"}))"#,
        )],
    );
    let (id, _) = fx.one_message(fx.hooked_parts(|_| {}), "answer it").await;
    assert_eq!(
        user_texts(&fx.server.requests()[0]),
        ["Reply with exactly: HOOKED"]
    );
    let journal = fx.journal(id);
    let user = journal
        .iter()
        .find(|e| e.event_type.as_str() == "user.message")
        .unwrap();
    let user = data(user);
    assert_eq!(user["content"], "answer it");
    assert_eq!(user["transformedContent"], "Reply with exactly: HOOKED");
    fx.audit_clean(id);
}

#[tokio::test]
async fn an_agent_stop_block_queues_its_reason_as_the_next_prompt_before_the_idle() {
    let fx = Fixture::start(Script::new().text("INITIAL").text("CONTINUED"), |_| {}).await;
    // Blocks once; the second time `stop_hook_active` says a block already kept it going.
    write_hooks(
        &fx,
        &[(
            "agentStop",
            r#"import json,sys; d=json.load(sys.stdin); print("{}" if d["stop_hook_active"] else json.dumps({"decision": "block", "reason": "Reply with exactly: CONTINUED", "seen": d["transcriptPath"]}))"#,
        )],
    );
    let (id, outcome) = fx
        .one_message(fx.hooked_parts(|_| {}), "Reply with exactly: INITIAL")
        .await;
    assert!(
        matches!(outcome, turnstile_loop::Outcome::Idle),
        "{outcome:?}"
    );
    let requests = fx.server.requests();
    assert_eq!(requests.len(), 2);
    let second = user_texts(&requests[1]);
    assert_eq!(second.len(), 2, "{second:?}");
    assert!(
        second[1].contains("Reply with exactly: CONTINUED"),
        "{second:?}"
    );
    // The continuation is a user message of the journal, queued, in an interaction of its own.
    let journal = fx.journal(id);
    let users: Vec<Value> = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "user.message")
        .map(data)
        .collect();
    assert_eq!(users.len(), 2);
    assert_eq!(users[1]["content"], "Reply with exactly: CONTINUED");
    assert_eq!(users[1]["delivery"], "queued");
    assert_ne!(users[0]["interactionId"], users[1]["interactionId"]);
    // The hook was told where the journal is.
    let ends: Vec<Value> = journal
        .iter()
        .filter(|e| e.event_type.as_str() == "hook.end")
        .map(data)
        .collect();
    let seen = ends[0]["output"]["seen"].as_str().unwrap();
    assert_eq!(
        std::path::Path::new(seen),
        fx.root.session(id).events.as_path()
    );
    fx.audit_clean(id);
}

#[tokio::test]
async fn an_agent_stop_hook_that_always_blocks_is_asked_a_bounded_number_of_times() {
    let mut script = Script::new();
    for i in 0..12 {
        script = script.text(format!("answer {i}"));
    }
    let fx = Fixture::start(script, |_| {}).await;
    write_hooks(
        &fx,
        &[(
            "agentStop",
            r#"import json; print(json.dumps({"decision": "block", "reason": "again"}))"#,
        )],
    );
    let (id, _) = fx.one_message(fx.hooked_parts(|_| {}), "go").await;
    // The first answer and eight continuations.
    assert_eq!(fx.server.requests().len(), 9);
    fx.audit_clean(id);
}
