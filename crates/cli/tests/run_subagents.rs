//! Sub-agents through `turnstile run` on a scripted model at 127.0.0.1: two explore agents
//! started by `task` in one turn, then one in background mode followed with `read_agent`,
//! `list_agents` and a `write_agent` follow-up; `turnstile audit --json` on the journal counts
//! every model request the server received, in total and per agent.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use common::{Env, call, journal_values, tool_result};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn task(name: &str, prompt: &str) -> Value {
    json!({"description": "Read a file", "prompt": prompt, "agent_type": "explore", "name": name})
}

/// The explore agents' system prompt starts so (their answers are scripted for them).
const EXPLORER: &str = "You are an exploration sub-agent";

fn system_prompt(request: &Value) -> &str {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn sub_agents_answer_the_main_agent_and_the_audit_counts_every_model_call() {
    let env = Env::new();
    let mut background = task("reader", "What does alpha.txt say?");
    background["mode"] = json!("background");
    let server = env.server(
        Script::new()
            // Two agents at once: each answers with its one model call (in either order).
            .respond(
                call("t1", "task", task("first", "Say one.")).and_tool_call_with_id(
                    "t2",
                    "task",
                    task("second", "Say two."),
                ),
            )
            .respond(ScriptedResponse::text("answer A").for_system(EXPLORER))
            .respond(ScriptedResponse::text("answer B").for_system(EXPLORER))
            // One in background: it views the file (its answer held until the main agent's
            // next call has arrived: the main agent goes on meanwhile), then answers.
            .respond(call("t3", "task", background))
            .respond(
                call("v1", "view", json!({"path": "alpha.txt"}))
                    .for_system(EXPLORER)
                    .after_requests(6),
            )
            .respond(ScriptedResponse::text("It says alpha.").for_system(EXPLORER))
            .respond(call(
                "r1",
                "read_agent",
                json!({"agent_id": "reader", "wait": true}),
            ))
            .respond(call("l1", "list_agents", json!({})))
            // A follow-up: the idle agent answers it as its second round.
            .respond(call(
                "w1",
                "write_agent",
                json!({"agent_id": "reader", "message": "And in one word?"}),
            ))
            .respond(ScriptedResponse::text("Alpha.").for_system(EXPLORER))
            .respond(call(
                "r2",
                "read_agent",
                json!({"agent_id": "reader", "wait": true, "since_turn": 1}),
            ))
            .text("Done."),
    );
    env.run_ok(&server, &["run", "--allow-all-tools", "ask helpers"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 12);
    let explorer = |i: usize| system_prompt(&requests[i]).starts_with(EXPLORER);
    let agents: Vec<usize> = (0..12).filter(|&i| explorer(i)).collect();
    assert_eq!(agents.len(), 5, "{agents:?}");
    assert_eq!(
        agents[..2],
        [1, 2],
        "the sync agents' calls come within their task calls"
    );
    assert_eq!(
        agents[3], 6,
        "the background agent's answer waited for the main agent's call"
    );

    // The two sync agents' answers are the results of their task calls.
    let last = requests.last().unwrap();
    let mut answers = [tool_result(last, "t1"), tool_result(last, "t2")];
    answers.sort();
    assert_eq!(answers, ["answer A", "answer B"]);
    assert_eq!(
        tool_result(last, "t3"),
        "Agent started in background with agent_id: reader. You'll be notified when it completes. Tell the user you're waiting and end your response, or continue unrelated work until notified. The agent supports multi-turn conversations — use write_agent to send follow-up messages."
    );
    assert_eq!(
        requests[6]["messages"][3]["content"], "1. alpha\n2. ",
        "the background agent reads its own view"
    );
    let read = tool_result(last, "r1");
    assert!(
        read.starts_with(
            "Agent is idle (waiting for messages). agent_id: reader, agent_type: explore, status: idle, description: Read a file, elapsed: "
        ),
        "{read}"
    );
    assert!(
        read.ends_with(", total_turns: 1\n\n[Turn 0]\nIt says alpha."),
        "{read}"
    );
    let listed = tool_result(last, "l1");
    assert!(
        listed.starts_with(
            "Background agents:\n\nIdle (3):\n  💤 first: explore - \"Read a file\" ("
        ),
        "{listed}"
    );

    // The follow-up reached the agent with its first round's conversation, and its answer
    // is the second round read_agent gives.
    assert_eq!(
        tool_result(last, "w1"),
        "Message delivered to agent reader. Use read_agent to check the agent's response."
    );
    let round_two = requests[agents[4]]["messages"].as_array().unwrap();
    assert_eq!(round_two.len(), 6, "{round_two:#?}");
    assert!(
        round_two[5]["content"]
            .as_str()
            .unwrap()
            .ends_with("</current_datetime>\n\nAnd in one word?")
    );
    let read = tool_result(last, "r2");
    assert!(
        read.ends_with(
            ", total_turns: 2\n\n[Turn 1]\n[Message]\nAnd in one word?\n\n[Response]\nAlpha."
        ),
        "{read}"
    );

    // Each agent's events carry its task call's id, framed by subagent.started/completed.
    let (id, events) = env.only_session();
    let events = journal_values(&events);
    let framed = |ty: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e["type"] == ty)
            .filter_map(|e| e["agentId"].as_str())
            .collect()
    };
    let mut started = framed("subagent.started");
    started.sort_unstable();
    assert_eq!(started, ["t1", "t2", "t3"]);
    let mut ended = framed("subagent.completed");
    ended.sort_unstable();
    assert_eq!(ended, ["t1", "t2", "t3"]);

    // The audit, through the command: every request the server received is a turn, each
    // agent's its own.
    let out = Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(env.state.path())
        .args(["audit", "--json", &id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["violationCount"], 0, "{report:#}");
    assert_eq!(report["turns"], requests.len(), "{report:#}");
    let per_agent: BTreeMap<String, u64> =
        serde_json::from_value(report["agentTurns"].clone()).unwrap();
    assert_eq!(
        per_agent,
        BTreeMap::from([("t1".into(), 1), ("t2".into(), 1), ("t3".into(), 3)])
    );
    let main_requests = (0..12).filter(|&i| !explorer(i)).count() as u64;
    assert_eq!(
        main_requests + per_agent.values().sum::<u64>(),
        requests.len() as u64
    );
    assert_eq!(report["llmCalls"], requests.len(), "{report:#}");

    // session.shutdown counts the same requests, each agent's under its id.
    let shutdown = &events
        .iter()
        .rfind(|e| e["type"] == "session.shutdown")
        .expect("a shutdown")["data"];
    let count = |metrics: &Value| -> u64 {
        metrics
            .as_object()
            .unwrap()
            .values()
            .map(|m| m["requests"]["count"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(count(&shutdown["modelMetrics"]), requests.len() as u64);
    let agents = shutdown["agentMetrics"].as_object().unwrap();
    assert_eq!(count(&agents["main"]["modelMetrics"]), main_requests);
    for (agent, n) in &per_agent {
        assert_eq!(count(&agents[agent]["modelMetrics"]), *n, "{agent}");
    }
}
