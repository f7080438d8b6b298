//! Tool processes never outlive the engine. Real processes and signals: the engine is this
//! test binary re-run as a child (`child_engine` does the work only when its environment
//! variable is set), SIGKILLed while a `bash` call runs a tree of sleeps; a recorded
//! supervisor still running is stopped by the resume, and a recorded group the engine did not
//! start is left alone and reported.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadMode, StateRoot, Uuid};
use turnstile_loop::{SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_tools::bash::BashTool;
use turnstile_tools::processes::{GroupRecord, PROCESSES_FILE, ProcessTable};
use turnstile_tools::{Tool, ToolContext, ToolRegistry};

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
    let (mut engine, id, mut pids, pgid) =
        engine_running_the_tree(&root, work.path(), &server.url()).await;
    // The group was recorded before the command ran.
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

/// Starts the child engine on a session running `TREE` in a `bash` call; returns it, the
/// session id, the tree's pids (shell, background and foreground sleep) and its recorded pgid.
async fn engine_running_the_tree(
    root: &StateRoot,
    work: &Path,
    url: &str,
) -> (std::process::Child, Uuid, Vec<i32>, i32) {
    let id = Uuid::new_v4();
    let spec = format!("{}|{}|{url}|{id}", root.dir().display(), work.display());
    let engine = std::process::Command::new(std::env::current_exe().unwrap())
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
    wait_for("the tree to start", || {
        ["shell.pid", "bg.pid", "fg.pid"]
            .iter()
            .all(|f| pid_in(work, f).is_some())
    })
    .await;
    let recorded: Value =
        serde_json::from_slice(&std::fs::read(root.session(id).dir.join(PROCESSES_FILE)).unwrap())
            .unwrap();
    let pgid = recorded["groups"][0]["pgid"].as_i64().unwrap() as i32;
    let pids = ["shell.pid", "bg.pid", "fg.pid"]
        .iter()
        .map(|f| pid_in(work, f).unwrap())
        .collect();
    (engine, id, pids, pgid)
}

#[tokio::test]
async fn resume_stops_a_supervisor_of_the_engine_that_still_runs() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = StateRoot::new(state.path().join("session-state"));
    let server = ScriptedServer::start(Script::new()).await.unwrap();
    let session = SessionHandle::create(&root, None, parts(&server.url(), work.path())).unwrap();
    let id = session.id();
    session.shutdown().await.unwrap();

    // A tree under a real supervisor, recorded in the session's `processes.json` by the `bash`
    // tool as a session records it, left running as if its engine had died without taking it
    // along (the crash itself is `cli/tests/run_shells.rs`'s, whose process can adopt the
    // orphans a crash leaves).
    let mut ctx = ToolContext::new(work.path());
    ctx.processes = Some(Arc::new(ProcessTable::new(&root.session(id).dir)));
    ctx.tool_call_id = Some("call_7".into());
    let args = json!({"command": TREE, "description": "tree", "mode": "async"});
    BashTool.run(args, &ctx).await.unwrap();
    let dir = work.path().to_path_buf();
    wait_for("the tree to start", || {
        ["shell.pid", "bg.pid", "fg.pid"]
            .iter()
            .all(|f| pid_in(&dir, f).is_some())
    })
    .await;
    let recorded: Value =
        serde_json::from_slice(&std::fs::read(root.session(id).dir.join(PROCESSES_FILE)).unwrap())
            .unwrap();
    let pgid = recorded["groups"][0]["pgid"].as_i64().unwrap() as i32;
    let mut pids: Vec<i32> = ["shell.pid", "bg.pid", "fg.pid"]
        .iter()
        .map(|f| pid_in(&dir, f).unwrap())
        .collect();
    pids.push(pgid);

    let (session, report) =
        SessionHandle::resume(&root, id, parts(&server.url(), work.path())).unwrap();
    assert_eq!(report.stopped_process_groups.len(), 1);
    assert_eq!(report.stopped_process_groups[0].record.pgid, pgid);
    assert_eq!(report.stopped_process_groups[0].processes, 4);
    wait_for("the tree to be killed", || pids.iter().all(|p| !alive(*p))).await;
    session.shutdown().await.unwrap();
    let warnings: Vec<String> = journal_types(&root, id)
        .into_iter()
        .filter(|(t, d)| t == "session.warning" && d["warningType"] == "processes")
        .map(|(_, d)| d["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "stopped 4 process(es) of tool call call_7 (process group {pgid}) that the previous engine left running"
        )]
    );
}

#[tokio::test]
async fn resume_leaves_a_group_the_engine_did_not_start_and_says_so() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let root = StateRoot::new(state.path().join("session-state"));
    let server = ScriptedServer::start(Script::new()).await.unwrap();
    let session = SessionHandle::create(&root, None, parts(&server.url(), work.path())).unwrap();
    let id = session.id();
    session.shutdown().await.unwrap();

    // A group started the way a tool's is (its own group, recorded with its leader's real
    // start time and this boot) but not by the engine's supervisor: nothing proves it ours.
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
            command: Some(TREE.into()),
            supervisor_sha256: Some(turnstile_tools::supervisor::sha256_hex(b"guess")),
        })
        .unwrap();
    let pids = [
        pgid,
        pid_in(&dir, "bg.pid").unwrap(),
        pid_in(&dir, "fg.pid").unwrap(),
    ];

    let (session, report) =
        SessionHandle::resume(&root, id, parts(&server.url(), work.path())).unwrap();
    assert_eq!(report.stopped_process_groups, []);
    session.shutdown().await.unwrap();
    assert!(pids.iter().all(|p| alive(*p)), "left alone");
    let warnings: Vec<Value> = journal_types(&root, id)
        .into_iter()
        .filter(|(t, _)| t == "session.warning")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["warningType"], "processes");
    assert_eq!(
        warnings[0]["message"],
        format!(
            "did not stop process group {pgid} recorded for tool call call_9: its leader is not the recorded supervisor: it is not the engine's tool supervisor (its command line differs)"
        )
    );
    // SAFETY: the group this test started.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
    tree.wait().unwrap();
}
