//! Sub-agents through `task` against a scripted model on 127.0.0.1: the sub-agent's own model
//! calls (system prompt, tool subset), its events in the session's journal under its
//! `agentId`, the answer the main agent's model reads, and a main conversation that folds
//! without the sub-agent's messages.

use crate::common;

use common::Fixture;
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::{Outcome, SendOptions, SessionHandle};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn data(e: &Event) -> Value {
    serde_json::from_str(e.data.get()).unwrap()
}

fn task(agent_type: &str, prompt: &str) -> Value {
    json!({"description": "Ask a helper", "prompt": prompt, "agent_type": agent_type, "name": "helper"})
}

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

/// A session run against `script` (with `files` in its working directory): one message,
/// sent and run to its end, then the session shut down.
struct Ran {
    fx: Fixture,
    session: SessionHandle,
    outcome: Outcome,
}

async fn run_once(script: Script, prompt: &str, files: impl FnOnce(&std::path::Path)) -> Ran {
    let fx = Fixture::start(script, files).await;
    let session = SessionHandle::create(&fx.root, None, fx.base_parts(|_| {})).unwrap();
    let (_, done) = session.send(prompt, SendOptions::default()).unwrap();
    let outcome = done.await.unwrap();
    session.shutdown().await.unwrap();
    Ran {
        fx,
        session,
        outcome,
    }
}

#[tokio::test]
async fn an_explore_agent_answers_the_main_agent_through_its_own_calls() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(
            "task",
            task("explore", "What is the first line of notes.txt?"),
        ))
        .respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": "notes.txt"}),
        ))
        .respond(ScriptedResponse::text("The first line is: alpha"))
        .respond(ScriptedResponse::text("alpha it is"));
    let Ran {
        fx,
        session,
        outcome,
    } = run_once(script, "ask a helper", |dir| {
        std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    })
    .await;
    assert_eq!(outcome, Outcome::Idle);

    let requests = fx.server.requests();
    assert_eq!(requests.len(), 4);
    // The sub-agent's calls: its own system prompt and task, the explore tools only.
    for sub in &requests[1..3] {
        let messages = sub["messages"].as_array().unwrap();
        assert!(
            messages[0]["content"]
                .as_str()
                .unwrap()
                .starts_with("You are an exploration sub-agent"),
            "{sub}"
        );
        assert!(
            messages[1]["content"]
                .as_str()
                .unwrap()
                .ends_with("\n\nWhat is the first line of notes.txt?")
        );
        assert_eq!(
            tool_names(sub),
            [
                "bash",
                "read_bash",
                "stop_bash",
                "list_bash",
                "view",
                "grep",
                "glob"
            ]
        );
    }
    assert_eq!(
        requests[2]["messages"][3]["content"], "1. alpha\n2. beta\n3. ",
        "the sub-agent reads its own tool result"
    );
    // The main agent's next call sees the sub-agent's answer as the task result, and none of
    // the sub-agent's messages.
    let main = requests[3]["messages"].as_array().unwrap();
    let roles: Vec<&str> = main.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(main[3]["content"], "The first line is: alpha");
    assert!(tool_names(&requests[0]).contains(&"task".to_owned()));

    let events = fx.journal(session.id());
    let call_id = data(
        events
            .iter()
            .find(|e| e.event_type.as_str() == "assistant.message")
            .unwrap(),
    )["toolRequests"][0]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    let of_child: Vec<&str> = events
        .iter()
        .filter(|e| e.agent_id.as_deref() == Some(call_id.as_str()))
        .map(|e| e.event_type.as_str())
        .collect();
    assert_eq!(
        of_child,
        [
            "subagent.started",
            "system.message",
            "user.message",
            "assistant.turn_start",
            "assistant.message",
            "tool.execution_start",
            "tool.execution_complete",
            "assistant.turn_end",
            "assistant.turn_start",
            "assistant.message",
            "assistant.turn_end",
            "subagent.completed",
        ]
    );
    let completed = events
        .iter()
        .find(|e| e.event_type.as_str() == "subagent.completed")
        .unwrap();
    assert_eq!(data(completed)["totalToolCalls"], 1);
    let task_result = events
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete" && e.agent_id.is_none())
        .unwrap();
    assert_eq!(
        data(task_result)["result"]["content"],
        "The first line is: alpha"
    );

    // Every model request is a recorded turn (two of them the sub-agent's), and the journal
    // folds back to the main conversation alone.
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns as usize, requests.len(), "{report:#?}");
    assert_eq!(report.agent_turns.get(&call_id), Some(&2), "{report:#?}");
    assert_eq!(report.agent_turns.len(), 1);
    assert!(
        report
            .render_table()
            .contains(&format!("main 2, {call_id} 2"))
    );
    let state = turnstile_replay::fold_file(&fx.root.session(session.id()).events).unwrap();
    let folded = turnstile_loop::session::request_messages(&state.state);
    assert_eq!(folded.len(), 5, "{folded:#?}");
}

#[tokio::test]
async fn the_review_and_research_agents_get_their_own_prompts_tools_and_names() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call(
            "task",
            task("code-review", "Review the change."),
        ))
        .respond(ScriptedResponse::text("No problems."))
        .respond(ScriptedResponse::tool_call(
            "task",
            task("research", "What is notes.txt about?"),
        ))
        .respond(ScriptedResponse::text("Notes."))
        .respond(ScriptedResponse::tool_call(
            "task",
            task("security-review", "Look for secrets."),
        ))
        .respond(ScriptedResponse::text("None."))
        .respond(ScriptedResponse::text("All done."));
    let Ran {
        fx,
        session,
        outcome,
    } = run_once(script, "review, research, audit", |_| {}).await;
    assert_eq!(outcome, Outcome::Idle);
    let requests = fx.server.requests();
    assert_eq!(requests.len(), 7);
    let system = |r: &Value| r["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system(&requests[1]).starts_with("You are a code review sub-agent"));
    assert!(system(&requests[3]).starts_with("You are a research sub-agent"));
    assert!(system(&requests[5]).starts_with("You are a security review sub-agent"));
    assert_eq!(
        tool_names(&requests[3]),
        ["view", "web_fetch", "grep", "glob"],
        "the research agent reads and fetches only"
    );
    for reviewer in [&requests[1], &requests[5]] {
        let tools = tool_names(reviewer);
        assert!(tools.contains(&"bash".to_owned()) && tools.contains(&"edit".to_owned()));
        assert!(!tools.contains(&"task".to_owned()), "no nesting");
    }
    // The main agent reads each agent's answer as its task's result.
    let main = requests[6]["messages"].as_array().unwrap();
    let results: Vec<&str> = main
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["No problems.", "Notes.", "None."]);
    let started: Vec<(String, String)> = of_type(&fx.journal(session.id()), "subagent.started")
        .into_iter()
        .map(|e| {
            let d = data(e);
            (
                d["agentName"].as_str().unwrap().to_owned(),
                d["agentDisplayName"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        started,
        [
            ("code-review".to_owned(), "Code Review Agent".to_owned()),
            ("research".to_owned(), "Research Agent".to_owned()),
            (
                "security-review".to_owned(),
                "Security Review Agent".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn a_sub_agent_that_fails_or_is_misnamed_gives_the_main_agent_a_clear_failure() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("task", task("nope", "x")))
        .respond(ScriptedResponse::tool_call(
            "task",
            task("explore", "edit it"),
        ))
        .respond(ScriptedResponse::tool_call(
            "edit",
            json!({"path": "a", "old_str": "x", "new_str": "y"}),
        ))
        .respond(ScriptedResponse::text("I could not edit."))
        .respond(ScriptedResponse::text("done"));
    let Ran {
        fx,
        session,
        outcome,
    } = run_once(script, "go", |_| {}).await;
    assert_eq!(outcome, Outcome::Idle);
    let requests = fx.server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        requests[1]["messages"][3]["content"],
        "Unknown agent_type: nope. Valid types are: explore, task, general-purpose, code-review, research, security-review"
    );
    // The explore agent has no edit tool: its call is answered with the tools it has.
    assert_eq!(
        requests[3]["messages"][3]["content"],
        "Tool 'edit' does not exist. Available tools that can be called are bash, read_bash, stop_bash, list_bash, view, grep, glob."
    );
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns as usize, requests.len());
}

fn of_type<'a>(events: &'a [Event], ty: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == ty)
        .collect()
}

#[tokio::test]
async fn a_failed_model_call_ends_the_sub_agent_and_the_main_agent_reads_why() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("task", task("explore", "look")))
        .respond(ScriptedResponse::error_message(400, "bad request"))
        .respond(ScriptedResponse::text("it failed"));
    let Ran {
        fx,
        session,
        outcome,
    } = run_once(script, "go", |_| {}).await;
    assert_eq!(outcome, Outcome::Idle);
    let requests = fx.server.requests();
    assert_eq!(requests.len(), 3);
    let read = requests[2]["messages"][3]["content"].as_str().unwrap();
    assert!(
        read.starts_with("The sub-agent's model call failed: "),
        "{read}"
    );
    let events = fx.journal(session.id());
    let failed = of_type(&events, "subagent.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(data(failed[0])["error"], read);
    assert!(of_type(&events, "subagent.completed").is_empty());
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns as usize, requests.len());
}

#[tokio::test]
async fn an_abort_inside_a_sub_agent_interrupts_it_and_leaves_a_clean_journal() {
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("task", task("explore", "wait")))
        .respond(ScriptedResponse::tool_call(
            "bash",
            json!({"command": "touch started; sleep 30", "description": "wait"}),
        ));
    let fx = Fixture::start(script, |_| {}).await;
    let session = SessionHandle::create(&fx.root, None, fx.base_parts(|_| {})).unwrap();
    let (_, done) = session.send("go", SendOptions::default()).unwrap();
    let started = fx.work.path().join("started");
    let waited = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while !started.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the sub-agent's command never started");
    session.abort();
    assert_eq!(done.await.unwrap(), Outcome::Aborted);
    session.shutdown().await.unwrap();
    let events = fx.journal(session.id());
    assert_eq!(of_type(&events, "subagent.failed").len(), 1);
    for complete in of_type(&events, "tool.execution_complete") {
        assert_eq!(data(complete)["success"], false, "{}", data(complete));
    }
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns as usize, fx.server.requests().len());
    // The main conversation folds to a valid history: the task call has its result.
    let state = turnstile_replay::fold_file(&fx.root.session(session.id()).events).unwrap();
    let folded = turnstile_loop::session::request_messages(&state.state);
    let roles: Vec<&str> = folded
        .iter()
        .map(|m| match m {
            turnstile_providers::ChatMessage::System { .. } => "system",
            turnstile_providers::ChatMessage::User { .. } => "user",
            turnstile_providers::ChatMessage::Assistant { .. } => "assistant",
            turnstile_providers::ChatMessage::Tool { .. } => "tool",
        })
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
}

fn roles(messages: &[turnstile_providers::ChatMessage]) -> Vec<&'static str> {
    messages
        .iter()
        .map(|m| match m {
            turnstile_providers::ChatMessage::System { .. } => "system",
            turnstile_providers::ChatMessage::User { .. } => "user",
            turnstile_providers::ChatMessage::Assistant { .. } => "assistant",
            turnstile_providers::ChatMessage::Tool { .. } => "tool",
        })
        .collect()
}

/// The explore agent's system prompt starts so (its answers are scripted for it alone).
const EXPLORER: &str = "You are an exploration sub-agent";

/// The background run the tests below share: the main agent starts an explore agent in
/// background mode and goes on (its next call is made while the agent works: the agent's
/// first answer is held until it arrives), waits for it with `read_agent`, sends it a
/// follow-up with `write_agent` beside `list_agents`, and answers while the agent works on
/// it; the agent going idle wakes the main agent, which reads both rounds and answers.
fn background_script() -> Script {
    let mut start = task("explore", "What is the first line of notes.txt?");
    start["mode"] = json!("background");
    start["name"] = json!("reader");
    Script::new()
        .respond(ScriptedResponse::tool_call("task", start))
        .respond(
            ScriptedResponse::tool_call("view", json!({"path": "notes.txt"}))
                .for_system(EXPLORER)
                .after_requests(3),
        )
        .respond(ScriptedResponse::text("The first line is: alpha").for_system(EXPLORER))
        .respond(ScriptedResponse::tool_call(
            "read_agent",
            json!({"agent_id": "reader", "wait": true}),
        ))
        .respond(
            ScriptedResponse::tool_call(
                "write_agent",
                json!({"agent_id": "reader", "message": "And the second line?"}),
            )
            .and_tool_call("list_agents", json!({})),
        )
        .respond(
            ScriptedResponse::text("The second line is: beta")
                .for_system(EXPLORER)
                .after_requests(7),
        )
        .respond(ScriptedResponse::text("Waiting for the reader."))
        .respond(ScriptedResponse::tool_call(
            "read_agent",
            json!({"agent_id": "reader"}),
        ))
        .respond(ScriptedResponse::text("alpha, then beta"))
}

/// The texts of a request's messages.
fn texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_background_agent_works_beside_the_main_agent_and_takes_follow_up_messages() {
    let Ran {
        fx,
        session,
        outcome,
    } = run_once(background_script(), "ask in the background", |dir| {
        std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    })
    .await;
    assert_eq!(outcome, Outcome::Idle);
    let requests = fx.server.requests();
    assert_eq!(requests.len(), 9);
    let (agent, main): (Vec<&Value>, Vec<&Value>) = requests
        .iter()
        .partition(|r| texts(r)[0].starts_with(EXPLORER));
    assert_eq!((agent.len(), main.len()), (3, 6));
    // The main agent's second call was made while the agent worked (its first answer was
    // held for it): the main agent went on after the `task` call.
    let second = texts(main[1]);
    assert_eq!(
        second.last().unwrap(),
        "Agent started in background with agent_id: reader. You'll be notified when it completes. Tell the user you're waiting and end your response, or continue unrelated work until notified. The agent supports multi-turn conversations — use write_agent to send follow-up messages."
    );
    let notice = "<system_notification>\nAgent \"reader\" (explore) has finished processing and is now idle. Use read_agent with agent_id \"reader\" to read the results, or write_agent to send follow-up messages.\n</system_notification>";
    let third = texts(main[2]);
    assert!(
        third[third.len() - 2].starts_with(
            "Agent is idle (waiting for messages). agent_id: reader, agent_type: explore, status: idle, description: Ask a helper, elapsed: "
        ),
        "{third:#?}"
    );
    assert!(
        third[third.len() - 2].ends_with(", total_turns: 1\n\n[Turn 0]\nThe first line is: alpha"),
        "{third:#?}"
    );
    assert_eq!(third.last().unwrap(), notice);
    let fourth = texts(main[3]);
    assert_eq!(
        fourth[fourth.len() - 2],
        "Message delivered to agent reader. Use read_agent to check the agent's response."
    );
    let listed = &fourth[fourth.len() - 1];
    assert!(
        listed.starts_with(
            "Background agents:\n\nRunning (1):\n  🔄 reader: explore - \"Ask a helper\" ("
        ),
        "{listed}"
    );
    assert!(
        listed.ends_with(&format!("s, owner: {})", session.id())),
        "{listed}"
    );
    // The agent's follow-up round continues its own conversation with the message.
    let round_two = texts(agent[2]);
    assert_eq!(round_two.len(), 6, "{round_two:#?}");
    assert_eq!(round_two[4], "The first line is: alpha");
    assert!(
        round_two[5].ends_with("</current_datetime>\n\nAnd the second line?"),
        "{round_two:#?}"
    );
    // The main agent answered while the agent worked; the agent going idle woke it, with the
    // notice as the last message and the call marked as the agent's.
    let woken = texts(main[4]);
    assert_eq!(woken[woken.len() - 2], "Waiting for the reader.");
    assert_eq!(woken.last().unwrap(), notice);
    let initiators: Vec<String> = fx
        .server
        .recorded()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| {
            r.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("x-initiator"))
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        initiators.iter().filter(|i| *i == "user").count(),
        1,
        "{initiators:?}"
    );
    let last = texts(main[5]);
    assert!(
        last[last.len() - 1].ends_with(
            "total_turns: 2\n\n[Turn 0]\nThe first line is: alpha\n\n[Turn 1]\n[Message]\nAnd the second line?\n\n[Response]\nThe second line is: beta"
        ),
        "{last:#?}"
    );
    let offered = tool_names(&requests[0]);
    let at = |name: &str| offered.iter().position(|n| n == name).unwrap();
    assert!(at("sql") < at("read_agent") && at("list_agents") < at("write_agent"));
    assert!(at("write_agent") < at("grep"));
    assert!(!tool_names(agent[0]).contains(&"write_agent".to_owned()));

    // The journal: one start and one completion of the agent (its first round), its
    // follow-up as a user message of its own, and a notice each time it went idle.
    let events = fx.journal(session.id());
    let call_id = data(of_type(&events, "assistant.message")[0])["toolRequests"][0]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    let started = of_type(&events, "subagent.started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].agent_id.as_deref(), Some(call_id.as_str()));
    assert_eq!(of_type(&events, "subagent.completed").len(), 1);
    let follow_up: Vec<&Event> = of_type(&events, "user.message")
        .into_iter()
        .filter(|e| e.agent_id.as_deref() == Some(call_id.as_str()))
        .collect();
    assert_eq!(follow_up.len(), 2);
    assert_eq!(data(follow_up[1])["content"], "And the second line?");
    assert_eq!(data(follow_up[1])["delivery"], "idle");
    let notes = of_type(&events, "system.notification");
    assert_eq!(notes.len(), 2);
    for note in notes {
        assert_eq!(
            data(note)["kind"],
            json!({"type": "agent_idle", "agentId": "reader", "agentType": "explore", "description": "Ask a helper"})
        );
    }
    // The audit counts every model call, three of them the agent's.
    let report = fx.audit_clean(session.id());
    assert_eq!(report.turns as usize, requests.len(), "{report:#?}");
    assert_eq!(report.agent_turns.get(&call_id), Some(&3), "{report:#?}");
    assert_eq!(report.agent_turns.len(), 1);
    // The fold gives the main conversation with each notice where the model read it.
    let state = turnstile_replay::fold_file(&fx.root.session(session.id()).events).unwrap();
    let folded = turnstile_loop::session::request_messages(&state.state);
    let folded_texts: Vec<String> = folded
        .iter()
        .map(|m| match m {
            turnstile_providers::ChatMessage::User { content, .. } => content.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        folded_texts.iter().filter(|t| t.as_str() == notice).count(),
        2,
        "{folded:#?}"
    );
    assert_eq!(roles(&folded).last(), Some(&"assistant"));
}

#[tokio::test]
async fn an_abort_while_the_main_agent_waits_for_its_agent_stops_both() {
    let mut start = task("explore", "What is the first line of notes.txt?");
    start["mode"] = json!("background");
    start["name"] = json!("sleeper");
    // The agent's only call never answers; the main agent answers and waits for it.
    let script = Script::new()
        .respond(ScriptedResponse::tool_call("task", start))
        .respond(ScriptedResponse::text("never").for_system(EXPLORER).hang())
        .respond(ScriptedResponse::text("Waiting."));
    let fx = Fixture::start(script, |_| {}).await;
    let session = SessionHandle::create(&fx.root, None, fx.base_parts(|_| {})).unwrap();
    let (_, done) = session.send("wait for it", SendOptions::default()).unwrap();
    // Aborted once both calls have reached the server and the main agent has answered.
    while fx.server.requests().len() < 3 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    while !fx
        .journal(session.id())
        .iter()
        .any(|e| e.event_type.as_str() == "assistant.message" && data(e)["content"] == "Waiting.")
    {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    session.abort();
    assert_eq!(done.await.unwrap(), Outcome::Aborted);
    session.shutdown().await.unwrap();
    let events = fx.journal(session.id());
    assert_eq!(of_type(&events, "abort").len(), 1);
    assert_eq!(of_type(&events, "subagent.failed").len(), 1);
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn a_resume_after_a_crash_inside_a_background_agent_closes_its_turn_and_call() {
    let Ran { fx, session, .. } = run_once(background_script(), "ask in the background", |dir| {
        std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    })
    .await;
    let id = session.id();
    drop(session);
    // The journal as a crash while the agent's view call ran leaves it: cut just after the
    // call's start (the checkpoints and other files of the session go with the crash).
    let paths = fx.root.session(id);
    let text = std::fs::read_to_string(&paths.events).unwrap();
    let mut kept = String::new();
    let mut view_call = None;
    for line in text.lines() {
        kept.push_str(line);
        kept.push('\n');
        let event: Value = serde_json::from_str(line).unwrap();
        if event["type"] == "tool.execution_start"
            && event["agentId"].is_string()
            && event["data"]["toolName"] == "view"
        {
            view_call = event["data"]["toolCallId"].as_str().map(str::to_owned);
            break;
        }
    }
    let view_call = view_call.expect("the agent's view call");
    for entry in std::fs::read_dir(&paths.dir).unwrap() {
        let path = entry.unwrap().path();
        if path != paths.events && path != paths.lock && path.is_file() {
            std::fs::remove_file(path).unwrap();
        }
    }
    std::fs::write(&paths.events, kept).unwrap();

    let (resumed, report) = SessionHandle::resume(&fx.root, id, fx.base_parts(|_| {})).unwrap();
    assert!(
        report.closed_tool_calls.contains(&view_call),
        "{:?}",
        report.closed_tool_calls
    );
    resumed.shutdown().await.unwrap();
    // Every turn and call of both agents is closed, and the audit finds nothing amiss.
    let events = fx.journal(id);
    let agent = events
        .iter()
        .find(|e| e.event_type.as_str() == "subagent.started")
        .and_then(|e| e.agent_id.clone())
        .unwrap();
    for who in [None, Some(agent.as_str())] {
        let count = |ty: &str| {
            events
                .iter()
                .filter(|e| e.event_type.as_str() == ty && e.agent_id.as_deref() == who)
                .count()
        };
        assert_eq!(
            count("assistant.turn_start"),
            count("assistant.turn_end"),
            "{who:?}"
        );
        assert_eq!(
            count("tool.execution_start"),
            count("tool.execution_complete"),
            "{who:?}"
        );
    }
    fx.audit_clean(id);
    // The main conversation folds to a valid history: every call has its result (the main
    // agent's `read_agent` may or may not have started when the agent's call was cut).
    let state = turnstile_replay::fold_file(&paths.events).unwrap();
    let folded = turnstile_loop::session::request_messages(&state.state);
    let shape = roles(&folded);
    assert!(
        shape == ["system", "user", "assistant", "tool"]
            || shape == ["system", "user", "assistant", "tool", "assistant", "tool"],
        "{folded:#?}"
    );
}
