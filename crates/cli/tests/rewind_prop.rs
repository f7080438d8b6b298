//! Property: for random sessions of the real loop against the scripted model, with prompts
//! (text answers and tool calls), manual compactions, rewinds to random user turns and
//! truncations to random events, every request the server received is the one the fold of
//! the journal rebuilds at its call, the audit is clean and counts every call, and a cut the
//! session refuses (an event before a compaction) writes nothing.

use std::path::Path;

use crate::common;

use proptest::prelude::*;
use serde_json::json;
use turnstile_journal::{Event, JournalReader, ReadMode, StateRoot};
use turnstile_loop::{
    CompactOptions, LoopError, Outcome, SendOptions, SessionHandle, SessionParts,
};
use turnstile_replay::{CutKind, audit_file, rewind_points, visible_events};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_testing::check_sent;

/// One step of a generated session.
#[derive(Debug, Clone)]
enum Step {
    /// A prompt whose answer first views this many files.
    Prompt(usize),
    /// A manual compaction.
    Compact,
    /// A rewind to the user turn picked by this number (modulo the turns).
    Rewind(usize),
    /// A truncation to the event picked by this number (modulo the visible events).
    Truncate(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..3).prop_map(Step::Prompt),
        1 => Just(Step::Compact),
        2 => any::<usize>().prop_map(Step::Rewind),
        2 => any::<usize>().prop_map(Step::Truncate),
    ]
}

fn parts(server: &ScriptedServer, work: &Path) -> SessionParts {
    // Large enough that only the manual compactions summarize.
    common::view_only_parts(
        server,
        work,
        "You read files with the view tool.",
        1_000_000,
    )
}

/// The answers the steps consume, in order, and a summary for every compaction.
fn script(steps: &[Step]) -> Script {
    let mut script = Script::new();
    for (n, s) in steps.iter().enumerate() {
        match s {
            Step::Prompt(views) => {
                for v in 0..*views {
                    let path = format!("file{}.txt", (n + v) % 3);
                    script =
                        script.respond(ScriptedResponse::tool_call("view", json!({"path": path})));
                }
                script = script.text(format!("Answer {n}."));
            }
            Step::Compact => {
                script = script.summary(ScriptedResponse::text(format!(
                    "<overview>Summary at step {n}.</overview>"
                )));
            }
            _ => {}
        }
    }
    script
}

fn journal(path: &Path) -> Vec<Event> {
    JournalReader::open(path, ReadMode::Strict)
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")).event)
        .collect()
}

fn run(steps: &[Step]) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    for i in 0..3 {
        std::fs::write(
            work.path().join(format!("file{i}.txt")),
            format!("file {i}\n"),
        )
        .unwrap();
    }
    let root = StateRoot::new(state.path().join("session-state"));
    let server = rt.block_on(ScriptedServer::start(script(steps))).unwrap();
    let session = rt.block_on(async {
        SessionHandle::create(&root, None, parts(&server, work.path())).unwrap()
    });
    let events_path = root.session(session.id()).events;
    rt.block_on(async {
        for (n, s) in steps.iter().enumerate() {
            match s {
                Step::Prompt(_) => {
                    let outcome = session
                        .send_and_wait(format!("Prompt {n}"), SendOptions::default())
                        .await
                        .unwrap();
                    assert_eq!(outcome, Outcome::Idle, "step {n}");
                }
                Step::Compact => {
                    session.compact(CompactOptions::default()).await.unwrap();
                }
                Step::Rewind(pick) | Step::Truncate(pick) => {
                    let visible = visible_events(journal(&events_path));
                    let (target, kind) = if let Step::Rewind(_) = s {
                        let points = rewind_points(&visible);
                        if points.is_empty() {
                            continue;
                        }
                        let p = &points[pick % points.len()];
                        (p.event_id.to_string(), CutKind::UserTurn)
                    } else {
                        if visible.is_empty() {
                            continue;
                        }
                        let e = &visible[pick % visible.len()];
                        (e.id.to_string(), CutKind::Truncate)
                    };
                    let size = std::fs::metadata(&events_path).unwrap().len();
                    match session.cut(target, kind).await {
                        Ok(_) => {}
                        // Refused (before a compaction): nothing written.
                        Err(LoopError::Rewind(_)) => {
                            assert_eq!(std::fs::metadata(&events_path).unwrap().len(), size)
                        }
                        Err(e) => panic!("step {n}: {e}"),
                    }
                }
            }
        }
        session.shutdown().await.unwrap();
    });
    let events = journal(&events_path);
    let requests = server.requests();
    check_sent(&events, &requests).map_err(TestCaseError::fail)?;
    let report = audit_file(&events_path).unwrap();
    prop_assert!(report.is_clean(), "{:?}", report.violations);
    prop_assert_eq!(
        report.turns + report.compaction_calls,
        requests.len() as u64,
        "every LLM call is counted"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_request_is_what_the_fold_rebuilds_across_rewinds_and_truncations(
        steps in proptest::collection::vec(step(), 1..14)
    ) {
        run(&steps)?;
    }
}
