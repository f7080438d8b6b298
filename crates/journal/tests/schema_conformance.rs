//! Events built from typed payloads validate against the Copilot session-events JSON Schema, and
//! the generated type table agrees with that schema.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common;

use jsonschema::Validator;
use serde_json::Value;
use turnstile_journal::payload::*;
use turnstile_journal::{Event, Persistence, Uuid, all_event_types};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = fixtures().join("schema/session-events.schema.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    })
}

/// The validator of one session event (`$ref: #/definitions/SessionEvent`, the document's root).
fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        assert_eq!(schema()["$ref"], "#/definitions/SessionEvent");
        jsonschema::draft7::options()
            .should_validate_formats(true)
            .build(schema())
            .expect("the schema compiles")
    })
}

/// Validation errors of one line, empty when it conforms.
fn errors(line: &[u8]) -> Vec<String> {
    let value: Value = serde_json::from_slice(line).expect("a JSON line");
    validator()
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// The line an event is written as: on disk when persisted, the live copy when ephemeral.
fn line_of(event: &Event) -> Vec<u8> {
    let mut out = Vec::new();
    if event.is_ephemeral() {
        event.write_live(&mut out);
    } else {
        event.write_persisted(&mut out);
    }
    out
}

/// One realistic event of each typed payload, chained by `parentId` like a session.
fn realistic_events() -> Vec<Event> {
    let mut parent: Option<Uuid> = None;
    common::payloads::realistic()
        .iter()
        .map(|p| {
            let event = p.to_event(parent).expect("a typed payload");
            parent = Some(event.id);
            event
        })
        .collect()
}

#[test]
fn a_realistic_event_of_each_typed_payload_conforms() {
    let events = realistic_events();
    let covered: BTreeSet<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    let expected: BTreeSet<&str> = TypedEvent::TYPES.iter().copied().collect();
    assert_eq!(covered, expected, "one realistic event per typed payload");
    assert_eq!(expected.len(), 50);

    for event in &events {
        let line = line_of(event);
        let errs = errors(&line);
        assert!(
            errs.is_empty(),
            "{}:\n{}\n{}",
            event.event_type,
            String::from_utf8_lossy(&line),
            errs.join("\n")
        );
    }
}

#[test]
fn recordings_validate_except_for_known_runtime_deviations() {
    let dir = fixtures().join("copilot-runtime");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 10);

    let mut valid = 0;
    let mut unknown_types = 0;
    let mut tool_title_lines = 0;
    let mut truncation_lines = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let at = format!("{name}:{}", n + 1);
            let event = Event::from_line(line.as_bytes()).unwrap_or_else(|e| panic!("{at}: {e}"));
            if !name.contains(".live.") {
                assert!(!event.is_ephemeral(), "{at}: ephemeral type on disk");
            }
            let errs = errors(line.as_bytes());
            if !event.event_type.is_known() {
                // The live copy carries `model.*` debug events the schema does not list: the
                // validator must reject them (this is what proves it checks the `type`).
                assert!(
                    !errs.is_empty(),
                    "{at}: unknown type {} validated",
                    event.event_type
                );
                unknown_types += 1;
                continue;
            }
            let mut value: Value = serde_json::from_str(line).unwrap();
            let data = value["data"].as_object_mut().unwrap();
            if event.event_type.as_str() == "tool.execution_start" && data.contains_key("toolTitle")
            {
                // The runtime writes `toolTitle` on tool.execution_start although the schema's
                // data object forbids extra keys: rejected as is, valid without it.
                assert!(
                    !errs.is_empty(),
                    "{at}: toolTitle is now in the schema; drop this exception"
                );
                data.remove("toolTitle");
                let fixed = serde_json::to_vec(&value).unwrap();
                let errs = errors(&fixed);
                assert!(errs.is_empty(), "{at}: {}", errs.join("\n"));
                tool_title_lines += 1;
                continue;
            }
            let extra = ["toolDefinitionsTokenCount", "messagesTokenCounts"];
            if event.event_type.as_str() == "session.truncation"
                && extra.iter().any(|k| data.contains_key(*k))
            {
                // The runtime (1.0.81-0) adds these two to `session.truncation`; the 1.0.14
                // schema's data object forbids extra keys: rejected as is, valid without them.
                assert!(
                    !errs.is_empty(),
                    "{at}: the truncation counts are now in the schema; drop this exception"
                );
                for key in extra {
                    data.remove(key);
                }
                let fixed = serde_json::to_vec(&value).unwrap();
                let errs = errors(&fixed);
                assert!(errs.is_empty(), "{at}: {}", errs.join("\n"));
                truncation_lines += 1;
                continue;
            }
            assert!(errs.is_empty(), "{at}:\n{line}\n{}", errs.join("\n"));
            valid += 1;
        }
    }
    assert!(valid > 100, "only {valid} lines validated");
    assert!(
        unknown_types > 0,
        "the live recording should hold model.* events"
    );
    assert_eq!(tool_title_lines, 1);
    assert_eq!(truncation_lines, 2);
}

#[test]
fn wrong_events_fail_validation() {
    let good = AssistantTurnStart {
        turn_id: "0".into(),
        ..Default::default()
    };
    let line = line_of(&Event::new(&good, None));
    assert!(errors(&line).is_empty());

    // A field of the wrong type.
    let text = String::from_utf8(line.clone())
        .unwrap()
        .replace(r#""turnId":"0""#, r#""turnId":0"#);
    assert!(
        !errors(text.as_bytes()).is_empty(),
        "turnId as a number must fail: {text}"
    );

    // A key the data object does not allow.
    let text = String::from_utf8(line.clone())
        .unwrap()
        .replace(r#""turnId":"0""#, r#""turnId":"0","bogus":1"#);
    assert!(
        !errors(text.as_bytes()).is_empty(),
        "an unknown data key must fail: {text}"
    );

    // A missing required field.
    let text = String::from_utf8(line)
        .unwrap()
        .replace(r#""turnId":"0""#, "");
    assert!(
        !errors(text.as_bytes()).is_empty(),
        "a missing turnId must fail: {text}"
    );

    // An ephemeral type written like a persisted one (no `"ephemeral":true`).
    let idle = Event::new(&SessionIdle::default(), None);
    let mut persisted = Vec::new();
    idle.write_persisted(&mut persisted);
    assert!(
        !errors(&persisted).is_empty(),
        "session.idle without ephemeral must fail"
    );
    assert!(errors(&line_of(&idle)).is_empty());

    // A nullable field given a wrong type, and a schema enum given a value outside it.
    let mut start = SessionStart {
        session_id: "s".into(),
        version: 1,
        producer: "p".into(),
        copilot_version: "1".into(),
        start_time: "2026-11-29T14:37:32.395Z".into(),
        ..Default::default()
    };
    assert!(errors(&line_of(&Event::new(&start, None))).is_empty());
    start.context_tier = Some(Some("huge".into()));
    assert!(
        !errors(&line_of(&Event::new(&start, None))).is_empty(),
        "contextTier outside its enum must fail"
    );
}

#[test]
fn event_type_table_matches_the_schema() {
    let defs = schema()["definitions"].as_object().unwrap();
    let mut from_schema: Vec<(String, bool)> = schema()["definitions"]["SessionEvent"]["anyOf"]
        .as_array()
        .expect("SessionEvent is an anyOf")
        .iter()
        .map(|alt| {
            let name = alt["$ref"]
                .as_str()
                .unwrap()
                .strip_prefix("#/definitions/")
                .unwrap();
            let def = &defs[name];
            let event_type = def["properties"]["type"]["const"]
                .as_str()
                .expect("a type const");
            let ephemeral = def["properties"]["ephemeral"].get("const") == Some(&Value::Bool(true));
            (event_type.to_string(), ephemeral)
        })
        .collect();
    from_schema.sort();
    let table: Vec<(String, bool)> = all_event_types()
        .map(|(name, p)| (name.to_string(), p == Persistence::Ephemeral))
        .collect();
    assert_eq!(table, from_schema);
}
