//! `list_bash`: the session's shells, running and ended, as the runtime lists them.

use serde_json::{Value, json};

use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec};

/// The `list_bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListBashTool;

impl AsyncTool for ListBashTool {
    const NAME: &'static str = "list_bash";
    const TITLE: Option<&'static str> = Some("List shells");
    type Args = ();

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "list_bash".to_owned(),
            description: "Lists the session's shells: shellId, pid, mode, status, elapsed time, how many commands ran under the id, whether there is unread output, and the command.".to_owned(),
            parameters: json!({"type": "object", "properties": {}, "required": []}),
            ..ToolSpec::default()
        }
    }

    fn check(&self, _args: &Value, _ctx: &ToolContext) -> Result<(), ToolFailure> {
        Ok(())
    }

    async fn act(&self, (): (), ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(ctx.shells.list()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use crate::bash::BashTool;

    #[tokio::test]
    async fn lists_sync_and_async_shells() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = ListBashTool.run(json!({}), &ctx).await.unwrap();
        assert_eq!(out.content, "<no active shell sessions>");
        BashTool
            .run(json!({"command": "true", "description": "d"}), &ctx)
            .await
            .unwrap();
        let out = ListBashTool.run(json!({}), &ctx).await.unwrap();
        assert!(ctx.shells.get("0").is_some());
        assert!(
            out.content
                .starts_with("Active shell sessions:\n  shellId: 0, pid: "),
            "{}",
            out.content
        );
        assert!(
            out.content
                .contains(", mode: sync, status: completed (exit code: 0), elapsed: "),
            "{}",
            out.content
        );
        assert!(
            out.content
                .ends_with("s, commands: 1, unread output: no\n    current command: true")
        );
    }
}
