//! The behaviour profile: what an agent did, in a form two engines agree on.
//!
//! Each main-agent event of a type in [`crate::plan::BEHAVIOUR_TYPES`] becomes one fact with
//! the fields that describe behaviour; everything else (permission asks the other engine does
//! not make, mode changes, system prompt text, telemetry, intention summaries, shutdown
//! metrics) is left out. Tool results are compared after removing the differences in wording
//! between the engines' tools (see [`turnstile_diff::neutral_result`]).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use turnstile_diff::neutral_result;

use crate::journal::JournalLine;

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
    let pick = |keys: &[&str]| -> Value {
        let mut out = Map::new();
        for key in keys {
            if let Some(v) = data.get(*key).filter(|v| !v.is_null()) {
                out.insert((*key).to_owned(), v.clone());
            }
        }
        Value::Object(out)
    };
    Some(match line.event_type() {
        "user.message" => json!({
            "content": data["content"],
            "isAutopilotContinuation": data["isAutopilotContinuation"] == true,
        }),
        "assistant.turn_start" | "assistant.turn_end" => pick(&["turnId"]),
        "assistant.message" => {
            let requests: Vec<Value> = data["toolRequests"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| json!({"toolCallId": r["toolCallId"], "name": r["name"], "arguments": r["arguments"]}))
                .collect();
            json!({"content": data["content"], "toolRequests": requests})
        }
        "tool.execution_start" => {
            if let (Some(id), Some(name)) = (data["toolCallId"].as_str(), data["toolName"].as_str())
            {
                tools.insert(id.to_owned(), name.to_owned());
            }
            pick(&["toolCallId", "toolName", "arguments"])
        }
        "tool.execution_complete" => {
            let mut out = pick(&["toolCallId", "success"]);
            let tool = data["toolCallId"]
                .as_str()
                .and_then(|id| tools.get(id))
                .map_or("", String::as_str);
            if let (Some(content), Value::Object(map)) =
                (data["result"]["content"].as_str(), &mut out)
            {
                map.insert(
                    "result".into(),
                    json!({"content": neutral_result(tool, content)}),
                );
            }
            if let (Some(message), Value::Object(map)) =
                (data["error"]["message"].as_str(), &mut out)
            {
                map.insert("error".into(), json!({"message": message}));
            }
            out
        }
        "session.task_complete" => pick(&["summary", "success"]),
        "session.error" => pick(&["errorType", "statusCode", "message"]),
        "abort" => pick(&["reason"]),
        "session.resume" => json!({}),
        _ => return None,
    })
}

/// Where a resumed process closes what the process before it left open: from a
/// `session.resume` to the next main-agent `user.message` or `assistant.turn_start`.
///
/// turnstile's resume plan answers the left-over calls there (interrupted results, turn ends);
/// the runtime writes nothing and gives the model the same interrupted results when it next
/// asks (the fold's abandoned work). Neither is something the agent did, so in the behaviour
/// profile the closing events are no facts.
#[derive(Debug, Default)]
pub struct ResumeWindow {
    open: bool,
}

impl ResumeWindow {
    /// Follows `line`; true when it is a tool result or turn end inside the window.
    pub fn closes_left_over(&mut self, line: &JournalLine) -> bool {
        if !line.is_top_level() {
            return false;
        }
        match line.event_type() {
            "session.resume" => self.open = true,
            "user.message" | "assistant.turn_start" => self.open = false,
            "tool.execution_complete" | "assistant.turn_end" => return self.open,
            _ => {}
        }
        false
    }
}
