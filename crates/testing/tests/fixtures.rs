//! Recorded sessions as tests, the way a project's own test suite uses this crate: load a
//! fixture, replay it against a working dir, assert on the divergences.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use turnstile_testing::{DivergenceKind, Fixture, Profile, discover};
use turnstile_tools::ToolRegistry;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn load(name: &str) -> Fixture {
    Fixture::load(fixtures().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_recorded_multi_turn_session_replays_exactly() {
    let fixture = load("multi-turn");
    assert_eq!(fixture.profile(), Profile::Strict);
    assert_eq!(fixture.prompts().len(), 2);
    let report = fixture.check().unwrap();
    assert!(report.passed(), "{report}");
    assert_eq!(report.llm_calls, 8);
    assert_eq!(report.compared, fixture.lines().len());
}

#[test]
fn changing_a_file_the_recording_read_names_the_tool_result_that_differs() {
    let fixture = load("multi-turn");
    let work = tempfile::tempdir().unwrap();
    fixture.prepare_workdir(work.path()).unwrap();
    std::fs::write(
        work.path().join("inventory.csv"),
        "item,count\napples,3\npears,2\nplums,0\n",
    )
    .unwrap();
    let report = fixture.check_in(work.path()).unwrap();
    assert!(!report.passed());
    let first = report.first().unwrap();
    assert_eq!(first.kind, DivergenceKind::Field);
    assert_eq!(first.event_type, "tool.execution_complete");
    assert_eq!(first.field.as_deref(), Some("data.result.content"));
    assert_eq!(
        first.recorded_value.as_ref().and_then(|v| v.as_str()),
        Some("2. apples,3\n3. pears,0\n4. plums,7\n5. ")
    );
    assert_eq!(
        first.replayed_value.as_ref().and_then(|v| v.as_str()),
        Some("2. apples,3\n3. pears,2\n4. plums,0\n5. ")
    );
    assert_eq!((first.turn.prompt, first.turn.llm_call), (1, 2));
    let recorded = first.recorded.as_ref().unwrap();
    let replayed = first.replayed.as_ref().unwrap();
    assert_eq!(recorded.line, replayed.line);
    assert!(recorded.text.contains("pears,0"), "{}", recorded.text);
    // The text report says the same in words.
    let text = report.to_string();
    assert!(text.contains("prompt 1, LLM call 2 (turn 1)"), "{text}");
    assert!(text.contains("data.result.content"), "{text}");
}

#[test]
fn a_tool_the_recording_needs_is_reported_without_running() {
    let fixture = load("multi-turn");
    let mut tools = ToolRegistry::builtin(true);
    tools.unregister("grep");
    let report = fixture.replay().tools(tools).check().unwrap();
    let first = report.first().unwrap();
    assert_eq!(first.kind, DivergenceKind::ToolMissing);
    assert!(first.message.contains("tool `grep`"), "{}", first.message);
    assert_eq!(report.journal, None, "nothing was replayed");
    assert_eq!(first.turn.llm_call, 1);
}

#[test]
fn crash_abort_error_denial_and_hook_fixtures_replay_exactly() {
    for name in [
        "crash-resume",
        "abort",
        "model-error",
        "permission-denied",
        "hook-rewrite",
        "autopilot",
    ] {
        let report = load(name).check().unwrap();
        assert!(report.passed(), "{name}: {report}");
    }
}

#[test]
fn the_real_runtime_recordings_replay_with_the_behaviour_rules() {
    for name in ["c1.fixture.json", "r1.fixture.json"] {
        let fixture = load(&format!("copilot-runtime-replay/{name}"));
        assert_eq!(fixture.profile(), Profile::Behaviour);
        assert_eq!(fixture.recorded_cwd(), Some("/home/dev/project"));
        let report = fixture.check().unwrap();
        assert!(report.passed(), "{name}: {report}");
    }
}

#[test]
fn the_observer_sees_the_answer_stream_and_the_journal_can_be_kept() {
    let fixture = load("hook-rewrite");
    let streamed = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&streamed);
    let state = tempfile::tempdir().unwrap();
    let run = fixture
        .replay()
        .state_dir(state.path())
        .observe(move |event| {
            if event.event_type.as_str() == "assistant.message_delta" {
                let data: serde_json::Value = serde_json::from_str(event.data.get()).unwrap();
                sink.lock()
                    .unwrap()
                    .push_str(data["deltaContent"].as_str().unwrap_or_default());
            }
        })
        .run()
        .unwrap();
    assert!(
        streamed.lock().unwrap().contains("API_KEY=<your key here>"),
        "{}",
        streamed.lock().unwrap()
    );
    assert!(run.journal.starts_with(state.path()));
    assert!(run.journal.is_file());
    let report = turnstile_testing::check_run(&fixture, &run).unwrap();
    assert!(report.passed(), "{report}");
}

#[test]
fn discover_finds_every_fixture_of_the_corpus() {
    let found = discover(fixtures()).unwrap();
    let names: Vec<String> = found
        .iter()
        .map(|p| p.strip_prefix(fixtures()).unwrap().display().to_string())
        .collect();
    for expected in [
        "multi-turn",
        "autopilot",
        "crash-resume",
        "model-error",
        "abort",
        "permission-denied",
        "hook-rewrite",
        "long-session",
        "subagents",
        "copilot-runtime-replay/c1.fixture.json",
        "copilot-runtime-replay/r1.fixture.json",
        "copilot-runtime-replay/a2.fixture.json",
        "copilot-runtime-replay/k1.fixture.json",
        "copilot-runtime-replay/p1.fixture.json",
        "copilot-runtime-replay/s1.fixture.json",
        "copilot-runtime-replay/t1.fixture.json",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n.starts_with("copilot-runtime/")),
        "{names:?}"
    );
}

#[test]
fn a_journal_copied_while_its_session_was_open_replays_without_a_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    turnstile_testing::copy_tree(&fixtures().join("hook-rewrite"), dir.path()).unwrap();
    let journal = dir.path().join("events.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap();
    let open: Vec<&str> = text.lines().collect();
    assert!(
        open.last()
            .unwrap()
            .contains("\"type\":\"session.shutdown\"")
    );
    std::fs::write(&journal, open[..open.len() - 1].join("\n") + "\n").unwrap();
    let fixture = Fixture::load(dir.path()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = fixture.replay().state_dir(state.path()).run().unwrap();
    let replayed = turnstile_testing::read_journal(&run.journal).unwrap();
    assert_eq!(replayed.last().unwrap().event_type(), "assistant.turn_end");
    let report = turnstile_testing::check_run(&fixture, &run).unwrap();
    assert!(report.passed(), "{report}");
}
