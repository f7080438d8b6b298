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

/// What the runtime tells a model that reads a running agent: wait for the notice.
const WAIT_FOR_NOTICE: &str = "Consider telling the user you're waiting, then end your response with no further tool calls. A completion notification will arrive as a new turn; no need to poll or redo its work.";

/// The agent's finished rounds from `since_turn` on, as the runtime shows them: the first
/// round's answer alone, a follow-up round as its message and its answer.
fn turns_text(record: &AgentRecord, since_turn: u64) -> Option<String> {
    let shown: Vec<String> = record
        .turns
        .iter()
        .enumerate()
        .skip(usize::try_from(since_turn).unwrap_or(usize::MAX))
        .map(|(i, turn)| match &turn.message {
            None => format!("[Turn {i}]\n{}", turn.response),
            Some(message) => format!(
                "[Turn {i}]\n[Message]\n{message}\n\n[Response]\n{}",
                turn.response
            ),
        })
        .collect();
    (!shown.is_empty()).then(|| shown.join("\n\n"))
}

/// The report on one agent, in the runtime's words: its facts on one line, then its rounds
/// (or why it failed). `timed_out`: a wait for it ran out.
pub fn report(record: &AgentRecord, since_turn: u64, timed_out: Option<Duration>) -> String {
    let facts = format!(
        "agent_id: {}, agent_type: {}, status: {}, description: {}, elapsed: {}s, total_turns: {}",
        record.id,
        record.agent_type.name(),
        record.status.word(),
        record.description,
        record.elapsed_secs(),
        record.turns.len()
    );
    let turns = turns_text(record, since_turn);
    match &record.status {
        AgentStatus::Running => {
            let head = match timed_out {
                Some(waited) => format!(
                    "Agent is still running after waiting {}s. {facts}, (timed out waiting for completion) {WAIT_FOR_NOTICE}",
                    waited.as_secs()
                ),
                None => format!("Agent is still running. {facts}. {WAIT_FOR_NOTICE}"),
            };
            match turns {
                Some(turns) => format!("{head}\n\nCompleted turns:\n{turns}"),
                None => head,
            }
        }
        AgentStatus::Idle => {
            let body = turns.unwrap_or_else(|| format!("No turns starting at turn {since_turn}."));
            format!("Agent is idle (waiting for messages). {facts}\n\n{body}")
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
            description: "Gives the status (running, idle, failed) of an agent started by task, and its answers, one per round (the task, then each write_agent message). You are notified when a background agent goes idle; then call this once to read its answer.".to_owned(),
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
        let found = match args.wait {
            Some(timeout) => tokio::select! {
                found = ctx.agents.wait(&args.agent_id, timeout) => {
                    found.map(|(record, timed_out)| (record, timed_out.then_some(timeout)))
                }
                () = ctx.cancel.cancelled() => return Err(ToolFailure::cancelled()),
            },
            None => ctx.agents.get(&args.agent_id).map(|r| (r, None)),
        };
        let Some((record, timed_out)) = found else {
            return Err(ToolFailure::new(
                format!(
                    "No agent found with agent_id: {}. The agent may have been cleared or never existed.",
                    args.agent_id
                ),
                "failure",
            ));
        };
        // The runtime's detailed text is the agent's status in one tag.
        let status = match record.status {
            AgentStatus::Running => "still running",
            ref other => other.word(),
        };
        let detail = format!("<agent {} {status}>", args.agent_id);
        Ok(ToolOutput::detailed(
            report(&record, args.since_turn, timed_out),
            detail,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use crate::task::AgentType;

    #[tokio::test]
    async fn reports_running_idle_failed_and_unknown_agents_in_the_runtimes_words() {
        let ctx = ToolContext::new(std::env::temp_dir());
        ctx.agents
            .start("a", "c1", AgentType::Explore, "Read it", true);
        let out = ReadAgentTool
            .run(json!({"agent_id": "a"}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content.starts_with("Agent is still running. agent_id: a, agent_type: explore, status: running, description: Read it, elapsed: "),
            "{}",
            out.content
        );
        assert!(out.content.ends_with("total_turns: 0. Consider telling the user you're waiting, then end your response with no further tool calls. A completion notification will arrive as a new turn; no need to poll or redo its work."), "{}", out.content);
        assert_eq!(
            out.detailed_content.as_deref(),
            Some("<agent a still running>")
        );
        let out = ReadAgentTool
            .run(json!({"agent_id": "a", "wait": true, "timeout": 0}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content
                .starts_with("Agent is still running after waiting 0s. agent_id: a,"),
            "{}",
            out.content
        );
        assert!(
            out.content
                .contains("total_turns: 0, (timed out waiting for completion) Consider"),
            "{}",
            out.content
        );
        ctx.agents.finish_round("c1", Ok("It says hi.".into()));
        ctx.agents.deliver("a", "And then?").unwrap();
        ctx.agents.finish_round("c1", Ok("Then bye.".into()));
        let out = ReadAgentTool
            .run(json!({"agent_id": "a", "wait": true}), &ctx)
            .await
            .unwrap();
        assert!(out.content.starts_with("Agent is idle (waiting for messages). agent_id: a, agent_type: explore, status: idle, description: Read it, elapsed: "), "{}", out.content);
        assert!(
            out.content.ends_with(
                "total_turns: 2\n\n[Turn 0]\nIt says hi.\n\n[Turn 1]\n[Message]\nAnd then?\n\n[Response]\nThen bye."
            ),
            "{}",
            out.content
        );
        assert_eq!(out.detailed_content.as_deref(), Some("<agent a idle>"));
        let out = ReadAgentTool
            .run(json!({"agent_id": "a", "since_turn": 1}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content.ends_with(
                "total_turns: 2\n\n[Turn 1]\n[Message]\nAnd then?\n\n[Response]\nThen bye."
            ),
            "{}",
            out.content
        );
        let out = ReadAgentTool
            .run(json!({"agent_id": "a", "since_turn": 5}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content
                .ends_with("total_turns: 2\n\nNo turns starting at turn 5."),
            "{}",
            out.content
        );
        ctx.agents.start("b", "c2", AgentType::Task, "Run it", true);
        ctx.agents.finish_round("c2", Err("boom".into()));
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
    async fn a_running_follow_up_shows_the_rounds_already_done() {
        let ctx = ToolContext::new(std::env::temp_dir());
        ctx.agents
            .start("a", "c1", AgentType::Explore, "Read it", true);
        ctx.agents.finish_round("c1", Ok(String::new()));
        ctx.agents.deliver("a", "again").unwrap();
        let out = ReadAgentTool
            .run(json!({"agent_id": "a"}), &ctx)
            .await
            .unwrap();
        assert!(
            out.content
                .ends_with("redo its work.\n\nCompleted turns:\n[Turn 0]\n"),
            "{:?}",
            out.content
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
