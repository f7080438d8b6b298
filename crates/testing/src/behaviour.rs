//! The behaviour profile: what an agent did, in a form two engines agree on.
//!
//! Each main-agent event of a type in [`crate::plan::BEHAVIOUR_TYPES`] becomes one fact with
//! the fields that describe behaviour; everything else (permission asks the other engine does
//! not make, mode changes, system prompt text, telemetry, intention summaries, shutdown
//! metrics) is left out. Tool results are compared after removing the differences in wording
//! between the engines' tools (see [`neutral_result`]).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

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

/// A tool result with the engines' differences in wording removed: trailing whitespace; for
/// `view`, the `N. ` line numbers (removed while every line carries the next number, so a
/// file whose own lines are numbered compares the same on both sides); for `glob`, the order
/// of the matches; for `bash`, how the exit code is told (`<shellId: ID completed with exit
/// code N>`, or `<exited with exit code N>` in older recordings of either engine).
pub fn neutral_result(tool: &str, content: &str) -> String {
    let content = content.trim_end();
    match tool {
        "bash" => match bash_exit(content) {
            Some((output, code)) => format!("{}\n<exit code {code}>", output.trim_end()),
            None => content.to_owned(),
        },
        "view" => {
            let mut text = content.to_owned();
            while let Some(stripped) = strip_line_numbers(&text) {
                // The empty last line a final newline makes (`3. `) is trailing white space.
                text = stripped.trim_end().to_owned();
            }
            text
        }
        "glob" => {
            let mut lines: Vec<&str> = content.lines().collect();
            lines.sort_unstable();
            lines.join("\n")
        }
        _ => content.to_owned(),
    }
}

/// A sync `bash` result split into its output and its exit code, if it ends with one.
fn bash_exit(content: &str) -> Option<(&str, &str)> {
    let (output, last) = content.rsplit_once('<')?;
    let code = last
        .strip_prefix("exited with exit code ")
        .or_else(|| {
            last.strip_prefix("shellId: ")?
                .split_once(" completed with exit code ")
                .map(|(_, code)| code)
        })?
        .strip_suffix('>')?;
    code.parse::<i64>().ok()?;
    Some((output, code))
}

/// `text` without its `N. ` prefixes when every line has one and the numbers run on by one.
fn strip_line_numbers(text: &str) -> Option<String> {
    let mut expected: Option<u64> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let (number, rest) = line
            .split_once(". ")
            .or_else(|| line.strip_suffix('.').map(|n| (n, "")))?;
        let number: u64 = number.parse().ok()?;
        if expected.is_some_and(|e| e != number) {
            return None;
        }
        expected = Some(number + 1);
        out.push(rest);
    }
    expected.map(|_| out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_numbers_and_glob_order_do_not_matter() {
        let runtime = "alpha: the first file\nIt mentions apples and TODO items.\n";
        let turnstile = "1. alpha: the first file\n2. It mentions apples and TODO items.\n3. ";
        assert_eq!(
            neutral_result("view", runtime),
            neutral_result("view", turnstile)
        );
        assert_eq!(
            neutral_result("view", turnstile),
            neutral_result(
                "view",
                "1. alpha: the first file\n2. It mentions apples and TODO items."
            )
        );
        assert_eq!(
            neutral_result("view", "1. 1. Buy milk\n2. 2. Eggs"),
            neutral_result("view", "1. Buy milk\n2. Eggs")
        );
        assert_ne!(
            neutral_result("view", "1. apples"),
            neutral_result("view", "1. pears")
        );
        assert_eq!(
            neutral_result("glob", "./alpha.txt\n./gamma.txt\n./beta.txt"),
            neutral_result("glob", "./alpha.txt\n./beta.txt\n./gamma.txt")
        );
        assert_ne!(
            neutral_result("bash", "b\na\n<exited with exit code 0>"),
            neutral_result("bash", "a\nb\n<exited with exit code 0>")
        );
        assert_eq!(
            neutral_result("bash", "a\nb\n<exited with exit code 0>"),
            neutral_result("bash", "a\nb\n<shellId: 0 completed with exit code 0>")
        );
        assert_eq!(
            neutral_result("bash", "<exited with exit code 2>"),
            neutral_result("bash", "\n<shellId: 3 completed with exit code 2>")
        );
        assert_ne!(
            neutral_result("bash", "a\n<exited with exit code 0>"),
            neutral_result("bash", "a\n<shellId: 0 completed with exit code 1>")
        );
    }
}
