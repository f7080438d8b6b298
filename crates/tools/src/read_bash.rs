//! `read_bash`: the output of a shell so far, after waiting up to `delay` seconds for it to
//! end (the runtime's texts: docs/tools.md).

use std::time::Duration;

use serde_json::{Value, json};

use super::shells::MAX_WAIT_SECS;
use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec, args};

/// The `read_bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadBashTool;

fn parse(args: &Value) -> Result<(String, f64), ToolFailure> {
    let id = args::required_str(args, "shellId")?.to_owned();
    let delay = args::optional_f64(args, "delay")?.unwrap_or(0.0);
    if !(0.0..=MAX_WAIT_SECS).contains(&delay) {
        return Err(ToolFailure::new(
            format!(
                "Invalid delay: {delay}. Please supply a valid delay between 0 and {MAX_WAIT_SECS} seconds."
            ),
            "failure",
        ));
    }
    Ok((id, delay))
}

/// The failure for a shell id the session does not know (or lost), with the list; "failure" is
/// the code the runtime gives every shell error.
pub(crate) fn unknown_shell(id: &str, ctx: &ToolContext) -> ToolFailure {
    if ctx.shells.lost(id).is_some() {
        return ToolFailure::new(
            format!(
                "shellId: {id} was lost: the engine running it stopped and its processes are gone. Run the command again if it is still needed.\n\n{}",
                ctx.shells.list()
            ),
            "failure",
        );
    }
    ToolFailure::new(
        format!(
            "shellId: {id} not found or was never created. Please supply a valid shell ID.\n\n{}",
            ctx.shells.list()
        ),
        "failure",
    )
}

impl AsyncTool for ReadBashTool {
    const NAME: &'static str = "read_bash";
    const TITLE: Option<&'static str> = Some("Read shell output");
    type Args = (String, f64);

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "read_bash".to_owned(),
            description: "Reads the output of a command started with bash (async, or a sync call that went on in the background), after waiting up to `delay` seconds for it to end. While it runs, each read shows all output so far; once a read has shown the end, later reads show only the status.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "shellId": {"type": "string", "description": "The shellId the bash call answered with."},
                    "delay": {"type": "number", "description": "Seconds to wait for the command to end before reading (0-600)."}
                },
                "required": ["shellId", "delay"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<(String, f64), ToolFailure> {
        parse(args)
    }

    async fn act(
        &self,
        (id, delay): (String, f64),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolFailure> {
        let shell = ctx.shells.get(&id).ok_or_else(|| unknown_shell(&id, ctx))?;
        let wait = Duration::from_secs_f64(delay);
        let ended = tokio::select! {
            ended = shell.wait(wait) => ended,
            _ = ctx.cancel.cancelled() => return Err(ToolFailure::cancelled()),
        };
        Ok(shell.result(if ended { 0.0 } else { delay }))
    }

    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        // Named whatever the delay, as the runtime does (a bad one fails the call later).
        let delay = args::optional_f64(args, "delay")
            .ok()
            .flatten()
            .unwrap_or(0.0);
        Some(if delay > 0.0 {
            format!(
                "Waiting up to {delay} second{} for command output",
                if delay == 1.0 { "" } else { "s" }
            )
        } else {
            "Reading command output".to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use crate::bash::BashTool;

    #[tokio::test]
    async fn reads_an_async_shell_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let fifo = dir.path().join("gate");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let out = BashTool
            .run(
                json!({"command": "echo start; read _ < gate; echo end", "description": "d", "mode": "async", "shellId": "s2"}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "<command started in background with shellId: s2>"
        );
        // Waits (boundedly) until the first line is there.
        let mut text = String::new();
        for _ in 0..500 {
            text = ReadBashTool
                .run(json!({"shellId": "s2", "delay": 0}), &ctx)
                .await
                .unwrap()
                .content;
            if text.starts_with("start\n") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            text,
            "start\n<command with shellId: s2 is still running after 0 seconds. The command is still running. Use read_bash to continue waiting for output, or stop_bash to stop it.>"
        );
        std::fs::write(&fifo, "go\n").unwrap();
        let out = ReadBashTool
            .run(json!({"shellId": "s2", "delay": 60}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "start\nend\n<shellId: s2 completed with exit code 0>"
        );
        let again = ReadBashTool
            .run(json!({"shellId": "s2", "delay": 0}), &ctx)
            .await
            .unwrap();
        assert_eq!(again.content, "\n<shellId: s2 completed with exit code 0>");
    }

    #[tokio::test]
    async fn unknown_shells_and_bad_delays_fail() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let err = ReadBashTool
            .run(json!({"shellId": "zz", "delay": 0}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            err.message,
            "shellId: zz not found or was never created. Please supply a valid shell ID.\n\n<no active shell sessions>"
        );
        let err = ReadBashTool
            .permission(&json!({"shellId": "0", "delay": -1}), &ctx)
            .unwrap_err();
        assert_eq!(
            err.message,
            "Invalid delay: -1. Please supply a valid delay between 0 and 600 seconds."
        );
        ctx.shells.add_lost([crate::shells::LostShell {
            id: "srv".into(),
            command: "sleep 100".into(),
            untold: true,
        }]);
        let err = ReadBashTool
            .run(json!({"shellId": "srv", "delay": 0}), &ctx)
            .await
            .unwrap_err();
        assert!(
            err.message.starts_with("shellId: srv was lost"),
            "{}",
            err.message
        );
    }
}
