//! The behaviour profile of a fixture check: `turnstile diff`'s facts
//! ([`turnstile_diff::behaviour`]) plus the turn boundaries and resumes the check places its
//! report by.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use turnstile_diff::behaviour;

use crate::journal::JournalLine;

pub use turnstile_diff::behaviour::ResumeWindow;

/// The behaviour fact of `line`, or `None` when the line is not about behaviour. `tools` maps
/// tool call ids to tool names; it is filled as calls start.
pub fn fact(
    line: &JournalLine,
    data: &Value,
    tools: &mut HashMap<String, String>,
) -> Option<Value> {
    if !line.is_top_level() {
        return None;
    }
    let kind = line.event_type();
    match kind {
        // The check counts turns and resumes as facts of their own; `diff` places by them.
        "assistant.turn_start" | "assistant.turn_end" => {
            let mut out = Map::new();
            if let Some(id) = data.get("turnId").filter(|v| !v.is_null()) {
                out.insert("turnId".into(), id.clone());
            }
            return Some(Value::Object(out));
        }
        "session.resume" => return Some(json!({})),
        "tool.execution_start" => {
            if let (Some(id), Some(name)) = (data["toolCallId"].as_str(), data["toolName"].as_str())
            {
                tools.insert(id.to_owned(), name.to_owned());
            }
        }
        _ => {}
    }
    let tool = data["toolCallId"]
        .as_str()
        .and_then(|id| tools.get(id))
        .map(String::as_str);
    behaviour::fact(kind, data, tool)
}
