//! What the model is sent and what clients are told, end to end against a scripted
//! OpenAI-compatible server on 127.0.0.1: the system prompt under each `systemMessage` mode,
//! attachments in the user message (and again after a resume), the events the SDK clients
//! expect around a message and a call (schema-validated, ephemeral ones never on disk),
//! `reasoningEffort`, `excludedTools`, title and model switches.

use crate::common;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use common::Fixture;
use jsonschema::Validator;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::prompt::{Attachment, SectionTransformer, SystemMessageConfig, TransformError};
use turnstile_loop::{Outcome, SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_providers::BoxFuture;
use turnstile_scripted_model::{Script, ScriptedResponse};

/// A 1x1 PNG, base64.
const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAAB4iG8MwAAAABJRU5ErkJggg==";

async fn fixture(script: Script) -> Fixture {
    Fixture::start(script, |work| {
        std::fs::write(work.join("notes.txt"), "line one\nline two\n").unwrap();
        std::fs::create_dir(work.join("sub")).unwrap();
        std::fs::write(work.join("sub/a.txt"), "a\n").unwrap();
    })
    .await
}

impl Fixture {
    /// The base parts, not streaming.
    fn unstreamed_parts(&self, configure: impl FnOnce(&mut SessionConfig)) -> SessionParts {
        self.base_parts(|config| {
            config.streaming = false;
            configure(config);
        })
    }

    fn system_prompt_sent(&self, request: usize) -> String {
        let r = &self.server.requests()[request];
        assert_eq!(r["messages"][0]["role"], "system");
        r["messages"][0]["content"].as_str().unwrap().to_owned()
    }
}

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>) -> Vec<Arc<Event>> {
    let mut out = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        out.push(ev);
    }
    out
}

fn validator() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/schema/session-events.schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::draft7::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    })
}

/// Every event validates against the session-events schema, as a client receives it.
fn assert_conforms(events: &[Arc<Event>]) {
    for e in events {
        let value = e.to_live_value();
        let errors: Vec<String> = validator()
            .iter_errors(&value)
            .map(|x| format!("{x} at {}", x.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{}: {value}\n{}",
            e.event_type,
            errors.join("\n")
        );
    }
}

fn names(events: &[Arc<Event>]) -> Vec<&str> {
    events.iter().map(|e| e.event_type.as_str()).collect()
}

fn config_of(v: Value) -> SystemMessageConfig {
    serde_json::from_value(v).unwrap()
}

#[tokio::test]
async fn the_default_prompt_names_the_runtime_it_is_compatible_with_and_its_context() {
    let fx = fixture(Script::new().respond(ScriptedResponse::text("hi"))).await;
    std::fs::write(
        fx.work.path().join("AGENTS.md"),
        "Always answer in French.\n",
    )
    .unwrap();
    let session = SessionHandle::create(&fx.root, None, fx.unstreamed_parts(|_| {})).unwrap();
    let outcome = session
        .send_and_wait("hello", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let prompt = fx.system_prompt_sent(0);
    let first = prompt.lines().next().unwrap();
    assert!(
        first.contains("compatible with the GitHub Copilot CLI"),
        "{first}"
    );
    assert!(prompt.contains(&format!(
        "* Working directory: {}\n",
        fx.work.path().display()
    )));
    assert!(prompt.contains("* Operating system: Linux\n"));
    assert!(prompt.contains(
        "* Tools offered: bash, read_bash, stop_bash, list_bash, view, create, edit, web_fetch, sql, read_agent, list_agents, write_agent, grep, glob"
    ));
    assert!(
        prompt.contains("<custom_instruction>\nAlways answer in French.\n</custom_instruction>")
    );
    // What was sent is what the journal records.
    let journal = fx.journal(session.id());
    let system = journal
        .iter()
        .find(|e| e.event_type.as_str() == "system.message")
        .unwrap();
    assert_eq!(data(system)["content"], prompt);
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn customize_replace_and_append_reach_the_model() {
    let script = Script::new()
        .respond(ScriptedResponse::text("1"))
        .respond(ScriptedResponse::text("2"))
        .respond(ScriptedResponse::text("3"));
    let fx = fixture(script).await;
    let configs = [
        json!({"mode": "customize", "sections": {
            "tone": {"action": "replace", "content": "Answer in haiku."},
            "safety": {"action": "remove"},
            "environment_context": {"action": "append", "content": "* Shell: bash"},
        }, "content": "Also: be kind."}),
        json!({"mode": "replace", "content": "You are only this."}),
        json!({"content": "Appended words."}),
    ];
    for (i, config) in configs.into_iter().enumerate() {
        let cfg = config_of(config);
        let session = SessionHandle::create(
            &fx.root,
            None,
            fx.unstreamed_parts(|c| c.system_message = cfg),
        )
        .unwrap();
        session
            .send_and_wait("go", SendOptions::default())
            .await
            .unwrap();
        session.shutdown().await.unwrap();
        let prompt = fx.system_prompt_sent(i);
        match i {
            0 => {
                assert!(prompt.contains("\n\nAnswer in haiku.\n\n"), "{prompt}");
                assert!(!prompt.contains("# How to answer"));
                assert!(!prompt.contains("<environment_limitations>"));
                assert!(prompt.contains("* Shell: bash\n</environment_context>"));
                assert!(prompt.contains("Also: be kind."));
            }
            1 => assert_eq!(prompt, "You are only this."),
            _ => {
                assert!(prompt.contains("\n\nAppended words.\n\n"), "{prompt}");
                assert!(prompt.contains("compatible with the GitHub Copilot CLI"));
            }
        }
    }
}

struct Upper;

impl SectionTransformer for Upper {
    fn transform(
        &self,
        sections: Vec<(String, String)>,
    ) -> BoxFuture<'static, Result<Vec<(String, String)>, TransformError>> {
        Box::pin(async move {
            Ok(sections
                .into_iter()
                .map(|(k, v)| (k, v.to_uppercase()))
                .collect())
        })
    }
}

#[tokio::test]
async fn transformed_sections_come_back_from_the_client() {
    let fx = fixture(Script::new().respond(ScriptedResponse::text("ok"))).await;
    let cfg =
        config_of(json!({"mode": "customize", "sections": {"tone": {"action": "transform"}}}));
    let mut parts = fx.unstreamed_parts(|c| c.system_message = cfg);
    parts.section_transformer = Some(Arc::new(Upper));
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    session
        .send_and_wait("go", SendOptions::default())
        .await
        .unwrap();
    let prompt = fx.system_prompt_sent(0);
    assert!(prompt.contains("# HOW TO ANSWER"), "{prompt}");
    assert!(
        prompt.contains("compatible with the GitHub Copilot CLI"),
        "others untouched"
    );
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn attachments_are_rendered_recorded_and_sent_again_after_a_resume() {
    let script = Script::new()
        .respond(ScriptedResponse::text("seen"))
        .respond(ScriptedResponse::text("still seen"));
    let fx = fixture(script).await;
    let cwd = fx.work.path().display().to_string();
    let attachments: Vec<Attachment> = serde_json::from_value(json!([
        {"type": "file", "path": "notes.txt", "displayName": "notes.txt"},
        {"type": "directory", "path": format!("{cwd}/sub"), "displayName": "sub"},
        {"type": "file", "path": "missing.txt"},
        {"type": "selection", "filePath": format!("{cwd}/sub/a.txt"), "displayName": "a.txt",
         "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
         "text": "a"},
        {"type": "blob", "data": PNG_B64, "mimeType": "image/png", "displayName": "dot.png"},
    ]))
    .unwrap();
    let session = SessionHandle::create(&fx.root, None, fx.unstreamed_parts(|_| {})).unwrap();
    let mut rx = session.subscribe();
    let options = SendOptions {
        attachments,
        ..Default::default()
    };
    session.send_and_wait("Please look", options).await.unwrap();
    let live = drain(&mut rx);
    assert_conforms(&live);
    let id = session.id();
    session.shutdown().await.unwrap();

    // The prompt follows the time it was sent, as recorded in the journal.
    let journal = fx.journal(id);
    let sent_at = journal
        .iter()
        .find(|e| e.event_type.as_str() == "user.message")
        .and_then(|e| {
            let text = data(e)["transformedContent"].as_str()?.to_owned();
            let start = text.find("<current_datetime>")? + "<current_datetime>".len();
            let end = text.find("</current_datetime>")?;
            Some(text[start..end].to_owned())
        })
        .expect("the user.message records the time of sending");
    assert!(
        sent_at.ends_with("+00:00")
            && turnstile_journal::Timestamp::parse(&sent_at.replace("+00:00", "Z")).is_ok(),
        "{sent_at}"
    );
    let expected_text = format!(
        "<ide_selection>\nThe user has the following text selected in their IDE. This may or may \
         not be related to their request.\nFile: sub/a.txt (line 1)\n```\na\n```\n</ide_selection>\
         \n\n<current_datetime>{sent_at}</current_datetime>\n\nPlease look\n\n<system_reminder>\n\
         <sql_tables>Available tables: todos, todo_deps</sql_tables>\n</system_reminder>\n\n\
         <system_reminder>\nThe user mentioned images and they have been \
         attached to this message in the order they were mentioned.\n</system_reminder>\n\n\
         <tagged_files>\n* {cwd}/notes.txt (3 lines)\n* {cwd}/sub (1 items)\n* {cwd}/missing.txt \
         (error: no such file or directory)\n</tagged_files>"
    );
    let expected_content = json!([
        {"type": "text", "text": expected_text},
        {"type": "text", "text": "dot.png"},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
    ]);
    let user = |request: &Value| -> Value {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .clone()
    };
    assert_eq!(user(&fx.server.requests()[0]), expected_content);

    // The journal: the asset first, a warning for the missing file, the user.message with the
    // attachments as recorded (no bytes), schema-valid on disk.
    let types: Vec<&str> = journal.iter().map(|e| e.event_type.as_str()).collect();
    let asset_at = types
        .iter()
        .position(|t| *t == "session.binary_asset")
        .unwrap();
    let warning_at = types.iter().position(|t| *t == "session.warning").unwrap();
    let user_at = types.iter().position(|t| *t == "user.message").unwrap();
    assert!(asset_at < warning_at && warning_at < user_at, "{types:?}");
    assert!(
        data(&journal[warning_at])["message"]
            .as_str()
            .unwrap()
            .contains("missing.txt")
    );
    let recorded = data(&journal[user_at]);
    let atts = recorded["attachments"].as_array().unwrap();
    assert_eq!(atts.len(), 5);
    assert_eq!(
        atts[0]["taggedFilesEntry"],
        format!("* {cwd}/notes.txt (3 lines)")
    );
    assert_eq!(atts[4]["assetId"], data(&journal[asset_at])["assetId"]);
    assert!(
        atts[4].get("data").is_none(),
        "bytes live in the asset only"
    );
    for e in &journal {
        let mut line = Vec::new();
        e.write_persisted(&mut line);
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert!(validator().is_valid(&value), "{}: {value}", e.event_type);
    }

    // The files change; a resumed session still shows the model what it saw.
    std::fs::write(fx.work.path().join("notes.txt"), "changed\n").unwrap();
    let (resumed, _) = SessionHandle::resume(&fx.root, id, fx.unstreamed_parts(|_| {})).unwrap();
    resumed
        .send_and_wait("again", SendOptions::default())
        .await
        .unwrap();
    resumed.shutdown().await.unwrap();
    assert_eq!(user(&fx.server.requests()[1]), expected_content);
}

/// A subscribed session whose model calls `tool` once and then answers; the live events of
/// sending `prompt` (checked against the schema).
async fn one_call_then_text(
    tool: &str,
    args: Value,
    prompt: &str,
) -> (Fixture, SessionHandle, Vec<Arc<Event>>) {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(tool, args))
        .respond(ScriptedResponse::text("done"));
    let fx = fixture(script).await;
    let (session, mut rx) =
        SessionHandle::create_subscribed(&fx.root, None, fx.unstreamed_parts(|_| {})).unwrap();
    session
        .send_and_wait(prompt, SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    assert_conforms(&live);
    (fx, session, live)
}

#[tokio::test]
async fn a_message_and_its_calls_carry_the_events_clients_expect() {
    let (fx, session, live) =
        one_call_then_text("view", json!({"path": "notes.txt"}), "Read the notes").await;
    let t: Vec<&str> = names(&live)
        .into_iter()
        .filter(|t| !t.ends_with("_delta") && !t.starts_with("tool."))
        .collect();
    assert_eq!(
        t,
        [
            "session.start",
            "session.managed_settings_resolved",
            "pending_messages.modified",
            "system.message",
            "session.tools_updated",
            "user.message",
            "session.title_changed",
            "assistant.turn_start",
            "session.usage_info",
            "model.call_start",
            "assistant.usage",
            "assistant.message",
            "assistant.turn_end",
            "assistant.turn_start",
            "session.usage_info",
            "model.call_start",
            "assistant.usage",
            "assistant.message",
            "assistant.turn_end",
            "assistant.idle",
            "session.idle",
        ]
    );
    let of = |name: &str| -> Vec<Value> {
        live.iter()
            .filter(|e| e.event_type.as_str() == name)
            .map(|e| data(e))
            .collect()
    };
    assert_eq!(
        of("session.title_changed")[0],
        json!({"title": "Read the notes"})
    );
    assert_eq!(
        of("session.tools_updated")[0],
        json!({"model": "test-model"})
    );
    let usage = of("session.usage_info");
    assert_eq!(usage[0]["tokenLimit"], 128_000);
    assert_eq!(usage[0]["messagesLength"], 2, "system + user");
    assert_eq!(usage[1]["messagesLength"], 4, "+ assistant + tool");
    assert_eq!(usage[0]["isInitial"], true);
    assert_eq!(usage[1]["isInitial"], false);
    let sum = |u: &Value| {
        u["systemTokens"].as_u64().unwrap()
            + u["conversationTokens"].as_u64().unwrap()
            + u["toolDefinitionsTokens"].as_u64().unwrap()
    };
    assert_eq!(usage[0]["currentTokens"].as_u64().unwrap(), sum(&usage[0]));
    assert!(usage[1]["conversationTokens"].as_u64() > usage[0]["conversationTokens"].as_u64());
    // The count follows the request the server received: its system message in `o200k_base`.
    let system = fx.server.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let o200k = |t: &str| turnstile_loop::prompt::tokens::Encoding::O200k.count(t);
    assert_eq!(
        usage[0]["systemTokens"].as_u64().unwrap(),
        turnstile_loop::prompt::tokens::MESSAGE_TOKENS + o200k("system") + o200k(&system)
    );
    assert_eq!(
        of("model.call_start")[1],
        json!({"turnId": "1", "model": "test-model"})
    );

    // None of the ephemeral ones reached the disk.
    let journal = fx.journal(session.id());
    for t in [
        "pending_messages.modified",
        "session.title_changed",
        "session.tools_updated",
        "session.usage_info",
        "model.call_start",
        "assistant.idle",
    ] {
        assert!(
            journal.iter().all(|e| e.event_type.as_str() != t),
            "{t} on disk"
        );
    }
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn writes_to_the_todo_tables_are_announced_before_the_call_completes() {
    let query = "INSERT INTO todos (id, title) VALUES ('a', 'A'); SELECT * FROM todos; UPDATE todos SET status = 'done'";
    let args = json!({"description": "Track the work", "query": query});
    let (fx, session, live) = one_call_then_text("sql", args, "Plan").await;
    let t: Vec<&str> = names(&live)
        .into_iter()
        .filter(|t| t.starts_with("tool.") || *t == "session.todos_changed")
        .collect();
    assert_eq!(
        t,
        [
            "tool.execution_start",
            "session.todos_changed",
            "session.todos_changed",
            "tool.execution_complete",
        ]
    );
    let changed = live
        .iter()
        .find(|e| e.event_type.as_str() == "session.todos_changed")
        .unwrap();
    assert_eq!(data(changed), json!({}));
    assert!(changed.is_ephemeral());
    let journal = fx.journal(session.id());
    assert!(
        journal
            .iter()
            .all(|e| e.event_type.as_str() != "session.todos_changed")
    );
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_empty_queue_is_announced_at_the_first_message_to_a_client_subscribing_after_create() {
    let fx = fixture(Script::new().text("one").text("two")).await;
    let session = SessionHandle::create(&fx.root, None, fx.unstreamed_parts(|_| {})).unwrap();
    // Subscribed after the session opened, as the SDK clients do after `session.create`.
    let mut rx = session.subscribe();
    session
        .send_and_wait("first", SendOptions::default())
        .await
        .unwrap();
    session
        .send_and_wait("second", SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    let t = names(&live);
    let pending: Vec<usize> = t
        .iter()
        .enumerate()
        .filter(|(_, x)| **x == "pending_messages.modified")
        .map(|(i, _)| i)
        .collect();
    let first_user = t.iter().position(|x| *x == "user.message").unwrap();
    // Once, before the first message's user.message; a send that did not wait adds none.
    assert_eq!(pending.len(), 1, "{t:?}");
    assert!(pending[0] < first_user, "{t:?}");
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_queued_send_is_announced_when_it_joins_and_when_it_leaves_the_queue() {
    let script = Script::new()
        .respond(ScriptedResponse::text("first").with_delay_ms(300))
        .respond(ScriptedResponse::text("second"));
    let fx = fixture(script).await;
    let (session, mut rx) =
        SessionHandle::create_subscribed(&fx.root, None, fx.unstreamed_parts(|_| {})).unwrap();
    let (_, first) = session.send("one", SendOptions::default()).unwrap();
    let (_, second) = session.send("two", SendOptions::default()).unwrap();
    first.await.unwrap();
    second.await.unwrap();
    let live = drain(&mut rx);
    assert_conforms(&live);
    let t = names(&live);
    let pending: Vec<usize> = t
        .iter()
        .enumerate()
        .filter(|(_, x)| **x == "pending_messages.modified")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(pending.len(), 3, "start, joined, left: {t:?}");
    let second_user = t
        .iter()
        .enumerate()
        .filter(|(_, x)| **x == "user.message")
        .nth(1)
        .unwrap()
        .0;
    assert!(
        pending[2] < second_user,
        "it leaves the queue before it runs: {t:?}"
    );
    assert!(pending[2] > t.iter().position(|x| *x == "session.idle").unwrap());
    // The first was taken up at once, the second waited: their `delivery` says so.
    let delivery: Vec<Value> = live
        .iter()
        .filter(|e| e.event_type.as_str() == "user.message")
        .map(|e| data(e)["delivery"].clone())
        .collect();
    assert_eq!(delivery, [json!("idle"), json!("queued")]);
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn reasoning_effort_is_recorded_and_excluded_tools_are_neither_offered_nor_run() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": "notes.txt"}),
        ))
        .respond(ScriptedResponse::text("done"));
    let fx = fixture(script).await;
    let parts = fx.unstreamed_parts(|c| {
        c.reasoning_effort = Some("high".into());
        c.excluded_tools = vec!["view".into(), "grep".into()];
    });
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    session
        .send_and_wait("Read it", SendOptions::default())
        .await
        .unwrap();
    let first = &fx.server.requests()[0];
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "bash",
            "read_bash",
            "stop_bash",
            "list_bash",
            "create",
            "edit",
            "web_fetch",
            "sql",
            "read_agent",
            "list_agents",
            "write_agent",
            "glob",
            "task"
        ]
    );
    assert!(!fx.system_prompt_sent(0).contains("* view: "));
    let journal = fx.journal(session.id());
    assert_eq!(data(&journal[0])["reasoningEffort"], "high");
    let complete = journal
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .unwrap();
    let c = data(complete);
    assert_eq!(c["success"], false);
    assert!(
        c["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Tool 'view' does not exist."),
        "{c}"
    );
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn title_and_model_switches_are_announced_and_the_model_follows() {
    let script = Script::new()
        .respond(ScriptedResponse::text("one"))
        .respond(ScriptedResponse::text("two"));
    let fx = fixture(script).await;
    let (session, mut rx) =
        SessionHandle::create_subscribed(&fx.root, None, fx.unstreamed_parts(|_| {})).unwrap();
    session
        .send_and_wait("first", SendOptions::default())
        .await
        .unwrap();
    session.set_name("My title").await.unwrap();
    session
        .switch_model("other-model", Some("low".into()))
        .await
        .unwrap();
    session
        .send_and_wait("second", SendOptions::default())
        .await
        .unwrap();
    let live = drain(&mut rx);
    assert_conforms(&live);
    let titles: Vec<Value> = live
        .iter()
        .filter(|e| e.event_type.as_str() == "session.title_changed")
        .map(|e| data(e))
        .collect();
    assert_eq!(
        titles,
        [json!({"title": "first"}), json!({"title": "My title"})]
    );
    let change = live
        .iter()
        .find(|e| e.event_type.as_str() == "session.model_change")
        .unwrap();
    assert_eq!(
        data(change),
        json!({"contextTier": null, "newModel": "other-model", "previousModel": "test-model",
               "reasoningEffort": "low"})
    );
    assert!(!change.is_ephemeral(), "a model change is persisted");
    let second = &fx.server.requests()[1];
    assert_eq!(second["model"], "other-model");
    let journal = fx.journal(session.id());
    assert!(
        journal
            .iter()
            .any(|e| e.event_type.as_str() == "session.model_change")
    );
    session.shutdown().await.unwrap();
}
