//! turnstile writes each event type with the keys the Copilot CLI writes: every key path of
//! `data` (nested objects and array items included, the entries of `modelMetrics` and
//! `agentMetrics` as one `*`) in the journals turnstile recorded (`fixtures/<name>/`) is
//! checked against the real runtime's recordings (`fixtures/copilot-runtime/`) of the same
//! type, a sub-agent's events apart from the main agent's:
//!
//! - **names**: a key turnstile writes is one the runtime writes;
//! - **types**: with a JSON type the runtime writes it with;
//! - **presence**: a key the runtime writes whenever its parent is there, turnstile writes
//!   whenever its parent is there too.
//!
//! The deliberate differences are listed below with their reasons, as in
//! `docs/journal-format.md`; a listed difference that is no longer seen fails the test too, so
//! the list stays true.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Objects whose keys are names (models, agents, token types), not fields.
const MAPS: &[&str] = &["modelMetrics", "agentMetrics", "tokenDetails"];
/// Values whose shape is the tool's or the hook's, not the event's: their own type is
/// checked, not what is inside.
const OPAQUE: &[&str] = &[
    "arguments",
    "toolTelemetry",
    "input",
    "output",
    "variables",
    "result",
    "telemetry",
];

/// `(event type, key path, what differs)` turnstile writes on purpose, and why.
const DELIBERATE: &[(&str, &str, &str, &str)] = &[
    (
        "system.message",
        "data.metadata",
        "name",
        "turnstile's mark: metadata.promptVersion names turnstile and its version (the runtime's \
         session.start fields name the Copilot CLI, which readers recognise a session by)",
    ),
    (
        "system.message",
        "data.metadata.promptVersion",
        "name",
        "turnstile's mark (above)",
    ),
    (
        "tool.execution_complete",
        "data.toolTelemetry",
        "presence",
        "turnstile records no tool telemetry (the CLI's per-tool analytics, opaque in the schema)",
    ),
    (
        "tool.execution_complete@agent",
        "data.toolTelemetry",
        "presence",
        "as for the main agent",
    ),
    (
        "assistant.message",
        "data.apiCallId",
        "presence",
        "the model server's id of the call: absent when the server names none (the scripted \
         server of the long-session fixture)",
    ),
    (
        "assistant.message",
        "data.toolRequests[].intentionSummary",
        "type",
        "null when the tool has no intention summary for the call, as the schema allows \
         (string or null)",
    ),
    (
        "session.shutdown",
        "data.agentMetrics.*.agentName",
        "name",
        "a sub-agent's entry of agentMetrics, as the schema gives it; the recordings hold only \
         `main` (1.0.81-0 writes no agentMetrics)",
    ),
    (
        "session.shutdown",
        "data.agentMetrics.*.agentDisplayName",
        "name",
        "as agentName",
    ),
    (
        "user.message@agent",
        "data.parentAgentTaskId",
        "presence",
        "the CLI's id of the task a sub-agent's round runs in; turnstile runs no agent tasks \
         and nothing in a journal refers to it",
    ),
    (
        "permission.completed",
        "data.decisionSource",
        "name",
        "the schema's field saying who decided (absent in 1.0.81-0's journals, which readers \
         must take as not a person's decision): turnstile says it",
    ),
];

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The key paths of one event's `data`, with their types.
fn paths(v: &Value, path: &str, map: bool, out: &mut BTreeMap<String, BTreeSet<&'static str>>) {
    out.entry(path.to_owned()).or_default().insert(json_type(v));
    match v {
        Value::Object(fields) => {
            for (key, value) in fields {
                let name = if map { "*" } else { key.as_str() };
                let child = format!("{path}.{name}");
                if OPAQUE.contains(&key.as_str()) && !map {
                    out.entry(child).or_default().insert(json_type(value));
                    continue;
                }
                paths(value, &child, !map && MAPS.contains(&key.as_str()), out);
            }
        }
        Value::Array(items) => {
            for item in items {
                paths(item, &format!("{path}[]"), false, out);
            }
        }
        _ => {}
    }
}

/// Per event type (`type`, or `type@agent` for a sub-agent's): each key path's types and the
/// number of events holding it.
#[derive(Default)]
struct Profile {
    types: BTreeMap<String, BTreeMap<String, (BTreeSet<&'static str>, usize)>>,
}

impl Profile {
    fn add_journal(&mut self, path: &Path) {
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1));
            let mut name = event["type"].as_str().unwrap().to_owned();
            if event.get("agentId").is_some() {
                name.push_str("@agent");
            }
            let mut found = BTreeMap::new();
            paths(&event["data"], "data", false, &mut found);
            let of_type = self.types.entry(name).or_default();
            for (key, types) in found {
                let entry = of_type.entry(key).or_default();
                entry.0.extend(types);
                entry.1 += 1;
            }
        }
    }

    fn count(&self, event_type: &str, key: &str) -> usize {
        self.types[event_type].get(key).map_or(0, |e| e.1)
    }
}

/// The path a key path sits in (`data.a.b` -> `data.a`, `data.a[]` -> `data.a`).
fn parent(key: &str) -> &str {
    if let Some(array) = key.strip_suffix("[]") {
        return array;
    }
    key.rfind('.').map_or(key, |i| &key[..i])
}

fn journals_in(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            journals_in(&path, out);
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("events.jsonl"))
        {
            out.push(path);
        }
    }
}

#[test]
fn turnstiles_events_have_the_keys_the_copilot_cli_writes() {
    let mut runtime = Profile::default();
    let mut recordings = Vec::new();
    journals_in(&fixtures().join("copilot-runtime"), &mut recordings);
    assert!(recordings.len() >= 16, "{recordings:?}");
    for path in &recordings {
        runtime.add_journal(path);
    }
    let mut own = Profile::default();
    let mut journals = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path().join("events.jsonl");
        if path.is_file() {
            own.add_journal(&path);
            journals += 1;
        }
    }
    assert!(journals >= 9, "turnstile's fixtures: {journals}");

    let mut found: BTreeSet<(String, String, &str)> = BTreeSet::new();
    let mut compared = 0;
    for (event_type, keys) in &own.types {
        let Some(theirs) = runtime.types.get(event_type) else {
            // A situation the recordings do not hold (turnstile's sub-agent turns, hooks,
            // errors, aborts): nothing to compare with.
            continue;
        };
        compared += 1;
        for (key, (types, _)) in keys {
            match theirs.get(key) {
                None => {
                    found.insert((event_type.clone(), key.clone(), "name"));
                }
                Some((their_types, _)) if !types.is_subset(their_types) => {
                    found.insert((event_type.clone(), key.clone(), "type"));
                }
                Some(_) => {}
            }
        }
        // An array's items are its value (an empty one has none), not a key that may be left
        // out: their presence is not compared.
        for key in theirs.keys().filter(|k| !k.ends_with("[]")) {
            let always = runtime.count(event_type, key) == runtime.count(event_type, parent(key));
            let ours = own.count(event_type, key);
            if always && ours < own.count(event_type, parent(key)) {
                found.insert((event_type.clone(), key.clone(), "presence"));
            }
        }
    }
    assert!(compared >= 20, "only {compared} event types compared");
    let listed: BTreeSet<(String, String, &str)> = DELIBERATE
        .iter()
        .map(|(t, k, what, _)| (t.to_string(), k.to_string(), *what))
        .collect();
    let unexplained: Vec<_> = found.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&found).collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "keys turnstile writes unlike the Copilot CLI: {unexplained:#?}\n\
         listed differences no longer seen (drop them): {stale:#?}"
    );
}
