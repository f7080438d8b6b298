//! The session's bounds against a scripted model on 127.0.0.1 and real tool processes: the
//! built-in tool calls of one answer run at most `max_parallel_tools` at a time (queued in
//! request order, results in request order), sub-agents at most `max_parallel_agents` at a
//! time; a server that under-reports its prompt tokens cannot switch compaction off; and a
//! model that answers the summary request with tool calls gets its history truncated into the
//! window, with the summary retried a few times, not at every turn.
//!
//! `TURNSTILE_STRESS_CALLS` sets the number of calls in one answer (`make stress`: 1000).

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;

use common::{Fixture, data};
use serde_json::{Value, json};
use turnstile_journal::Event;
use turnstile_loop::{Outcome, SendOptions, SessionHandle};
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn of_type<'a>(events: &'a [Event], ty: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.event_type.as_str() == ty)
        .collect()
}

/// The most `start`/`end` spans open at once in `log` (lines `start N` / `end N`).
fn most_at_once(log: &str) -> usize {
    let (mut open, mut most) = (0usize, 0usize);
    for line in log.lines() {
        if line.starts_with("start") {
            open += 1;
            most = most.max(open);
        } else if line.starts_with("end") {
            open = open.saturating_sub(1);
        }
    }
    most
}

fn stress_calls(default: usize) -> usize {
    std::env::var("TURNSTILE_STRESS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn tool_calls_of_one_answer_run_under_the_bound_and_complete_in_request_order() {
    let calls = stress_calls(12);
    let bound = 3;
    let command = |i: usize| json!({"command": format!("echo start {i} >> log; sleep 0.2; echo end {i} >> log; echo result {i}"), "description": format!("call {i}")});
    let mut answer = ScriptedResponse::tool_call("bash", command(0));
    for i in 1..calls {
        answer = answer.and_tool_call("bash", command(i));
    }
    let script = Script::new().respond(answer).text("done");
    let fx = Fixture::start(script, |_| {}).await;
    let mut parts = fx.base_parts(|c| c.max_parallel_tools = bound);
    // The answer's calls within the cap on calls per answer (a stress run asks 1,000).
    let mut oc = OpenAiConfig::new(fx.server.url(), "test-model");
    oc.limits.max_tool_calls = calls.max(oc.limits.max_tool_calls);
    parts.provider = Arc::new(OpenAiProvider::new(oc).unwrap());
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let outcome = session
        .send_and_wait("run them", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    let log = std::fs::read_to_string(fx.work.path().join("log")).unwrap();
    assert_eq!(log.lines().count(), 2 * calls, "every call ran: {log}");
    let most = most_at_once(&log);
    assert!(most <= bound, "{most} ran at once, bound {bound}:\n{log}");
    // Queued in request order: call j gets a place only once j + 1 - bound calls have ended
    // (the first come first; two let go at once may start their processes in either order).
    let mut ended = 0;
    for line in log.lines() {
        if let Some(j) = line.strip_prefix("start ") {
            let j: usize = j.parse().unwrap();
            assert!(
                ended + bound > j,
                "call {j} started after only {ended} ended:\n{log}"
            );
        } else {
            ended += 1;
        }
    }
    session.shutdown().await.unwrap();
    let journal = fx.journal(session.id());
    // As the runtime: every start first, in request order, then the completions, here in
    // request order too; each result answers its own call.
    let starts = of_type(&journal, "tool.execution_start");
    let completes = of_type(&journal, "tool.execution_complete");
    assert_eq!((starts.len(), completes.len()), (calls, calls));
    let first_complete = journal
        .iter()
        .position(|e| e.event_type.as_str() == "tool.execution_complete")
        .unwrap();
    let last_start = journal
        .iter()
        .rposition(|e| e.event_type.as_str() == "tool.execution_start")
        .unwrap();
    assert!(last_start < first_complete);
    for (i, (start, complete)) in starts.iter().zip(&completes).enumerate() {
        assert_eq!(data(start)["toolCallId"], data(complete)["toolCallId"]);
        let content = data(complete)["result"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(content.contains(&format!("result {i}")), "{i}: {content}");
    }
    fx.audit_clean(session.id());
}

#[tokio::test]
async fn sub_agents_run_under_their_own_bound() {
    let agents = 5;
    let task = |i: usize| json!({"agent_type": "explore", "description": format!("look {i}"), "prompt": format!("Look at part {i}."), "name": format!("look-{i}")});
    let mut answer = ScriptedResponse::tool_call("task", task(0));
    for i in 1..agents {
        answer = answer.and_tool_call("task", task(i));
    }
    let mut script = Script::new().respond(answer);
    for i in 0..agents {
        script =
            script.respond(ScriptedResponse::text(format!("part {i} seen")).with_delay_ms(200));
    }
    let script = script.text("all seen");
    let fx = Fixture::start(script, |_| {}).await;
    let parts = fx.base_parts(|c| c.max_parallel_agents = 2);
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    let outcome = session
        .send_and_wait("look at every part", SendOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Idle);
    session.shutdown().await.unwrap();
    let journal = fx.journal(session.id());
    // In journal order, the agents between their first call and their last answer.
    let (mut open, mut most) = (HashSet::new(), 0);
    for event in &journal {
        let Some(agent) = &event.agent_id else {
            continue;
        };
        match event.event_type.as_str() {
            "assistant.turn_start" => {
                open.insert(agent.clone());
                most = most.max(open.len());
            }
            "assistant.turn_end" => {
                open.remove(agent);
            }
            _ => {}
        }
    }
    assert!(most <= 2, "{most} agents called the model at once");
    assert_eq!(of_type(&journal, "subagent.completed").len(), agents);
    fx.audit_clean(session.id());
}

/// A `bash` call whose output is about 3 000 tokens (`word ` 3 000 times): the bulk of the
/// history is tool results, as in a working session (a summary keeps the user's prompts).
fn bulky_call() -> ScriptedResponse {
    ScriptedResponse::tool_call(
        "bash",
        json!({"command": "yes word | head -n 3000 | tr '\\n' ' '", "description": "words"}),
    )
}

/// The request bodies the server received that were not summary requests.
fn turn_requests(requests: &[Value]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|r| {
            !r["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map(|m| m.to_string().contains("The history is being compacted"))
                .unwrap_or(false)
        })
        .collect()
}

/// `messages` messages, each answered by a bulky call then a text (`usage` reported on each
/// when given, the summary request answered by `summary`), in a 20 000-token window; the
/// journal, after checking every turn's request stayed near the window
/// (20 000 tokens of 5-byte words at most, where the whole history would be 16 x 15 KB of
/// tool results).
async fn window_run(
    messages: usize,
    summary: ScriptedResponse,
    usage: Option<(u64, u64)>,
) -> Vec<Event> {
    let with = |r: ScriptedResponse| match usage {
        Some((p, c)) => r.with_usage(p, c),
        None => r,
    };
    let mut script = Script::new().summary(summary);
    for n in 0..messages {
        script = script
            .respond(with(bulky_call()))
            .respond(with(ScriptedResponse::text(format!("ok {n}"))));
    }
    let fx = Fixture::start(script, |_| {}).await;
    let parts = fx.base_parts(|c| c.token_limit = Some(20_000));
    let session = SessionHandle::create(&fx.root, None, parts).unwrap();
    for n in 0..messages {
        let outcome = session
            .send_and_wait(&format!("message {n}"), SendOptions::default())
            .await
            .unwrap();
        assert_eq!(outcome, Outcome::Idle);
    }
    session.shutdown().await.unwrap();
    let requests = fx.server.requests();
    for request in turn_requests(&requests) {
        let size = request.to_string().len();
        assert!(size < 150_000, "a request of {size} bytes");
    }
    fx.audit_clean(session.id());
    fx.journal(session.id())
}

#[tokio::test]
async fn a_server_under_reporting_prompt_tokens_does_not_switch_compaction_off() {
    let summary = ScriptedResponse::text("Earlier: many words.").with_usage(100, 5);
    let journal = window_run(16, summary, Some((100, 5))).await;
    let compactions = of_type(&journal, "session.compaction_complete");
    assert!(
        compactions.iter().any(|e| data(e)["success"] == true),
        "no compaction ran"
    );
}

#[tokio::test]
async fn a_summary_answered_with_tool_calls_falls_back_to_truncation_and_backs_off() {
    let messages = 16;
    let summary = ScriptedResponse::tool_call("bash", json!({"command": "true"}));
    let journal = window_run(messages, summary, None).await;
    let failed = of_type(&journal, "session.compaction_complete")
        .into_iter()
        .filter(|e| data(e)["success"] != true)
        .count();
    let truncations = of_type(&journal, "session.truncation");
    assert!(failed >= 1, "the summary failed at least once");
    assert!(!truncations.is_empty(), "the fallback truncated");
    for t in &truncations {
        assert_eq!(data(t)["performedBy"], "BasicTruncator");
    }
    // Over the threshold from about the sixth message on, two turns a message: the summary is
    // not tried again at every one of those turns.
    let over = 2 * (messages - 5);
    assert!(failed < over / 2, "{failed} summary calls in {over} turns");
}
