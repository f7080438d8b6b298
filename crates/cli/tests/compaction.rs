//! Long sessions against a scripted model with a small context window: the loop compacts its
//! history before a request would pass the threshold, every request the server received stays
//! under the window, the audit counts every LLM call the server saw (summary calls included),
//! and every request is the one the journal's fold rebuilds, so a `kill -9` at any turn
//! resumes with the request the next turn would have sent. `TURNSTILE_SOAK_TURNS` makes the
//! long test longer (`make long-soak`).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use common::{Env, audit_clean};
use serde_json::{Value, json};
use turnstile_journal::{Event, JournalReader, ReadMode, StateRoot};
use turnstile_loop::{Outcome, SendOptions, SessionHandle, SessionParts};
use turnstile_replay::{SessionState, fold_file};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_testing::check_sent;

/// Files the scripted model reads in turn.
const FILES: usize = 24;

/// Writes `part<i>.txt` files of about 2 KB each.
fn write_parts(dir: &Path) {
    for i in 0..FILES {
        let text: String = (0..30)
            .map(|j| format!("file {i} line {j}: the quick brown fox jumps over the lazy dog\n"))
            .collect();
        std::fs::write(dir.join(format!("part{i}.txt")), text).unwrap();
    }
}

/// `turns` views of the parts then an answer; every summary request gets a summary.
fn reading_script(turns: usize) -> Script {
    views(turns)
        .text("I read every part.")
        .summary(ScriptedResponse::text(
            "<overview>The user asked to read the part files; the assistant viewed them one by one and noted each file's lines.</overview>",
        ))
}

/// Tokens of a request as the scripted server counts them (a quarter of the body's bytes).
fn server_tokens(body: &Value) -> u64 {
    (body.to_string().len() as u64 / 4).max(1)
}

/// Runs `cmd`, which must succeed; returns what it printed on stdout.
fn succeed(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A script viewing the first `n` parts in turn.
fn views(n: usize) -> Script {
    (0..n).fold(Script::new(), |script, t| {
        script.respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": format!("part{}.txt", t % FILES)}),
        ))
    })
}

fn journal(path: &Path) -> Vec<Event> {
    JournalReader::open(path, ReadMode::Strict)
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")).event)
        .collect()
}

/// A session with a short system prompt and only the `view` tool, so an 8 000-token window
/// holds real history.
fn small_parts(server: &ScriptedServer, work: &Path, window: u64) -> SessionParts {
    common::view_only_parts(
        server,
        work,
        "You are a careful reader. Use the view tool.",
        window,
    )
}

#[test]
fn a_long_session_in_a_small_window_stays_under_it_and_every_call_is_counted() {
    let turns: usize = std::env::var("TURNSTILE_SOAK_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(300);
    let window = 8_000;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    write_parts(work.path());
    let root = StateRoot::new(state.path().join("session-state"));
    let script = reading_script(turns).text("Second answer.");
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let started = Instant::now();
    let id = rt.block_on(async {
        let session =
            SessionHandle::create(&root, None, small_parts(&server, work.path(), window)).unwrap();
        let first = session
            .send_and_wait(
                "Read every part file, one at a time",
                SendOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(first, Outcome::Idle);
        let second = session
            .send_and_wait("And now?", SendOptions::default())
            .await
            .unwrap();
        assert_eq!(second, Outcome::Idle);
        session.shutdown().await.unwrap();
        (session.id(), session.requests_measured())
    });
    let (id, measured) = id;
    let ran = started.elapsed();
    let requests = server.requests();
    let largest = requests.iter().map(server_tokens).max().unwrap();
    assert!(
        largest < window,
        "the largest request held {largest} tokens of a {window}-token window"
    );
    let events_path = root.session(id).events;
    let report = audit_clean(&events_path);
    let summary_tokens: u64 = requests
        .iter()
        .filter(|r| r.to_string().contains("The history is being compacted"))
        .map(server_tokens)
        .sum();
    let all_tokens: u64 = requests.iter().map(server_tokens).sum();
    eprintln!(
        "{turns} turns: {} requests, {} summary calls, largest request {largest} of {window} tokens, \
         summary calls {:.1}% of the tokens sent, {:.2} ms a turn (wall, model server included)",
        requests.len(),
        report.compaction_calls,
        100.0 * summary_tokens as f64 / all_tokens as f64,
        ran.as_secs_f64() * 1000.0 / (turns + 2) as f64
    );
    assert_eq!(report.turns, turns as u64 + 2, "every turn is one LLM call");
    assert!(
        report.compaction_calls >= (turns / 20) as u64,
        "{} compactions in {turns} turns",
        report.compaction_calls
    );
    assert_eq!(
        report.turns + report.compaction_calls,
        requests.len() as u64,
        "the audit counts exactly the requests the server received"
    );
    assert_eq!(
        measured,
        report.turns + report.compaction_calls,
        "each turn's request is built and measured once, and once more after a compaction"
    );
    let events = journal(&events_path);
    let checked = check_sent(&events, &requests).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(checked.turns, turns + 2);
    assert_eq!(checked.summaries as u64, report.compaction_calls);
    // A resume loads the compacted view from the checkpoint written at shutdown.
    let started = Instant::now();
    let (loaded, load) = SessionState::load(&root.session(id).dir).unwrap();
    let load_time = started.elapsed();
    assert!(load.used_checkpoint, "{load:?}");
    let started = Instant::now();
    let folded = fold_file(&events_path).unwrap().state;
    let fold_time = started.elapsed();
    assert_eq!(loaded.conversation, folded.conversation);
    assert!(
        loaded.conversation.len() < 40,
        "{} messages",
        loaded.conversation.len()
    );
    eprintln!(
        "resume state: checkpoint load {:.2} ms, full fold {:.1} ms ({} bytes of journal, {} messages in view)",
        load_time.as_secs_f64() * 1000.0,
        fold_time.as_secs_f64() * 1000.0,
        folded.byte_size,
        folded.conversation.len()
    );
    // The summary takes the older history's place: the last request is small again.
    let last = requests.last().unwrap();
    assert!(
        last["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Some of the conversation history has been summarized"),
        "{}",
        last["messages"][1]
    );
    assert!(
        last["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("<user_message>\nRead every part file, one at a time\n</user_message>")
    );
}

#[test]
fn a_failed_summary_call_is_a_warning_and_the_session_goes_on() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    write_parts(work.path());
    let root = StateRoot::new(state.path().join("session-state"));
    let mut script = Script::new();
    for t in 0..4 {
        script = script.respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": format!("part{t}.txt")}),
        ));
    }
    let script = script
        .text("Done.")
        .summary(ScriptedResponse::error_message(
            400,
            "the summary model is down",
        ));
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    // A window the views pass the threshold of (the scripted server refuses no size).
    let id = rt.block_on(async {
        let session =
            SessionHandle::create(&root, None, small_parts(&server, work.path(), 1_500)).unwrap();
        let outcome = session
            .send_and_wait("Read four parts", SendOptions::default())
            .await
            .unwrap();
        assert_eq!(outcome, Outcome::Idle, "the session is not lost");
        session.shutdown().await.unwrap();
        session.id()
    });
    let events = journal(&root.session(id).events);
    let warnings: Vec<Value> = events
        .iter()
        .filter(|e| e.event_type.as_str() == "session.warning")
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w["warningType"] == "compaction"
            && w["message"]
                .as_str()
                .unwrap()
                .contains("the summary model is down")),
        "{warnings:?}"
    );
    let failed = events
        .iter()
        .find(|e| e.event_type.as_str() == "session.compaction_complete")
        .map(|e| serde_json::from_str::<Value>(e.data.get()).unwrap())
        .expect("the failed compaction is recorded");
    assert_eq!(failed["success"], false);
    // The runtime's fields of a failure.
    assert_eq!(failed["statusCode"], 400);
    assert_eq!(failed["trigger"], "threshold");
    assert!(failed.get("preCompactionTokens").is_none(), "{failed}");
    let report = audit_clean(&root.session(id).events);
    assert_eq!(
        report.turns + report.compaction_calls,
        server.requests().len() as u64,
        "a failed summary call is still counted"
    );
    check_sent(&events, &server.requests()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn after_a_failed_summary_call_the_threshold_waits_five_turns_then_ten() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.txt"), "ok\n").unwrap();
    let root = StateRoot::new(state.path().join("session-state"));
    // A prompt past the threshold (80 % of 8 000 tokens) from the first turn; each turn then
    // adds a few dozen tokens.
    // Each word is one `o200k_base` token of 4 bytes, so the loop's count and the scripted
    // server's (a quarter of the bytes) agree from the first turn.
    let prompt = format!(
        "Look at tiny.txt ten times.{}",
        " the and for you".repeat(1_650)
    );
    let turns = 11;
    let script = (0..turns - 1)
        .fold(Script::new(), |script, _| {
            script.respond(ScriptedResponse::tool_call(
                "view",
                json!({"path": "tiny.txt"}),
            ))
        })
        .text("Looked.")
        .summary(ScriptedResponse::error_message(
            400,
            "the summary model is down",
        ));
    let server = rt.block_on(ScriptedServer::start(script)).unwrap();
    let (id, measured) = rt.block_on(async {
        let session =
            SessionHandle::create(&root, None, small_parts(&server, work.path(), 8_000)).unwrap();
        let outcome = session
            .send_and_wait(&prompt, SendOptions::default())
            .await
            .unwrap();
        assert_eq!(outcome, Outcome::Idle);
        session.shutdown().await.unwrap();
        (session.id(), session.requests_measured())
    });
    let requests = server.requests();
    let asked: Vec<usize> = requests
        .iter()
        .filter(|r| r.get("messages").is_some())
        .enumerate()
        .filter(|(_, r)| r.to_string().contains("The history is being compacted"))
        .map(|(i, _)| i)
        .collect();
    // Turns 0 and 5 try; the second failure doubles the wait to ten turns, past turn 10.
    // Each summary request comes right before its turn's request.
    assert_eq!(asked, [0, 6], "summary requests at the server");
    let report = audit_clean(&root.session(id).events);
    assert_eq!(report.turns, turns);
    assert_eq!(report.compaction_calls, 2);
    assert_eq!(
        measured, turns,
        "no compaction succeeded: one measure per turn"
    );
    let events = journal(&root.session(id).events);
    check_sent(&events, &requests).unwrap_or_else(|e| panic!("{e}"));
}

/// Reads `--json` lines until a `tool.execution_start` of `tool`; keeps draining after.
fn wait_for_tool(child: &mut std::process::Child, tool: &str) {
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut found = false;
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["type"] == "tool.execution_start" && v["data"]["toolName"] == tool {
            found = true;
            break;
        }
    }
    assert!(found, "the run ended before a {tool} call started");
    std::thread::spawn(move || for _ in lines {});
}

#[test]
fn kill_9_at_a_random_turn_then_resume_sends_what_the_journal_rebuilds() {
    // A different turn each run; the seed is printed so a failure can be replayed.
    let seed: u64 = std::env::var("TURNSTILE_KILL_TURN")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos() as u64)
                .unwrap_or(7)
        });
    let turns = 40;
    let kill_at = 2 + (seed % (turns as u64 - 4)) as usize;
    eprintln!("killing at turn {kill_at} (TURNSTILE_KILL_TURN={seed})");
    let env = Env::new();
    write_parts(env.work.path());
    // Views, then at the chosen turn a command that runs until it is killed.
    let script = views(kill_at)
        .respond(ScriptedResponse::tool_call(
            "bash",
            json!({"command": "sleep 60", "description": "wait"}),
        ))
        .summary(ScriptedResponse::text(
            "<overview>Parts were read.</overview>",
        ));
    let first = env.server(script);
    // The engine's own system prompt and tools take most of a small window: give room.
    let window = "24000";
    let mut child = env
        .cmd(
            &first,
            &[
                "run",
                "--json",
                "--allow-all-tools",
                "--durability",
                "event",
                "--context-window",
                window,
                "Read every part file, one at a time",
            ],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed inside a tool: every LLM call it recorded was received, none is on its way.
    wait_for_tool(&mut child, "bash");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (id, events_path) = env.only_session();
    let before = journal(&events_path);

    let second = env.server(reading_script(turns));
    succeed(&mut env.cmd(
        &second,
        &[
            "resume",
            "--allow-all-tools",
            "--context-window",
            window,
            &id[..8],
            "Go on reading",
        ],
    ));
    let events = journal(&events_path);
    assert_eq!(
        &events[..before.len()],
        &before[..],
        "the journal only grew"
    );
    // The requests of both processes, in order, are the LLM calls of the one journal: the
    // first one after the resume included.
    let mut requests = first.requests();
    let killed_requests = requests.len();
    requests.extend(second.requests());
    let checked = check_sent(&events, &requests).unwrap_or_else(|e| panic!("{e}"));
    assert!(checked.turns > kill_at, "{checked:?}");
    assert!(second.requests().len() > 1, "the resumed process went on");
    let resumed_first = &requests[killed_requests]["messages"];
    assert!(
        resumed_first
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "user"
                && m["content"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Go on reading"))
            || resumed_first
                .as_array()
                .unwrap()
                .last()
                .is_some_and(|m| m["content"].as_str().unwrap_or("").contains("Summarize")),
        "the first request after the resume carries the new prompt (or is a summary call)"
    );
    let report = audit_clean(&events_path);
    assert_eq!(report.resumes, 1);
    assert_eq!(
        report.turns + report.compaction_calls,
        requests.len() as u64
    );
}

#[test]
fn turnstile_compact_summarizes_on_demand_and_the_next_request_carries_it() {
    let env = Env::new();
    write_parts(env.work.path());
    let first = env.server(views(3).text("Read three."));
    succeed(&mut env.cmd(&first, &["run", "--allow-all-tools", "Read three parts"]));
    let (id, events_path) = env.only_session();

    let summaries = env.server(Script::new().summary(ScriptedResponse::text(
        "<overview>Three parts were read.</overview>",
    )));
    let printed = succeed(&mut env.cmd(
        &summaries,
        &["compact", &id[..8], "--instructions", "the parts read"],
    ));
    assert!(printed.contains("replaced by a summary"), "{printed}");
    let summary_request = &summaries.requests()[0];
    // As the runtime's: the tools are offered (the history holds their calls), none may be
    // called.
    assert_eq!(summary_request["tool_choice"], "none");
    assert!(!summary_request["tools"].as_array().unwrap().is_empty());
    let instruction = summary_request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        instruction.ends_with("Focus the summary on: the parts read"),
        "{instruction}"
    );

    let after = env.server(Script::new().text("Fine."));
    succeed(&mut env.cmd(&after, &["resume", &id[..8], "What now?"]));
    let sent = &after.requests()[0]["messages"];
    assert!(
        sent[1]["content"]
            .as_str()
            .unwrap()
            .contains("<summary>\n<overview>Three parts were read.</overview>\n</summary>"),
        "{sent}"
    );
    let events = journal(&events_path);
    let complete: Value = events
        .iter()
        .find(|e| e.event_type.as_str() == "session.compaction_complete")
        .map(|e| serde_json::from_str(e.data.get()).unwrap())
        .unwrap();
    assert_eq!(complete["trigger"], "manual");
    assert_eq!(complete["customInstructions"], "the parts read");
    let mut requests = first.requests();
    requests.extend(summaries.requests());
    requests.extend(after.requests());
    check_sent(&events, &requests).unwrap_or_else(|e| panic!("{e}"));
    audit_clean(&events_path);
}
