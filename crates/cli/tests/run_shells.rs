//! Async shells through `turnstile run` and `turnstile resume` on a scripted model at
//! 127.0.0.1: a shell started with `mode: "async"` answers at once, is read and listed, keeps
//! running past the model's last answer and is stopped (and recorded) when the session closes;
//! `stop_bash` kills its whole process group while the session goes on; in the SDK server a
//! shell outlives its message's `session.idle` until the session closes; after a kill -9 the
//! resume lists the shell as lost; a shell that ends while no call waits for it is told at the
//! next turn, as the Copilot CLI tells it; a resume kills the supervisor a crash left running
//! and nothing a forged `processes.json` names (init, a stranger's `setsid sleep`).

mod common;

use std::time::Duration;

use common::rpc::StdioServer;
use common::watched::{Watched, completed, started};
use common::{Env, audit_clean, call, journal_values as journal, tool_result};
use serde_json::{Value, json};
use turnstile_scripted_model::Script;

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// Waits (boundedly; no assertion depends on the time) until `pid` is gone.
fn gone(pid: i32) -> bool {
    (0..1500).any(|_| {
        let alive = alive(pid);
        if alive {
            std::thread::sleep(Duration::from_millis(20));
        }
        !alive
    })
}

/// Makes this test process the reaper of the orphans its children leave. A killed shell's
/// children lose their parent with it; adopted here they can be reaped (`no_such_process`),
/// so their pids really go even where the machine's init reaps nobody (some containers).
fn adopt_orphans() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    let set = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(set, 0, "{}", std::io::Error::last_os_error());
}

/// Waits (boundedly; no assertion depends on the time) until no process has `pid`:
/// `kill(pid, 0)` fails with ESRCH. An adopted orphan that died is reaped first.
fn no_such_process(pid: i32) -> bool {
    (0..1500).any(|_| {
        // SAFETY: waitpid with WNOHANG on one pid only reaps that pid if it is a dead child
        // of this process (an adopted orphan); for any other pid it fails with ECHILD.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        // SAFETY: signal 0 sends nothing; it only asks whether the pid exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        if exists {
            std::thread::sleep(Duration::from_millis(20));
        }
        !exists
    })
}

/// The pid a shell command wrote to `file` in the working directory.
fn pid_in(env: &Env, file: &str) -> i32 {
    let text = std::fs::read_to_string(env.work.path().join(file)).unwrap();
    text.trim().parse().unwrap()
}

/// An async shell `srv` recording its own pid and its background job's (`sh.pid`, `bg.pid`).
const SERVE: &str = "echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; wait";

/// A sync call that returns once the async shell has written both pids.
fn wait_for_pids(id: &str) -> turnstile_scripted_model::ScriptedResponse {
    call(
        id,
        "bash",
        json!({"command": "while [ ! -s bg.pid ]; do sleep 0.05; done", "description": "wait for the pids"}),
    )
}

/// A script whose first calls start `SERVE` as the async shell `srv` (call c1) and wait until
/// it has written its pids (call c2).
fn serving_in_the_background() -> Script {
    Script::new()
        .respond(call(
            "c1",
            "bash",
            json!({"command": SERVE, "description": "serve", "mode": "async", "shellId": "srv"}),
        ))
        .respond(wait_for_pids("c2"))
}

#[test]
fn an_async_shell_runs_past_the_answer_and_stops_when_the_session_closes() {
    let env = Env::new();
    let server = env.server(
        Script::new()
            .respond(call(
                "c1",
                "bash",
                json!({"command": "echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; wait", "description": "serve", "mode": "async", "shellId": "srv"}),
            ))
            .respond(call("c2", "list_bash", json!({})))
            .respond(call("c3", "read_bash", json!({"shellId": "nope", "delay": 0})))
            .respond(call("c4", "nosuch", json!({})))
            .text("Started."),
    );
    let out = env
        .cmd(&server, &["run", "--allow-all-tools", "start the server"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    let last = requests.last().unwrap();
    assert_eq!(
        tool_result(last, "c1"),
        "<command started in background with shellId: srv>"
    );
    let listed = tool_result(last, "c2");
    assert!(
        listed.starts_with("Active shell sessions:\n  shellId: srv, pid: "),
        "{listed}"
    );
    assert!(
        listed.ends_with("current command: echo $$ > sh.pid; sleep 300 & echo $! > bg.pid; wait"),
        "{listed}"
    );
    assert!(tool_result(last, "c3").starts_with(
        "shellId: nope not found or was never created. Please supply a valid shell ID.\n\nActive shell sessions:\n  shellId: srv"
    ));
    assert_eq!(
        tool_result(last, "c4"),
        "Tool 'nosuch' does not exist. Available tools that can be called are bash, read_bash, stop_bash, list_bash, view, create, edit, web_fetch, sql, read_agent, list_agents, write_agent, grep, glob, task."
    );
    // The run ended the session: the shell and its background job were stopped (on a slow
    // machine the close may come before the job started: then there is nothing to outlive it).
    for file in ["sh.pid", "bg.pid"] {
        let text = std::fs::read_to_string(env.work.path().join(file)).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            assert!(gone(pid), "{file}: {pid} outlived the session");
        }
    }
    let (_, events) = env.only_session();
    let events = journal(&events);
    let warning = events
        .iter()
        .find(|e| e["type"] == "session.warning" && e["data"]["warningType"] == "shells")
        .expect("the stop is recorded");
    assert!(
        warning["data"]["message"]
            .as_str()
            .unwrap()
            .contains("stopped shell srv"),
        "{warning}"
    );
    audit_clean(&env.only_session().1);
}

#[test]
fn stop_bash_kills_the_shell_s_whole_group_while_the_session_goes_on() {
    adopt_orphans();
    let env = Env::new();
    let server = env.server(
        serving_in_the_background()
            .respond(call("c3", "stop_bash", json!({"shellId": "srv"})))
            .respond(call("c4", "list_bash", json!({})))
            // Holds the session open until the test has looked at the processes.
            .respond(call(
                "c5",
                "bash",
                json!({"command": "while [ ! -e go ]; do sleep 0.05; done", "description": "hold", "initial_wait": 600}),
            ))
            .text("Stopped."),
    );
    let mut engine = Watched::spawn(env.cmd(
        &server,
        &["run", "--json", "--allow-all-tools", "stop the server"],
    ));
    engine.until(completed("c3"));
    // The shell and its background job are gone before the session ends.
    for file in ["sh.pid", "bg.pid"] {
        let pid = pid_in(&env, file);
        assert!(no_such_process(pid), "{file}: {pid} outlived stop_bash");
    }
    std::fs::write(env.work.path().join("go"), "").unwrap();
    assert!(engine.wait().success());

    let last = server.requests().last().unwrap().clone();
    assert_eq!(tool_result(&last, "c3"), "<command with id: srv stopped>");
    let listed = tool_result(&last, "c4");
    assert!(!listed.contains("shellId: srv"), "forgotten: {listed}");
    // Stopped by the model, not by the close: the close has no shell of it to stop.
    let (_, events) = env.only_session();
    let stopped_at_close = journal(&events).into_iter().any(|e| {
        e["type"] == "session.warning"
            && e["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("srv"))
    });
    assert!(!stopped_at_close);
    audit_clean(&events);
}

#[test]
fn a_shell_keeps_running_while_the_session_is_idle_and_stops_when_it_closes() {
    adopt_orphans();
    let env = Env::new();
    let model = env.server(serving_in_the_background().text("Started."));
    // The SDK server, where a session outlives its message (`run` closes at the first idle).
    let mut runtime = StdioServer::spawn(env.stdio_command());
    let id = runtime.create_session(&model.url(), env.work.path());
    runtime.send_until_idle(&id, "start the server");
    let pids = [pid_in(&env, "sh.pid"), pid_in(&env, "bg.pid")];
    for pid in pids {
        assert!(alive(pid), "{pid} ended with the message");
    }

    runtime.ok("session.destroy", json!({"sessionId": id}));
    // `session.destroy` answers once the session has closed.
    for pid in pids {
        assert!(no_such_process(pid), "{pid} outlived the session");
    }
    assert!(runtime.close().success());
    let events = env
        .state
        .path()
        .join("session-state")
        .join(&id)
        .join("events.jsonl");
    let recorded = journal(&events).into_iter().any(|e| {
        e["type"] == "session.warning"
            && e["data"]["warningType"] == "shells"
            && e["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("stopped shell srv"))
    });
    assert!(recorded, "the stop at close is recorded");
    audit_clean(&events);
}

#[test]
fn a_resume_after_kill_9_lists_the_lost_shell() {
    let env = Env::new();
    let first = env.server(
        Script::new()
            .respond(call(
                "c1",
                "bash",
                json!({"command": "sleep 300", "description": "serve", "mode": "async", "shellId": "srv"}),
            ))
            .respond(call(
                "c2",
                "bash",
                json!({"command": "sleep 300", "description": "hold", "initial_wait": 600}),
            )),
    );
    let mut engine = Watched::spawn(env.cmd(
        &first,
        &[
            "run",
            "--json",
            "--allow-all-tools",
            "--durability",
            "event",
            "go",
        ],
    ));
    engine.until(started("c2"));
    // The crash comes once the sync shell's group is recorded too (its start event comes first).
    let (_, events) = env.only_session();
    let processes = events.with_file_name("processes.json");
    let recorded = (0..1500).any(|_| {
        let text = std::fs::read_to_string(&processes).unwrap_or_default();
        let both = text.contains(r#""shellId":"srv""#) && text.contains(r#""shellId":"0""#);
        if !both {
            std::thread::sleep(Duration::from_millis(20));
        }
        both
    });
    assert!(recorded, "both shells in {}", processes.display());
    engine.kill_9();
    let (id, events) = env.only_session();

    let second = env.server(
        Script::new()
            .respond(call("r1", "list_bash", json!({})))
            .respond(call(
                "r2",
                "read_bash",
                json!({"shellId": "srv", "delay": 0}),
            ))
            .text("The server is gone."),
    );
    let out = env
        .cmd(&second, &["resume", &id[..8], "is the server up?"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The first request after the resume tells the model of the async shell, whose call had
    // returned; the sync one is told by its interrupted result instead.
    let first_request = second.requests()[0].clone();
    let messages = first_request["messages"].as_array().unwrap();
    let notices: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("<system_notification>"))
        .collect();
    assert_eq!(
        notices,
        [
            "<system_notification>\nShell \"srv\" (`sleep 300`) was lost: the engine running it stopped, and its processes are gone. Run the command again if you still need it.\n</system_notification>"
        ],
        "{first_request}"
    );
    assert_eq!(
        messages.last().unwrap()["content"],
        notices[0],
        "the notice comes after the history"
    );
    let last = second.requests().last().unwrap().clone();
    assert_eq!(
        tool_result(&last, "r1"),
        "Active shell sessions:\n  shellId: srv, status: lost (the engine running it stopped; its processes are gone)\n    current command: sleep 300\n  shellId: 0, status: lost (the engine running it stopped; its processes are gone)\n    current command: sleep 300",
        "the async shell and the sync one the crash cut short"
    );
    assert!(
        tool_result(&last, "r2").starts_with("shellId: srv was lost"),
        "{}",
        tool_result(&last, "r2")
    );
    let events = journal(&events);
    assert!(events.iter().any(|e| {
        e["type"] == "session.warning"
            && e["data"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("shell srv (tool call c1) was lost"))
    }));
    // Recorded once, so the fold (a later resume, a replay) sends the same request.
    let recorded: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "system.notification")
        .collect();
    assert_eq!(recorded.len(), 1, "told once: {recorded:?}");
    assert_eq!(recorded[0]["data"]["kind"]["shellId"], "srv");
}

#[test]
fn a_shell_that_ends_while_the_message_runs_is_told_at_the_next_turn() {
    // `fail` waits for `go`, which the sync call `c2` makes; `c2` returns once `fail` has
    // printed its last line, a second later (the end is then usually recorded before the next
    // turn starts; the test accepts any later turn). No call waits for `fail` when it ends.
    let env = Env::new();
    let server = env.server(
        Script::new()
            .respond(call(
                "c1",
                "bash",
                json!({"command": "while [ ! -e go ]; do sleep 0.05; done; echo out > fail.ended; exit 4", "description": "Wait then fail", "mode": "async", "shellId": "fail"}),
            ))
            .respond(call(
                "c2",
                "bash",
                json!({"command": "touch go; while [ ! -s fail.ended ]; do sleep 0.05; done; sleep 1", "description": "Pause"}),
            ))
            .respond(call("c3", "list_bash", json!({})))
            .text("Noticed."),
    );
    env.run_ok(
        &server,
        &["run", "--allow-all-tools", "notice the shell's end"],
    );
    let notice = "<system_notification>\nShell command \"Wait then fail\" (shellId: fail) has exited with exit code 4. Use read_bash with shellId \"fail\" to retrieve the output.\n</system_notification>";
    let (_, journal_path) = env.only_session();
    let events = journal(&journal_path);
    let notices: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "system.notification")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(notices.len(), 1, "told once: {events:#?}");
    let at = notices[0];
    assert_eq!(events[at]["data"]["content"], notice);
    assert_eq!(
        events[at]["data"]["kind"],
        json!({"type": "shell_completed", "shellId": "fail", "exitCode": 4, "description": "Wait then fail"})
    );
    // Right after a turn's start, and after the call that was running when the shell ended.
    assert_eq!(events[at - 1]["type"], "assistant.turn_start");
    let c2_done = events
        .iter()
        .position(|e| e["type"] == "tool.execution_complete" && e["data"]["toolCallId"] == "c2")
        .unwrap();
    assert!(at > c2_done, "{events:#?}");
    // That turn's request ends with the notice, after the history (the model reads it last);
    // every later request keeps it where it was.
    let turn: usize = events[..at]
        .iter()
        .filter(|e| e["type"] == "assistant.turn_start" && e.get("agentId").is_none())
        .count();
    let requests = server.requests();
    let last_text = |request: &Value| {
        let messages = request["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        (last["role"].clone(), last["content"].clone())
    };
    assert_eq!(
        last_text(&requests[turn - 1]),
        (json!("user"), json!(notice)),
        "request {turn} of {}",
        requests.len()
    );
    for later in &requests[turn..] {
        let messages = later["messages"].as_array().unwrap();
        assert_eq!(
            messages.iter().filter(|m| m["content"] == notice).count(),
            1
        );
    }
    audit_clean(&journal_path);
    // The journal folds to the conversation the engine sent: a resume sends the same.
    let history = std::process::Command::new(env!("CARGO_BIN_EXE_turnstile"))
        .args(["history", "--json"])
        .arg(&journal_path)
        .output()
        .unwrap();
    assert!(history.status.success());
    let view: Value = serde_json::from_slice(&history.stdout).unwrap();
    assert!(
        view.to_string().contains("has exited with exit code 4"),
        "{view:#}"
    );
}

/// `/proc/<pid>/stat`'s start time (field 22).
fn start_time(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn stopped(pid: i32) -> bool {
    (0..1500).any(|_| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let now = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'));
        if !now {
            std::thread::sleep(Duration::from_millis(20));
        }
        now
    })
}

#[test]
fn a_resume_stops_the_engine_s_supervisor_and_nothing_it_did_not_start() {
    adopt_orphans();
    let env = Env::new();
    let first = env.server(serving_in_the_background().respond(call(
        "c3",
        "bash",
        json!({"command": "echo $$ > hold_sh.pid; sleep 300 & echo $! > hold_bg.pid; wait", "description": "hold", "initial_wait": 600}),
    )));
    let mut engine = Watched::spawn(env.cmd(
        &first,
        &[
            "run",
            "--json",
            "--allow-all-tools",
            "--durability",
            "event",
            "go",
        ],
    ));
    engine.until(started("c3"));
    let (id, events) = env.only_session();
    let processes = events.with_file_name("processes.json");
    let mut file = Value::Null;
    let both = (0..1500).any(|_| {
        file = serde_json::from_slice(&std::fs::read(&processes).unwrap_or_default())
            .unwrap_or(Value::Null);
        let groups = file["groups"].as_array().map_or(0, Vec::len);
        let held = env.work.path().join("hold_bg.pid").exists();
        if groups < 2 || !held {
            std::thread::sleep(Duration::from_millis(20));
        }
        groups == 2 && held
    });
    assert!(both, "both shells recorded and running: {file}");
    let pgid_of = |call: &str| {
        file["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["toolCallId"] == call)
            .unwrap()["pgid"]
            .as_i64()
            .unwrap() as i32
    };
    let (srv, hold) = (pgid_of("c1"), pgid_of("c3"));
    // The async shell's supervisor is stopped: the engine-death signal waits, so it outlives
    // the engine, as a hung one would.
    // SAFETY: signalling the supervisor of the engine this test started.
    unsafe {
        libc::kill(srv, libc::SIGSTOP);
    }
    assert!(stopped(srv));
    // Someone else's process group, which the engine never started.
    let mut stranger = std::process::Command::new("setsid")
        .args(["sleep", "300"])
        .spawn()
        .unwrap();
    let stranger_pid = stranger.id() as i32;
    let ready = (0..1500).any(|_| {
        let cmdline = std::fs::read(format!("/proc/{stranger_pid}/cmdline")).unwrap_or_default();
        let now = cmdline == b"sleep\x00300\x00";
        if !now {
            std::thread::sleep(Duration::from_millis(20));
        }
        now
    });
    assert!(ready, "setsid ran sleep");
    engine.kill_9();
    // The sync shell's supervisor heard the engine die and took its group with it.
    for pid in [
        hold,
        pid_in(&env, "hold_sh.pid"),
        pid_in(&env, "hold_bg.pid"),
    ] {
        assert!(gone(pid), "{pid} outlived the engine");
    }
    let survivors = [srv, pid_in(&env, "sh.pid"), pid_in(&env, "bg.pid")];
    assert!(
        survivors.iter().all(|p| alive(*p)),
        "the stopped one lives on"
    );

    // What a tool could have written: records naming init and the stranger, with this boot,
    // their real start times and the command the stranger runs.
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let forged = |pgid: i32| {
        json!({
            "pgid": pgid,
            "startTime": start_time(pgid),
            "toolCallId": format!("forged{pgid}"),
            "bootId": boot.trim(),
            "command": "sleep 300",
            "supervisorSha256": "0000000000000000000000000000000000000000000000000000000000000000",
        })
    };
    let groups = file["groups"].as_array_mut().unwrap();
    groups.push(forged(1));
    groups.push(forged(stranger_pid));
    std::fs::write(&processes, file.to_string()).unwrap();

    let second = env.server(Script::new().text("Resumed."));
    let out = env
        .cmd(&second, &["resume", &id[..8], "carry on"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for pid in survivors {
        assert!(no_such_process(pid), "{pid} survived the resume");
    }
    // Had the stranger been signalled, SIGKILL would have ended it by now.
    std::thread::sleep(Duration::from_millis(200));
    assert!(stranger.try_wait().unwrap().is_none(), "the stranger lives");
    assert!(alive(1));
    stranger.kill().unwrap();
    stranger.wait().unwrap();

    let warnings: Vec<String> = journal(&events)
        .into_iter()
        .filter(|e| e["type"] == "session.warning" && e["data"]["warningType"] == "processes")
        .map(|e| e["data"]["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        warnings,
        [
            format!(
                "stopped 3 process(es) of tool call c1 (process group {srv}) that the previous engine left running"
            ),
            "did not stop process group 1 recorded for tool call forged1: a process group id below 2 names no group the engine started".to_owned(),
            format!(
                "did not stop process group {stranger_pid} recorded for tool call forged{stranger_pid}: its leader is not the recorded supervisor: it is not the engine's tool supervisor (its command line differs)"
            ),
        ]
    );
    assert!(!processes.exists());
}
