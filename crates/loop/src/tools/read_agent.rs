//! `read_agent`: a background agent's status and answer, waiting for its end when asked.

use std::time::Duration;

use serde_json::{Value, json};

use super::agents::{AgentRecord, AgentStatus};
use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec};

/// The tool's name.
pub const NAME: &str = "read_agent";

/// Seconds a wait lasts when the call names none, and at most (the runtime's bounds).
const DEFAULT_TIMEOUT_SECS: f64 = 30.0;
const MAX_TIMEOUT_SECS: f64 = 180.0;

/// The `read_agent` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadAgentTool;

/// The checked arguments of one call.
pub struct ReadArgs {
    agent_id: String,
    wait: Option<Duration>,
    since_turn: u64,
}

fn parse(args: &Value) -> Result<ReadArgs, ToolFailure> {
    let Some(agent_id) = args.get("agent_id").and_then(Value::as_str) else {
        return Err(ToolFailure::invalid(
            "Invalid input: \"agent_id\": Required",
        ));
    };
    let wait = match args.get("wait") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ToolFailure::invalid(
                "Invalid input: \"wait\": Expected boolean",
            ));
        }
    };
    let timeout = match args.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_SECS,
        Some(v) => v
            .as_f64()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                ToolFailure::invalid("Invalid input: \"timeout\": Expected a number of seconds")
            })?
            .min(MAX_TIMEOUT_SECS),
    };
    let since_turn = match args.get("since_turn") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            ToolFailure::invalid("Invalid input: \"since_turn\": Expected an integer of at least 0")
        })?,
    };
    Ok(ReadArgs {
        agent_id: agent_id.to_owned(),
        wait: wait.then(|| Duration::from_secs_f64(timeout)),
        since_turn,
    })
}

/// The report on one agent: its facts on one line, then its answer as turn 0 (this engine's
/// agents answer once), or why it failed.
pub fn report(record: &AgentRecord, since_turn: u64) -> String {
    let facts = format!(
        "agent_id: {}, agent_type: {}, status: {}, description: {}, elapsed: {}s",
        record.id,
        record.agent_type.name(),
        record.status.word(),
        record.description,
        record.elapsed_secs()
    );
    match &record.status {
        AgentStatus::Running => format!("Agent is still running. {facts}"),
        AgentStatus::Completed(text) if since_turn == 0 => {
            format!("Agent completed. {facts}, total_turns: 1\n\n[Turn 0]\n{text}")
        }
        AgentStatus::Completed(_) => {
            format!("Agent completed. {facts}, total_turns: 1\n\nNo turns since turn {since_turn}.")
        }
        AgentStatus::Failed(error) => format!("Agent failed. {facts}\n\nError: {error}"),
    }
}

impl AsyncTool for ReadAgentTool {
    const NAME: &'static str = NAME;
    type Args = ReadArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_owned(),
            description: "Gives the status (running, completed, failed) of a background agent started by task with mode \"background\", and its answer once it has one. You are notified when a background agent ends; then call this once with wait: true to read its answer.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "description": "The agent's id, as the background task call answered it."},
                    "wait": {"type": "boolean", "description": "true: wait until the agent ends (at most timeout seconds); false (the default): answer at once."},
                    "timeout": {"type": "number", "description": "Seconds to wait at most when wait is true: 30 by default, 180 at most."},
                    "since_turn": {"type": "integer", "description": "The first turn of the agent's answers to give (0-based, inclusive).\n\n{minimum: 0}"}
                },
                "required": ["agent_id"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<ReadArgs, ToolFailure> {
        parse(args)
    }

    async fn act(&self, args: ReadArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let record = match args.wait {
            Some(timeout) => tokio::select! {
                record = ctx.agents.wait(&args.agent_id, timeout) => record,
                () = ctx.cancel.cancelled() => return Err(ToolFailure::cancelled()),
            },
            None => ctx.agents.get(&args.agent_id),
        };
        let Some(record) = record else {
            return Err(ToolFailure::new(
                format!(
                    "No agent found with agent_id: {}. The agent may have been cleared or never existed.",
                    args.agent_id
                ),
                "failure",
            ));
        };
        // The runtime's detailed text is the agent's status in one tag.
        let detail = format!("<agent {} {}>", args.agent_id, record.status.word());
        Ok(ToolOutput::detailed(
            report(&record, args.since_turn),
            detail,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
    use crate::tools::task::AgentType;

    #[tokio::test]
    async fn reports_running_completed_failed_and_unknown_agents() {
        let ctx = ToolContext::new(std::env::temp_dir());
        ctx.agents.start("a", "c1", AgentType::Explore, "Read it");
        let out = ReadAgentTool
            .run(json!({"agent_id": "a"}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content.starts_with("Agent is still running. agent_id: a, agent_type: explore, status: running, description: Read it, elapsed: "),
            "{}",
            out.content
        );
        ctx.agents
            .finish("c1", AgentStatus::Completed("It says hi.".into()));
        let out = ReadAgentTool
            .run(json!({"agent_id": "a", "wait": true}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content
                .ends_with("total_turns: 1\n\n[Turn 0]\nIt says hi."),
            "{}",
            out.content
        );
        ctx.agents.start("b", "c2", AgentType::Task, "Run it");
        ctx.agents.finish("c2", AgentStatus::Failed("boom".into()));
        let out = ReadAgentTool
            .run(json!({"agent_id": "b"}), &ctx)
            .await
            .unwrap();
        assert!(out.content.starts_with("Agent failed. "), "{}", out.content);
        assert!(out.content.ends_with("\n\nError: boom"), "{}", out.content);
        let missing = ReadAgentTool
            .run(json!({"agent_id": "nope"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            missing.message,
            "No agent found with agent_id: nope. The agent may have been cleared or never existed."
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_named() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let e = ReadAgentTool.run(json!({}), &ctx).await.unwrap_err();
        assert_eq!(e.message, "Invalid input: \"agent_id\": Required");
        let e = ReadAgentTool
            .run(json!({"agent_id": "a", "timeout": -1}), &ctx)
            .await
            .unwrap_err();
        assert!(e.message.contains("\"timeout\""), "{e}");
        let e = ReadAgentTool
            .run(json!({"agent_id": "a", "wait": "yes"}), &ctx)
            .await
            .unwrap_err();
        assert!(e.message.contains("\"wait\""), "{e}");
    }
}
