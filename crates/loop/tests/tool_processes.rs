//! Tool processes never outlive the engine. Real processes and signals: the engine is this
//! test binary re-run as a child (`child_engine` does the work only when its environment
//! variable is set), SIGKILLed while a `bash` call runs a tree of sleeps; and a group left
//! running outside the engine-death signal is stopped by the resume.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadMode, StateRoot, Uuid};
use turnstile_loop::{SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_tools::ToolRegistry;
use turnstile_tools::processes::{GroupRecord, PROCESSES_FILE, ProcessTable};

const CHILD_ENV: &str = "TURNSTILE_TEST_ENGINE_CHILD";
/// Safety net only: no assertion depends on it.
const PATIENCE: Duration = Duration::from_secs(30);
/// The tree: a shell, a background sleep and a foreground sleep, each writing its pid.
const TREE: &str =
    "echo $$ > shell.pid; sleep 300 & echo $! > bg.pid; sleep 300 & echo $! > fg.pid; wait";

fn parts(url: &str, work: &Path) -> SessionParts {
    let mut config = SessionConfig::new(work, "test-model");
    config.permissions = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
    SessionParts {
        config,
        provider: Arc::new(OpenAiProvider::new(OpenAiConfig::new(url, "test-model")).unwrap()),
        tools: Arc::new(ToolRegistry::builtin(false)),
        hooks: None,
        external_tools: None,
        permission_asker: None,
        section_transformer: None,
    }
}

/// The engine the other test kills: `state|work|url|session id` in the environment.
#[tokio::test]
async fn child_engine() {
    let Some(spec) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let spec = spec.into_string().unwrap();
    let [state, work, url, id]: [&str; 4] = spec.split('|').collect::<Vec<_>>().try_into().unwrap();
    let root = StateRoot::new(state);
    let id = Uuid::parse_str(id).unwrap();
    let session = SessionHandle::create(&root, Some(id), parts(url, Path::new(work))).unwrap();
    // Runs until killed.
    let _ = session
        .send_and_wait("run the tree", SendOptions::default())
        .await;
}

fn pid_in(dir: &Path, name: &str) -> Option<i32> {
    std::fs::read_to_string(dir.join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

async fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(PATIENCE, async {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "gave up waiting for {what}");
}

fn journal_types(root: &StateRoot, id: Uuid) -> Vec<(String, Value)> {
    JournalReader::open(root.session(id).events, ReadMode::Strict)
        .unwrap()
        .map(|r| {
            let e = r.unwrap().event;
            let data = serde_json::from_str(e.data.get()).unwrap();
            (e.event_type.as_str().to_owned(), data)
        })
        .collect()
}

#[tokio::test]
async fn sigkill_of_the_engine_kills_the_tool_process_tree() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = StateRoot::new(state.path().join("session-state"));
    let server = ScriptedServer::start(
        Script::new()
            .tool_call("bash", json!({"command": TREE, "description": "tree"}))
            .text("after the resume"),
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
            "tool_processes::child_engine",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, spec)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir: PathBuf = work.path().to_path_buf();
    wait_for("the tree to start", || {
        ["shell.pid", "bg.pid", "fg.pid"]
            .iter()
            .all(|f| pid_in(&dir, f).is_some())
    })
    .await;
    // The group was recorded before the command ran.
    let recorded: Value =
        serde_json::from_slice(&std::fs::read(root.session(id).dir.join(PROCESSES_FILE)).unwrap())
            .unwrap();
    let pgid = recorded["groups"][0]["pgid"].as_i64().unwrap() as i32;
    let mut pids: Vec<i32> = ["shell.pid", "bg.pid", "fg.pid"]
        .iter()
        .map(|f| pid_in(&dir, f).unwrap())
        .collect();
    pids.push(pgid);
    assert!(pids.iter().all(|p| alive(*p)), "the tree runs");

    // SAFETY: signalling the child this test started.
    unsafe {
        libc::kill(engine.id() as i32, libc::SIGKILL);
    }
    engine.wait().unwrap();
    wait_for("the tree to die with the engine", || {
        pids.iter().all(|p| !alive(*p))
    })
    .await;

    // The resume finds nothing left to stop and closes the call as interrupted.
    let (session, report) =
        SessionHandle::resume(&root, id, parts(&server.url(), work.path())).unwrap();
    assert_eq!(report.stopped_process_groups, []);
    assert_eq!(report.closed_tool_calls.len(), 1);
    assert!(!root.session(id).dir.join(PROCESSES_FILE).exists());
    session.shutdown().await.unwrap();
}

#[tokio::test]
async fn resume_stops_a_recorded_group_that_survived() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = StateRoot::new(state.path().join("session-state"));
    let server = ScriptedServer::start(Script::new()).await.unwrap();
    let session = SessionHandle::create(&root, None, parts(&server.url(), work.path())).unwrap();
    let id = session.id();
    session.shutdown().await.unwrap();

    // A group started the way a tool's is (its own group, recorded with its leader's start
    // time) but without the engine-death signal, as if the engine died and it lived on.
    let mut tree = std::process::Command::new("bash")
        .args(["-c", TREE])
        .current_dir(work.path())
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = tree.id() as i32;
    let dir = work.path().to_path_buf();
    wait_for("the tree to start", || {
        ["bg.pid", "fg.pid"]
            .iter()
            .all(|f| pid_in(&dir, f).is_some())
    })
    .await;
    let start_time: u64 = std::fs::read_to_string(format!("/proc/{pgid}/stat"))
        .unwrap()
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    ProcessTable::new(&root.session(id).dir)
        .add(GroupRecord {
            pgid,
            start_time,
            tool_call_id: "call_9".into(),
            boot_id: turnstile_tools::processes::boot_id(),
            shell_id: None,
            command: None,
        })
        .unwrap();
    let pids = [
        pgid,
        pid_in(&dir, "bg.pid").unwrap(),
        pid_in(&dir, "fg.pid").unwrap(),
    ];

    let (session, report) =
        SessionHandle::resume(&root, id, parts(&server.url(), work.path())).unwrap();
    assert_eq!(report.stopped_process_groups.len(), 1);
    assert_eq!(report.stopped_process_groups[0].record.pgid, pgid);
    tree.wait().unwrap();
    wait_for("the survivors to be killed", || {
        pids.iter().all(|p| !alive(*p))
    })
    .await;
    session.shutdown().await.unwrap();
    let warnings: Vec<Value> = journal_types(&root, id)
        .into_iter()
        .filter(|(t, _)| t == "session.warning")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["warningType"], "processes");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.contains("call_9") && message.contains(&pgid.to_string()),
        "{message}"
    );
}
