//! Typed payloads against real runtime recordings and the schema: parsing a `data` object into
//! its struct and serializing it again must give the same JSON, byte for byte for recordings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use turnstile_journal::payload::*;
use turnstile_journal::{Event, EventError, EventType};

/// The event types that must have a payload struct.
const TYPED: [&str; 50] = [
    "session.start",
    "session.resume",
    "session.error",
    "session.idle",
    "session.task_complete",
    "session.shutdown",
    "user.message",
    "system.message",
    "assistant.turn_start",
    "assistant.message",
    "assistant.message_delta",
    "assistant.reasoning",
    "assistant.usage",
    "assistant.turn_end",
    "assistant.turn_retry",
    "abort",
    "tool.execution_start",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "tool.user_requested",
    "tool.execution_complete",
    "permission.requested",
    "permission.completed",
    "external_tool.requested",
    "external_tool.completed",
    "hook.start",
    "hook.end",
    "session.usage_info",
    "session.title_changed",
    "session.tools_updated",
    "pending_messages.modified",
    "session.todos_changed",
    "session.background_tasks_changed",
    "session.managed_settings_resolved",
    "model.call_start",
    "assistant.idle",
    "assistant.message_start",
    "assistant.streaming_delta",
    "assistant.tool_call_delta",
    "session.model_change",
    "session.binary_asset",
    "session.mcp_server_status_changed",
    "session.mcp_servers_loaded",
    "mcp.tools.list_changed",
    "subagent.started",
    "subagent.completed",
    "subagent.failed",
    "session.skills_loaded",
    "skill.invoked",
    "system.notification",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn recordings() -> Vec<PathBuf> {
    let dir = fixtures().join("copilot-runtime");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        10,
        "expected the ten runtime recordings: {files:?}"
    );
    files
}

/// Whether a recording was written by a newer runtime than the schema's (its `session.start`
/// names a `copilotVersion` other than the `0.0.0` of the schema's recordings).
/// Whether the recording comes from an older runtime than the 1.0.81 one the payloads mirror.
fn file_is_older_runtime(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    first.contains("\"copilotVersion\":\"0.0.0\"")
}

fn event_of(event_type: &str, data: &Value) -> Event {
    let raw = RawValue::from_string(data.to_string()).unwrap();
    Event::with_raw_data(EventType::new(event_type), raw, None)
}

#[test]
fn typed_list_is_the_declared_one() {
    assert_eq!(TypedEvent::TYPES, TYPED);
    for t in TYPED {
        assert!(
            EventType::new(t).is_known(),
            "{t} is not in the schema table"
        );
    }
}

#[test]
fn every_recorded_line_round_trips_byte_for_byte() {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for file in recordings() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let at = format!("{}:{}", file.file_name().unwrap().to_string_lossy(), n + 1);
            let event = Event::from_line(line.as_bytes()).unwrap_or_else(|e| panic!("{at}: {e}"));
            let Some(&name) = TYPED.iter().find(|t| **t == event.event_type.as_str()) else {
                assert!(matches!(event.typed(), Ok(TypedEvent::Other(_))), "{at}");
                continue;
            };
            let typed = event.typed().unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(typed.event_type().as_str(), name, "{at}");
            let data = typed.to_data().expect("typed payload");
            if file_is_older_runtime(&text) {
                // The runtime the schema came with orders a few `session.start` keys
                // differently from 1.0.81, whose order the payload keeps; these recordings
                // must round-trip every field and value, not every byte.
                let written: Value = serde_json::from_str(data.get()).unwrap();
                let read: Value = serde_json::from_str(event.data.get()).unwrap();
                assert_eq!(written, read, "{at}: re-serialized data differs");
            } else {
                assert_eq!(
                    data.get(),
                    event.data.get(),
                    "{at}: re-serialized data differs"
                );
            }
            *seen.entry(name).or_default() += 1;
        }
    }
    // The recordings must keep exercising the core of a session.
    for t in [
        "session.start",
        "session.resume",
        "session.idle",
        "session.task_complete",
        "session.shutdown",
        "user.message",
        "system.message",
        "assistant.turn_start",
        "assistant.message",
        "assistant.message_delta",
        "assistant.usage",
        "assistant.turn_end",
        "tool.execution_start",
        "tool.execution_complete",
        "permission.requested",
        "permission.completed",
    ] {
        assert!(seen.contains_key(t), "no recorded {t}; seen: {seen:?}");
    }
}

#[test]
fn every_typed_event_is_constructed_and_round_trips_through_a_line() {
    let built = common::payloads::realistic();
    let names: BTreeSet<String> = built.iter().map(|t| t.event_type().to_string()).collect();
    let expected: BTreeSet<String> = TYPED.iter().map(|t| t.to_string()).collect();
    assert_eq!(
        names, expected,
        "each typed event needs at least one constructed instance"
    );

    for payload in built {
        let event = payload.to_event(None).expect("typed payload");
        let mut line = Vec::new();
        event.write_live(&mut line);
        let back = Event::from_line(&line).unwrap();
        assert_eq!(
            back.is_ephemeral(),
            line.windows(16).any(|w| w == b"\"ephemeral\":true")
        );
        let again = back.typed().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, payload);
        assert_eq!(again.to_data().unwrap().get(), event.data.get());
    }
}

#[test]
fn null_and_absent_stay_apart() {
    let cases = [
        (
            "session.start",
            r#"{"sessionId":"s","version":1,"producer":"p","copilotVersion":"1","startTime":"t","contextTier":null}"#,
        ),
        (
            "session.start",
            r#"{"sessionId":"s","version":1,"producer":"p","copilotVersion":"1","startTime":"t","contextTier":"long_context"}"#,
        ),
        (
            "session.start",
            r#"{"sessionId":"s","version":1,"producer":"p","copilotVersion":"1","startTime":"t"}"#,
        ),
        (
            "session.resume",
            r#"{"resumeTime":"t","eventCount":0,"sessionLimits":null}"#,
        ),
        (
            "session.resume",
            r#"{"resumeTime":"t","eventCount":0,"sessionLimits":{"maxAiCredits":2.5}}"#,
        ),
        (
            "assistant.message",
            r#"{"messageId":"m","content":"","toolRequests":[{"toolCallId":"c","name":"n","arguments":null,"intentionSummary":null}]}"#,
        ),
        (
            "assistant.message",
            r#"{"messageId":"m","content":"","toolRequests":[{"toolCallId":"c","name":"n"}]}"#,
        ),
        (
            "external_tool.requested",
            r#"{"requestId":"r","sessionId":"s","toolCallId":"c","toolName":"t","providerId":null,"arguments":null}"#,
        ),
        (
            "hook.end",
            r#"{"hookInvocationId":"h","hookType":"x","output":null,"success":true}"#,
        ),
        (
            "tool.execution_complete",
            r#"{"toolCallId":"c","success":true,"result":{"content":"","structuredContent":null}}"#,
        ),
    ];
    for (t, data) in cases {
        let ev = Event::with_raw_data(
            EventType::new(t),
            RawValue::from_string(data.into()).unwrap(),
            None,
        );
        let typed = ev.typed().unwrap_or_else(|e| panic!("{t} {data}: {e}"));
        assert_eq!(typed.to_data().unwrap().get(), data);
    }
    let start: SessionStart = serde_json::from_str(cases[0].1).unwrap();
    assert_eq!(start.context_tier, Some(None));
    let start: SessionStart = serde_json::from_str(cases[2].1).unwrap();
    assert_eq!(start.context_tier, None);
}

#[test]
fn numbers_keep_their_written_form() {
    // The runtime writes `0` in one place and `0.0` in another; both must come back as written.
    let data = r#"{"shutdownType":"routine","totalPremiumRequests":0,"totalNanoAiu":0.0,"totalApiDurationMs":1,"sessionStartTime":2,"codeChanges":{"linesAdded":0,"linesRemoved":0,"filesModified":[]},"modelMetrics":{}}"#;
    let ev = Event::with_raw_data(
        EventType::new("session.shutdown"),
        RawValue::from_string(data.into()).unwrap(),
        None,
    );
    assert_eq!(ev.typed().unwrap().to_data().unwrap().get(), data);

    // Shortest-form floats (what JavaScript writes) survive parse + print exactly.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..20_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
        let x = unit * [1.0, 100.0, 10_000.0, 1e6][i % 4];
        let text = serde_json::to_string(&x).unwrap();
        let data = format!(r#"{{"model":"m","timeToFirstTokenMs":{text}}}"#);
        let usage: AssistantUsage = serde_json::from_str(&data).unwrap();
        assert_eq!(serde_json::to_string(&usage).unwrap(), data);
    }
}

#[test]
fn wrong_data_is_a_payload_error_and_unknown_types_are_other() {
    let ev = event_of("assistant.turn_start", &json!({"turnId": 5}));
    match ev.typed() {
        Err(EventError::Payload { event_type, .. }) => {
            assert_eq!(event_type, "assistant.turn_start")
        }
        other => panic!("expected a payload error, got {other:?}"),
    }
    let ev = event_of("tool.execution_complete", &json!({"toolCallId": "c"}));
    assert!(ev.typed().is_err(), "missing required `success` must fail");

    let ev = event_of(
        "session.mode_changed",
        &json!({"previousMode": "interactive", "newMode": "plan"}),
    );
    assert_eq!(
        ev.typed().unwrap(),
        TypedEvent::Other(EventType::new("session.mode_changed"))
    );
    assert!(TypedEvent::Other(EventType::new("x")).to_data().is_none());
}

#[test]
fn permission_result_kind_is_reachable() {
    let done = PermissionCompleted {
        request_id: "p".into(),
        result: json!({"kind": "denied-interactively-by-user", "feedback": "no"}),
        ..Default::default()
    };
    assert_eq!(done.result_kind(), Some("denied-interactively-by-user"));
}

// ---- schema-driven check: every schema field of every typed `data` is declared and typed ----

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fill {
    /// Only required properties.
    Required,
    /// Every property, nullable ones with a value.
    Everything,
    /// Every property, nullable and opaque ones as `null`.
    Nulls,
}

struct Synth<'a> {
    defs: &'a Map<String, Value>,
    fill: Fill,
}

impl Synth<'_> {
    fn value(&self, node: &Value, depth: usize) -> Value {
        assert!(depth < 24, "schema recursion too deep at {node}");
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            let name = r.strip_prefix("#/definitions/").expect("local ref");
            return self.value(&self.defs[name], depth + 1);
        }
        if let Some(c) = node.get("const") {
            return c.clone();
        }
        if let Some(e) = node.get("enum").and_then(Value::as_array) {
            return e[0].clone();
        }
        if let Some(alts) = node
            .get("anyOf")
            .or_else(|| node.get("oneOf"))
            .and_then(Value::as_array)
        {
            let is_null = |a: &Value| a.get("type") == Some(&json!("null"));
            if self.fill == Fill::Nulls && alts.iter().any(is_null) {
                return Value::Null;
            }
            let alt = alts
                .iter()
                .find(|a| !is_null(a))
                .expect("a non-null alternative");
            return self.value(alt, depth + 1);
        }
        let ty = match node.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Array(list)) => {
                if self.fill == Fill::Nulls && list.contains(&json!("null")) {
                    return Value::Null;
                }
                list.iter()
                    .filter_map(Value::as_str)
                    .find(|t| *t != "null")
                    .expect("a type")
            }
            _ if node.get("properties").is_some() => "object",
            _ => {
                // Opaque JSON (`x-opaque-json`): any value the runtime passes through.
                return match self.fill {
                    Fill::Nulls => Value::Null,
                    _ => json!({"opaque": [1, "two", {"three": 3.5}]}),
                };
            }
        };
        match ty {
            "string" => match node.get("format").and_then(Value::as_str) {
                Some("date-time") => json!("2026-11-29T14:34:35.148Z"),
                Some("uuid") => json!("439426cc-d140-40b1-a7f4-a48af710017c"),
                _ => json!("text"),
            },
            "integer" => {
                let min = node.get("minimum").and_then(Value::as_i64).unwrap_or(1);
                json!(min.max(1))
            }
            "number" => json!(1.5),
            "boolean" => json!(true),
            "null" => Value::Null,
            "array" => match node.get("items") {
                Some(items) => json!([self.value(items, depth + 1)]),
                None => json!([1]),
            },
            "object" => self.object(node, depth),
            other => panic!("unexpected schema type {other}"),
        }
    }

    fn object(&self, node: &Value, depth: usize) -> Value {
        let mut out = Map::new();
        let required: Vec<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            for (key, prop) in props {
                if self.fill == Fill::Required && !required.contains(&key.as_str()) {
                    continue;
                }
                out.insert(key.clone(), self.value(prop, depth + 1));
            }
        } else {
            match node.get("additionalProperties") {
                Some(Value::Bool(false)) => {}
                Some(schema @ Value::Object(_)) => {
                    out.insert("key".into(), self.value(schema, depth + 1));
                }
                _ => {
                    out.insert("key".into(), json!(1));
                }
            }
        }
        Value::Object(out)
    }
}

fn data_schemas(schema: &Value) -> BTreeMap<String, Value> {
    let defs = schema["definitions"].as_object().unwrap();
    let mut out = BTreeMap::new();
    for def in defs.values() {
        let Some(name) = def
            .pointer("/properties/type/const")
            .and_then(Value::as_str)
        else {
            continue;
        };
        if let Some(data) = def.pointer("/properties/data") {
            out.insert(name.to_string(), data.clone());
        }
    }
    out
}

#[test]
fn every_schema_field_survives_the_typed_payload() {
    let text =
        std::fs::read_to_string(fixtures().join("schema/session-events.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let defs = schema["definitions"].as_object().unwrap();
    let data = data_schemas(&schema);
    for fill in [Fill::Required, Fill::Everything, Fill::Nulls] {
        let synth = Synth { defs, fill };
        for t in TYPED {
            let node = data
                .get(t)
                .unwrap_or_else(|| panic!("{t} is not in the schema"));
            let sample = synth.value(node, 0);
            let ev = event_of(t, &sample);
            let typed = ev
                .typed()
                .unwrap_or_else(|e| panic!("{t} ({fill:?}) {sample}: {e}"));
            let back: Value = serde_json::from_str(typed.to_data().unwrap().get()).unwrap();
            assert_eq!(back, sample, "{t} ({fill:?}) lost or changed a field");
        }
    }
}

/// Every field of the sub-agent endings set: their `data` is written in the Copilot CLI's key
/// order, `error` of a failure right after the names, `cancelled` of a completion last.
#[test]
fn subagent_endings_keep_the_runtime_key_order() {
    let completed = SubagentCompleted {
        tool_call_id: "call_1".into(),
        agent_name: "explore".into(),
        agent_display_name: "Explore Agent".into(),
        model: Some("m".into()),
        first_dispatched_model: Some("first".into()),
        configured_model_preference: Some("pref".into()),
        explicit_model_override: Some("over".into()),
        explicit_model_matches_preference: Some(false),
        model_override_reason: Some("why".into()),
        model_selection_source: Some("explicit_override".into()),
        configured_model_matches_actual: Some(true),
        total_tool_calls: Some(1),
        total_tokens: Some(2),
        duration_ms: Some(3),
        cancelled: Some(false),
    };
    assert_eq!(
        serde_json::to_string(&completed).unwrap(),
        r#"{"toolCallId":"call_1","agentName":"explore","agentDisplayName":"Explore Agent","model":"m","firstDispatchedModel":"first","configuredModelPreference":"pref","explicitModelOverride":"over","explicitModelMatchesPreference":false,"modelOverrideReason":"why","modelSelectionSource":"explicit_override","configuredModelMatchesActual":true,"totalToolCalls":1,"totalTokens":2,"durationMs":3,"cancelled":false}"#
    );
    let failed = SubagentFailed {
        tool_call_id: "call_2".into(),
        agent_name: "explore".into(),
        agent_display_name: "Explore Agent".into(),
        error: "it broke".into(),
        model: Some("m".into()),
        first_dispatched_model: Some("first".into()),
        configured_model_preference: Some("pref".into()),
        explicit_model_override: Some("over".into()),
        explicit_model_matches_preference: Some(true),
        model_override_reason: Some("why".into()),
        model_selection_source: Some("runtime_policy".into()),
        configured_model_matches_actual: Some(false),
        total_tool_calls: Some(4),
        total_tokens: Some(5),
        duration_ms: Some(6),
    };
    assert_eq!(
        serde_json::to_string(&failed).unwrap(),
        r#"{"toolCallId":"call_2","agentName":"explore","agentDisplayName":"Explore Agent","error":"it broke","model":"m","firstDispatchedModel":"first","configuredModelPreference":"pref","explicitModelOverride":"over","explicitModelMatchesPreference":true,"modelOverrideReason":"why","modelSelectionSource":"runtime_policy","configuredModelMatchesActual":false,"totalToolCalls":4,"totalTokens":5,"durationMs":6}"#
    );
    // A malformed ending is named as serde names it, with the place of the bad value.
    let wrong = serde_json::from_str::<SubagentFailed>(
        r#"{"toolCallId":"c","agentName":"a","agentDisplayName":"A","error":"e","totalTokens":"many"}"#,
    )
    .unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "invalid type: string \"many\", expected u64 at line 1 column 89"
    );
}
