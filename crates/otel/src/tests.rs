//! The mapping on the fixtures, the real runtime's included, each request decoded again with
//! the official message definitions.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::PathBuf;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use turnstile_journal::{JournalReader, ReadMode};

use super::*;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

/// Every span of `bytes` (a journal) exported with `options`, and the requests' count.
fn spans_of(bytes: &[u8], options: MapOptions) -> (Vec<Span>, usize, Counts) {
    let reader = JournalReader::new("events.jsonl", BufReader::new(bytes), ReadMode::Lenient);
    let mut batcher = Batcher::new("turnstile", "test");
    let mut requests = Vec::new();
    let counts = export(reader, "fallback", options, &mut batcher, |r| {
        requests.push(r);
        Ok::<_, ()>(())
    })
    .unwrap();
    let mut spans = Vec::new();
    for request in &requests {
        let decoded = ExportTraceServiceRequest::decode(request.as_slice()).unwrap();
        for resource in decoded.resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    assert_eq!(counts.spans as usize, spans.len());
    (spans, requests.len(), counts)
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(fixture(path)).unwrap()
}

fn op(span: &Span) -> &str {
    attrs::get_str(&span.attributes, "gen_ai.operation.name").unwrap_or("")
}

fn by_id(spans: &[Span]) -> HashMap<Vec<u8>, &Span> {
    spans.iter().map(|s| (s.span_id.clone(), s)).collect()
}

fn count(spans: &[Span], operation: &str) -> usize {
    spans.iter().filter(|s| op(s) == operation).count()
}

#[test]
fn a_fixture_maps_to_requests() {
    let (spans, requests, counts) =
        spans_of(&read("multi-turn/events.jsonl"), MapOptions::default());
    assert_eq!(requests, 1);
    // Two prompts, eight model calls, eight tool calls; nothing left open.
    assert_eq!(count(&spans, "invoke_agent"), 2);
    assert_eq!(count(&spans, "chat"), 8);
    assert_eq!(count(&spans, "execute_tool"), 8);
    assert_eq!(counts.unfinished, 0);
    let ids = by_id(&spans);
    for span in &spans {
        assert!(
            span.end_time_unix_nano >= span.start_time_unix_nano,
            "{}",
            span.name
        );
        if op(span) == "invoke_agent" {
            assert!(span.parent_span_id.is_empty());
            continue;
        }
        let parent = ids[&span.parent_span_id];
        assert_eq!(
            op(parent),
            "invoke_agent",
            "{} under {}",
            span.name,
            parent.name
        );
        assert_eq!(parent.trace_id, span.trace_id);
    }
    let chat = spans.iter().find(|s| op(s) == "chat").unwrap();
    assert_eq!(chat.name, "chat gpt-4.1");
    assert_eq!(
        attrs::get_int(&chat.attributes, "gen_ai.usage.output_tokens"),
        Some(27)
    );
    assert_eq!(
        attrs::get_str(&chat.attributes, "gen_ai.response.model"),
        Some("gpt-4.1")
    );
}

#[test]
fn the_real_runtimes_sub_agents_are_child_agents_under_their_task_calls() {
    let (spans, _, counts) = spans_of(
        &read("copilot-runtime/s1-subagents.events.jsonl"),
        MapOptions::default(),
    );
    assert_eq!(counts.unfinished, 0);
    assert_eq!(count(&spans, "invoke_agent"), 3);
    // Four main-agent turns, and the sub-agents' four answers (recorded without turn starts).
    assert_eq!(count(&spans, "chat"), 8);
    assert_eq!(count(&spans, "execute_tool"), 5);
    let ids = by_id(&spans);
    let traces: std::collections::HashSet<_> = spans.iter().map(|s| &s.trace_id).collect();
    assert_eq!(traces.len(), 1, "one interaction, one trace");
    for name in ["explore", "general-purpose"] {
        let agent = spans
            .iter()
            .find(|s| s.name == format!("invoke_agent {name}"))
            .unwrap();
        let task = ids[&agent.parent_span_id];
        assert_eq!(task.name, "execute_tool task");
        let children: Vec<_> = spans
            .iter()
            .filter(|s| s.parent_span_id == agent.span_id)
            .map(op)
            .collect();
        assert_eq!(
            children.iter().filter(|o| **o == "chat").count(),
            2,
            "{name}"
        );
        assert_eq!(children.iter().filter(|o| **o == "execute_tool").count(), 1);
    }
    let failed = spans
        .iter()
        .find(|s| attrs::get_str(&s.attributes, "gen_ai.tool.call.id") == Some("call_5"))
        .unwrap();
    assert_eq!(failed.status.as_ref().unwrap().code, 2);
    assert_eq!(
        attrs::get_str(&failed.attributes, "error.type"),
        Some("failure")
    );
}

#[test]
fn a_second_export_gives_the_same_ids_and_bytes() {
    let journal = read("subagents/events.jsonl");
    let (first, _, _) = spans_of(&journal, MapOptions::default());
    let (second, _, _) = spans_of(&journal, MapOptions::default());
    assert_eq!(first, second);
    let distinct: std::collections::HashSet<_> = first.iter().map(|s| &s.span_id).collect();
    assert_eq!(distinct.len(), first.len(), "span ids are unique");
}

#[test]
fn a_crashed_sessions_open_spans_end_marked_at_the_resume() {
    let (spans, _, counts) = spans_of(
        &read("copilot-runtime/k1-killed-resumed.events.jsonl"),
        MapOptions::default(),
    );
    let bash = spans
        .iter()
        .find(|s| s.name == "execute_tool bash")
        .unwrap();
    assert!(attrs::get_str(&bash.attributes, "error.type") == Some("unfinished"));
    assert_eq!(bash.status.as_ref().unwrap().code, 2);
    assert!(counts.unfinished >= 2, "the tool call and its interaction");
    // The prompt after the resume is an interaction of its own, finished.
    let agents: Vec<_> = spans.iter().filter(|s| op(s) == "invoke_agent").collect();
    assert_eq!(agents.len(), 2);
    assert!(agents.iter().any(|a| a.status.is_none()));
}

#[test]
fn a_torn_tail_exports_what_the_journal_holds_with_open_spans_ended_and_marked() {
    let journal = read("multi-turn/events.jsonl");
    // Cut in the middle of the line of the first tool result of the second prompt.
    let text = String::from_utf8(journal).unwrap();
    let second_prompt = text
        .match_indices("\"type\":\"user.message\"")
        .nth(1)
        .unwrap()
        .0;
    let result = second_prompt
        + text[second_prompt..]
            .find("\"type\":\"tool.execution_complete\"")
            .unwrap();
    let torn = &text.as_bytes()[..result + 40];
    let (spans, _, counts) = spans_of(torn, MapOptions::default());
    assert!(counts.torn_tail);
    let unfinished: Vec<_> = spans
        .iter()
        .filter(|s| attrs::get_str(&s.attributes, "error.type") == Some("unfinished"))
        .collect();
    assert_eq!(unfinished.len() as u64, counts.unfinished);
    assert!(unfinished.iter().any(|s| op(s) == "execute_tool"));
    assert!(unfinished.iter().any(|s| op(s) == "invoke_agent"));
    for span in &unfinished {
        assert!(span.attributes.iter().any(|a| a.key == UNFINISHED));
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
    }
    // The first interaction ended before the cut and stays finished.
    assert!(
        spans
            .iter()
            .any(|s| op(s) == "invoke_agent" && s.status.is_none())
    );
}

#[test]
fn contents_are_absent_by_default_and_present_when_opted_in() {
    let journal = read("copilot-runtime/c1-new-session.events.jsonl");
    let content_keys = [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    ];
    let (plain, _, _) = spans_of(&journal, MapOptions::default());
    for span in &plain {
        for key in content_keys {
            assert!(
                attrs::get_str(&span.attributes, key).is_none(),
                "{key} on {}",
                span.name
            );
        }
    }
    let (full, _, _) = spans_of(
        &journal,
        MapOptions {
            capture_content: true,
        },
    );
    for key in content_keys {
        assert!(
            full.iter()
                .any(|s| attrs::get_str(&s.attributes, key).is_some()),
            "{key} missing with the opt-in"
        );
    }
    let agent = full.iter().find(|s| op(s) == "invoke_agent").unwrap();
    let input: serde_json::Value =
        serde_json::from_str(attrs::get_str(&agent.attributes, "gen_ai.input.messages").unwrap())
            .unwrap();
    assert_eq!(input[0]["role"], "user");
    assert!(input[0]["parts"][0]["content"].as_str().unwrap().len() > 3);
}

#[test]
fn the_long_session_goes_out_in_bounded_requests() {
    let (spans, requests, counts) =
        spans_of(&read("long-session/events.jsonl"), MapOptions::default());
    assert_eq!(count(&spans, "chat"), 2002);
    assert_eq!(count(&spans, "execute_tool"), 2000);
    assert_eq!(count(&spans, "invoke_agent"), 2);
    assert_eq!(counts.unfinished, 0);
    assert_eq!(requests, spans.len().div_ceil(MAX_SPANS_PER_REQUEST));
}
