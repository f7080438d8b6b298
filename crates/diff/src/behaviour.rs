//! The behaviour profile's facts: what an agent did, in a form two engines agree on.
//!
//! One module for `turnstile diff` and the fixture check (`turnstile-testing`), so that a
//! failed `replay --check` and `diff` of the same two journals compare the same things. Each
//! main-agent event of a compared type becomes one fact with the fields that describe
//! behaviour; everything else (permission asks the other engine does not make, mode changes,
//! system prompt text, telemetry, intention summaries, shutdown metrics) is left out. Tool
//! results are compared after removing the differences in wording between the engines' tools
//! ([`crate::neutral_result`]).

use serde_json::{Map, Value, json};

use crate::neutral::neutral_result;

/// The behaviour fact of a main-agent event of type `kind` with `data`, or `None` when the
/// event is not about behaviour. `tool` names the tool of a `tool.execution_complete` (its
/// start named it).
pub fn fact(kind: &str, data: &Value, tool: Option<&str>) -> Option<Value> {
    let pick = |keys: &[&str]| -> Value {
        let mut out = Map::new();
        for key in keys {
            if let Some(v) = data.get(*key).filter(|v| !v.is_null()) {
                out.insert((*key).to_owned(), v.clone());
            }
        }
        Value::Object(out)
    };
    Some(match kind {
        "user.message" => json!({
            "content": data["content"],
            "isAutopilotContinuation": data["isAutopilotContinuation"] == true,
        }),
        "assistant.message" => {
            let requests: Vec<Value> = data["toolRequests"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| json!({"toolCallId": r["toolCallId"], "name": r["name"], "arguments": r["arguments"]}))
                .collect();
            json!({"content": data["content"], "toolRequests": requests})
        }
        "tool.execution_start" => pick(&["toolCallId", "toolName", "arguments"]),
        "tool.execution_complete" => {
            let mut out = pick(&["toolCallId", "success"]);
            if let (Some(content), Value::Object(map)) =
                (data["result"]["content"].as_str(), &mut out)
            {
                map.insert(
                    "result".into(),
                    json!({"content": neutral_result(tool.unwrap_or_default(), content)}),
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
        _ => return None,
    })
}

/// Where a resumed process closes what the process before it left open: from a
/// `session.resume` to the next main-agent `user.message` or `assistant.turn_start`.
///
/// turnstile's resume plan answers the left-over calls there (interrupted results, turn ends);
/// the Copilot CLI writes nothing and gives the model the same interrupted results when it
/// next asks (the fold's abandoned work). Neither is something the agent did, so in the
/// behaviour profile the closing events are no facts.
#[derive(Debug, Default)]
pub struct ResumeWindow {
    open: bool,
}

impl ResumeWindow {
    /// Follows an event of type `kind` (`main`: of the main agent); true when it is a tool
    /// result or turn end inside the window.
    pub fn closes_left_over(&mut self, kind: &str, main: bool) -> bool {
        if !main {
            return false;
        }
        match kind {
            "session.resume" => self.open = true,
            "user.message" | "assistant.turn_start" => self.open = false,
            "tool.execution_complete" | "assistant.turn_end" => return self.open,
            _ => {}
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_opens_at_a_resume_and_closes_at_the_next_prompt_or_call() {
        let mut w = ResumeWindow::default();
        assert!(!w.closes_left_over("tool.execution_complete", true));
        assert!(!w.closes_left_over("session.resume", true));
        assert!(w.closes_left_over("tool.execution_complete", true));
        assert!(
            !w.closes_left_over("tool.execution_complete", false),
            "a sub-agent's event"
        );
        assert!(w.closes_left_over("assistant.turn_end", true));
        assert!(!w.closes_left_over("assistant.turn_start", true));
        assert!(!w.closes_left_over("assistant.turn_end", true));
    }

    #[test]
    fn bookkeeping_is_no_fact_and_a_result_keeps_only_what_the_agent_did() {
        assert_eq!(fact("permission.requested", &json!({}), None), None);
        assert_eq!(fact("system.message", &json!({"content": "x"}), None), None);
        let done = json!({"toolCallId": "c1", "success": true, "model": "m", "result": {"content": "ok", "detailedContent": "d"}});
        assert_eq!(
            fact("tool.execution_complete", &done, Some("bash")),
            Some(
                json!({"toolCallId": "c1", "success": true, "result": {"content": neutral_result("bash", "ok")}})
            )
        );
    }
}
