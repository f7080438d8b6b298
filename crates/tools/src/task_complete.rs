//! `task_complete`: the model's way to say an autopilot task is done. The
//! result is the summary itself; the loop records `session.task_complete`
//! and stops nudging.

use serde_json::{Value, json};

use super::{BlockingTool, ToolContext, ToolFailure, ToolOutput, ToolSpec, args};

/// The `task_complete` tool (offered in autopilot mode only).
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskCompleteTool;

/// The tool's name, for the loop to recognise the call.
pub const TASK_COMPLETE: &str = "task_complete";

/// The summary of a `task_complete` call, for the loop's `session.task_complete` event.
pub fn summary(args: &Value) -> Result<String, ToolFailure> {
    let summary = args::required_str(args, "summary")?;
    if summary.trim().is_empty() {
        return Err(ToolFailure::invalid(
            "Parameter 'summary' must not be empty: say what was done.",
        ));
    }
    Ok(summary.to_owned())
}

impl BlockingTool for TaskCompleteTool {
    const NAME: &'static str = TASK_COMPLETE;
    type Args = String;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: TASK_COMPLETE.to_owned(),
            description: "Marks the task as complete. Call it once the task is fully done (not while still planning), with a short summary of what was done.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "description": "A short summary of what was done."}
                },
                "required": ["summary"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, _ctx: &ToolContext) -> Result<String, ToolFailure> {
        summary(args)
    }

    fn work(summary: String, _ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput {
            // The runtime's detailed text, as recorded in a2-autopilot.
            detailed_content: Some(format!("✓ Task completed: {summary}")),
            content: summary,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;

    #[tokio::test]
    async fn returns_the_summary() {
        let ctx = ToolContext::new("/");
        let out = TaskCompleteTool
            .run(
                json!({"summary": "Listed the 3 text files and read alpha.txt."}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(out.content, "Listed the 3 text files and read alpha.txt.");
        assert_eq!(
            out.detailed_content.as_deref(),
            Some("✓ Task completed: Listed the 3 text files and read alpha.txt.")
        );
        assert_eq!(
            TaskCompleteTool.permission(&json!({"summary": "x"}), &ctx),
            Ok(None)
        );
        assert!(TaskCompleteTool.permission(&json!({}), &ctx).is_err());
    }
}
