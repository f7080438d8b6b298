//! Pending work survives a crash: an engine (this test binary re-run as a child) is SIGKILLed
//! while a client tool call and a permission request wait for answers; a resume with
//! `continue_pending_work` announces both again and the loop goes on once they are answered;
//! without it they are closed as interrupted. The continued message's first call in the new
//! process is `isInitial`, as the Copilot CLI marks it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadMode, StateRoot, Uuid};
use turnstile_loop::client::{AskError, ExternalToolCall, ExternalTools, PermissionAsker};
use turnstile_loop::{ResumeOptions, SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_tools::{BoxFuture, ToolFailure, ToolOutput, ToolRegistry, ToolSpec};

const CHILD_ENV: &str = "TURNSTILE_TEST_PENDING_CHILD";
/// Safety net only: no assertion depends on it.
const PATIENCE: Duration = Duration::from_secs(30);

/// A client with one tool, `slow_tool`; `answers: false` never answers anything.
struct Client {
    answers: bool,
}

impl ExternalTools for Client {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "slow_tool".into(),
            description: "answers late".into(),
            parameters: json!({"type": "object", "properties": {}}),
            skip_permission: true,
        }]
    }

    fn call(&self, call: ExternalToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolFailure>> {
        let answers = self.answers;
        Box::pin(async move {
            if !answers {
                std::future::pending::<()>().await;
            }
            Ok(ToolOutput::text(format!(
                "slow result for {}",
                call.request_id
            )))
        })
    }
}

impl PermissionAsker for Client {
    fn ask(&self, _id: String, _request: Value) -> BoxFuture<'static, Result<Value, AskError>> {
        let answers = self.answers;
        Box::pin(async move {
            if !answers {
                std::future::pending::<()>().await;
            }
            Ok(json!({"kind": "approved"}))
        })
    }
}

fn parts(url: &str, work: &Path, answers: bool) -> SessionParts {
    let client = Arc::new(Client { answers });
    SessionParts {
        config: SessionConfig::new(work, "test-model"),
        provider: Arc::new(OpenAiProvider::new(OpenAiConfig::new(url, "test-model")).unwrap()),
        tools: Arc::new(ToolRegistry::builtin(false)),
        hooks: None,
        external_tools: Some(client.clone()),
        permission_asker: Some(client),
        section_transformer: None,
    }
}

/// The engine the tests kill: `state|work|url|session id` in the environment.
#[tokio::test]
async fn child_engine() {
    let Some(spec) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let spec = spec.into_string().unwrap();
    let [state, work, url, id]: [&str; 4] = spec.split('|').collect::<Vec<_>>().try_into().unwrap();
    let root = StateRoot::new(state);
    let id = Uuid::parse_str(id).unwrap();
    let session =
        SessionHandle::create(&root, Some(id), parts(url, Path::new(work), false)).unwrap();
    let _ = session
        .send_and_wait("use both", SendOptions::default())
        .await;
}

fn journal(root: &StateRoot, id: Uuid) -> Vec<(String, Value)> {
    JournalReader::open(root.session(id).events, ReadMode::Strict)
        .unwrap()
        .map(|r| {
            let e = r.unwrap().event;
            (
                e.event_type.as_str().to_owned(),
                serde_json::from_str(e.data.get()).unwrap(),
            )
        })
        .collect()
}

fn of<'a>(events: &'a [(String, Value)], ty: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(t, _)| t == ty)
        .map(|(_, d)| d)
        .collect()
}

struct Crashed {
    _state: tempfile::TempDir,
    work: tempfile::TempDir,
    root: StateRoot,
    server: ScriptedServer,
    id: Uuid,
}

/// Runs the child engine until both requests are recorded, then SIGKILLs it.
async fn crash_with_pending_work() -> Crashed {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = StateRoot::new(state.path().join("session-state"));
    let server = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::tool_call("slow_tool", json!({})).and_tool_call(
                    "bash",
                    json!({"command": "touch made.txt", "description": "touch"}),
                ),
            )
            .text("both done")
            // What a message sent after the continued one is answered (one test sends it).
            .tool_call("view", json!({"path": "made.txt"}))
            .text("viewed"),
    )
    .await
    .unwrap();
    let id = Uuid::new_v4();
    let spec = format!(
        "{}|{}|{}|{id}",
        root.dir().display(),
        work.path().display(),
        server.url()
    );
    let mut engine = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "pending_work::child_engine",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, spec)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let events = root.session(id).events;
    let waited = tokio::time::timeout(PATIENCE, async {
        loop {
            let text = std::fs::read_to_string(&events).unwrap_or_default();
            if text.contains("\"external_tool.requested\"")
                && text.contains("\"permission.requested\"")
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the child never recorded both requests");
    // SAFETY: signalling the child this test started.
    unsafe {
        libc::kill(engine.id() as i32, libc::SIGKILL);
    }
    engine.wait().unwrap();
    Crashed {
        _state: state,
        work,
        root,
        server,
        id,
    }
}

#[tokio::test]
async fn continued_pending_work_is_announced_again_and_completed() {
    let c = crash_with_pending_work().await;
    let before = journal(&c.root, c.id);
    let asked = of(&before, "permission.requested")[0].clone();
    let requested = of(&before, "external_tool.requested")[0].clone();

    let (session, report, _rx) = SessionHandle::resume_with(
        &c.root,
        c.id,
        parts(&c.server.url(), c.work.path(), true),
        ResumeOptions {
            continue_pending_work: true,
            continue_pending_work_named: true,
            hold_pending_work: true,
        },
    )
    .unwrap();
    assert_eq!(report.continued_tool_calls, ["call_1", "call_2"]);
    assert!(report.closed_tool_calls.is_empty());
    // Held: nothing is announced again until the owner releases it (a server registers the
    // session first, so a client can answer at once).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        of(&journal(&c.root, c.id), "permission.requested").len(),
        1,
        "held pending work was announced before its release"
    );
    assert!(session.is_busy(), "held pending work counts as running");
    session.release_pending_work();
    let waited = tokio::time::timeout(PATIENCE, async {
        while c.server.requests().len() < 2 || session.is_busy() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the loop did not go on after the answers");
    session.shutdown().await.unwrap();

    assert!(
        c.work.path().join("made.txt").exists(),
        "the approved bash ran"
    );
    let after = journal(&c.root, c.id);
    let resume = of(&after, "session.resume")[0];
    assert_eq!(resume["continuePendingWork"], true);
    // The same requests again, same ids and data.
    assert_eq!(of(&after, "permission.requested"), [&asked, &asked]);
    assert_eq!(
        of(&after, "external_tool.requested"),
        [&requested, &requested]
    );
    let completes = of(&after, "tool.execution_complete");
    assert_eq!(completes.len(), 2);
    assert!(
        completes.iter().all(|c| c["success"] == true),
        "{completes:?}"
    );
    // The model got both results and answered; every turn is one request.
    let second = c.server.requests()[1].to_string();
    assert!(second.contains("slow result for"), "{second}");
    let report = turnstile_replay::audit_file(&c.root.session(c.id).events).unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.turns, 2);
    assert_eq!(c.server.requests().len(), 2);
}

#[tokio::test]
async fn without_continue_pending_work_is_closed_as_interrupted() {
    let c = crash_with_pending_work().await;
    let (session, report) =
        SessionHandle::resume(&c.root, c.id, parts(&c.server.url(), c.work.path(), true)).unwrap();
    assert!(report.continued_tool_calls.is_empty());
    assert_eq!(report.closed_tool_calls.len(), 2);
    session.shutdown().await.unwrap();
    let after = journal(&c.root, c.id);
    assert!(
        of(&after, "session.resume")[0]
            .get("continuePendingWork")
            .is_none()
    );
    assert_eq!(
        of(&after, "external_tool.requested").len(),
        1,
        "not announced again"
    );
    assert!(!c.work.path().join("made.txt").exists());
    assert_eq!(c.server.requests().len(), 1);
}

#[tokio::test]
async fn the_first_call_after_a_resume_is_initial_as_the_cli_marks_it() {
    let c = crash_with_pending_work().await;
    let (session, _report, mut rx) = SessionHandle::resume_with(
        &c.root,
        c.id,
        parts(&c.server.url(), c.work.path(), true),
        ResumeOptions {
            continue_pending_work: true,
            continue_pending_work_named: true,
            hold_pending_work: false,
        },
    )
    .unwrap();
    let waited = tokio::time::timeout(PATIENCE, async {
        while c.server.requests().len() < 2 || session.is_busy() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the loop did not go on after the answers");
    // A new message in the same process: its first call is initial, the next one not.
    session
        .send_and_wait("look at it", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();

    let mut calls = Vec::new();
    while let Ok(event) = rx.try_recv() {
        let data: Value = serde_json::from_str(event.data.get()).unwrap();
        match event.event_type.as_str() {
            "assistant.turn_start" => calls.push((data["turnId"].clone(), None)),
            "session.usage_info" => {
                let (_, initial) = calls.last_mut().expect("a turn start before usage_info");
                *initial = Some(data["isInitial"].clone());
            }
            _ => {}
        }
    }
    // The continued message goes on at turn 1 (turn 0 was the crashed process's), and
    // that call is still the first this process makes for it.
    assert_eq!(
        calls,
        [
            (json!("1"), Some(json!(true))),
            (json!("0"), Some(json!(true))),
            (json!("1"), Some(json!(false))),
        ]
    );
    assert_eq!(c.server.requests().len(), 4);
}
