//! `stop_bash`: stops a shell's command (its whole process group) and forgets the shell.

use serde_json::{Value, json};

use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec, args};

/// The `stop_bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct StopBashTool;

impl AsyncTool for StopBashTool {
    const NAME: &'static str = "stop_bash";
    const TITLE: Option<&'static str> = Some("Stop shell");
    type Args = String;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "stop_bash".to_owned(),
            description: "Stops a command started with bash, with every process it started, and forgets its shell (a later bash call may reuse the shellId).".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "shellId": {"type": "string", "description": "The shellId of the command to stop."}
                },
                "required": ["shellId"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<String, ToolFailure> {
        args::required_str(args, "shellId").map(str::to_owned)
    }

    async fn act(&self, id: String, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        // The runtime gives the same answer for a shell it never had.
        ctx.shells.stop(&id);
        Ok(ToolOutput::text(format!("<command with id: {id} stopped>")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use crate::bash::BashTool;
    use crate::shells::ShellStatus;

    #[tokio::test]
    async fn stops_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        BashTool
            .run(
                json!({"command": "sleep 300 & echo $! > bg.pid; sleep 300", "description": "d", "mode": "async", "shellId": "st"}),
                &ctx,
            )
            .await
            .unwrap();
        let shell = ctx.shells.get("st").unwrap();
        let pid_file = dir.path().join("bg.pid");
        for _ in 0..500 {
            if std::fs::metadata(&pid_file).is_ok_and(|m| m.len() > 0) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let bg: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let out = StopBashTool
            .run(json!({"shellId": "st"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "<command with id: st stopped>");
        assert_eq!(shell.status(), ShellStatus::Stopped);
        assert!(ctx.shells.get("st").is_none());
        let gone = (0..250).any(|_| {
            let alive = std::fs::read_to_string(format!("/proc/{bg}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
            });
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            !alive
        });
        assert!(gone, "the background job {bg} survived stop_bash");
        let out = StopBashTool
            .run(json!({"shellId": "never"}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.content, "<command with id: never stopped>");
    }
}
