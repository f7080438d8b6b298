//! `write_agent`: a follow-up message to background agents, delivered as a new user turn of
//! each one's conversation: an idle agent wakes and answers it, a running one takes it after
//! its round. The texts are the runtime's (`docs/tools.md`).
//!
//! The tool checks the call and the recipients and records the delivery in the session's
//! [`Agents`](super::agents::Agents); the session runs the round an idle agent wakes for,
//! reached through [`ToolContext::subagents`] as `task` reaches it.

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::agents::{AgentStatus, Delivery, Undeliverable};
use super::task::SubagentRequest;
use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec, json_type_name};

/// The tool's name.
pub const NAME: &str = "write_agent";

/// The most recipients one call may name (`agent_ids`), as the runtime bounds it.
const MAX_RECIPIENTS: usize = 16;

/// Whom the message goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipients {
    /// One agent (`agent_id`).
    One(String),
    /// Several named agents (`agent_ids`): all get it or none does.
    Named(Vec<String>),
    /// The agents started by this session (`scope: "children"`).
    Children,
    /// The agents sharing this agent's parent (`scope: "siblings"`).
    Siblings,
}

/// The checked arguments of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteArgs {
    /// Whom the message goes to.
    pub to: Recipients,
    /// The message.
    pub message: String,
}

/// A failure the model reads, all of this tool's with the runtime's code.
fn failure(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(message, "failure")
}

fn string_field(args: &Value, name: &str) -> Result<Option<String>, ToolFailure> {
    match args.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(failure(format!(
            "Invalid input: \"{name}\": Expected string, received {}",
            json_type_name(other)
        ))),
    }
}

fn parse(args: &Value) -> Result<WriteArgs, ToolFailure> {
    let agent_id = string_field(args, "agent_id")?;
    let agent_ids = match args.get("agent_ids") {
        None => None,
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(failure(
                    "Invalid input: \"agent_ids\": Array must contain at least 1 element(s)",
                ));
            }
            if items.len() > MAX_RECIPIENTS {
                return Err(failure(format!(
                    "Invalid input: \"agent_ids\": Array must contain at most {MAX_RECIPIENTS} element(s)"
                )));
            }
            let mut ids: Vec<String> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.is_empty() => ids.push(s.clone()),
                    Value::String(_) => {
                        return Err(failure(format!(
                            "Invalid input: \"agent_ids.{i}\": String must contain at least 1 character(s)"
                        )));
                    }
                    other => {
                        return Err(failure(format!(
                            "Invalid input: \"agent_ids.{i}\": Expected string, received {}",
                            json_type_name(other)
                        )));
                    }
                }
            }
            let mut sorted = ids.clone();
            sorted.sort();
            sorted.dedup();
            if sorted.len() != ids.len() {
                return Err(failure(
                    "Invalid input: \"agent_ids\": Array items must be unique",
                ));
            }
            Some(ids)
        }
        Some(other) => {
            return Err(failure(format!(
                "Invalid input: \"agent_ids\": Expected array, received {}",
                json_type_name(other)
            )));
        }
    };
    let scope = match args.get("scope") {
        None => None,
        Some(Value::String(s)) if s == "children" => Some(Recipients::Children),
        Some(Value::String(s)) if s == "siblings" => Some(Recipients::Siblings),
        Some(other) => {
            return Err(failure(format!(
                "Invalid input: \"scope\": Invalid enum value. Expected 'siblings' | 'children', received {other}"
            )));
        }
    };
    let Some(message) = string_field(args, "message")? else {
        return Err(failure("Invalid input: \"message\": Required"));
    };
    let to = match (agent_id, agent_ids, scope) {
        (Some(id), None, None) => Recipients::One(id),
        (None, Some(ids), None) => Recipients::Named(ids),
        (None, None, Some(scope)) => scope,
        _ => {
            return Err(failure(
                "Invalid input: Provide exactly one of \"agent_id\", \"agent_ids\", or \"scope\"",
            ));
        }
    };
    Ok(WriteArgs { to, message })
}

/// Why the agent `id` is refused, in the runtime's words for a call naming one agent.
fn refusal(id: &str, why: &Undeliverable) -> String {
    match why {
        Undeliverable::NotFound => format!(
            "No agent found with agent_id: {id}. The agent may have been cleared or never existed."
        ),
        Undeliverable::SyncMode => format!(
            "write_agent only supports background agents. Agent {id} is in sync mode. A new background task must be started for follow-up messages."
        ),
        Undeliverable::Closed(status) => format!(
            "Agent {id} is {status} and cannot receive messages. Only running or idle agents accept messages."
        ),
    }
}

/// The reason a recipient of several is refused (one line of the runtime's list).
fn reason(why: &Undeliverable) -> String {
    match why {
        Undeliverable::NotFound => "not found in visible scopes".to_owned(),
        Undeliverable::SyncMode => "not a background agent".to_owned(),
        Undeliverable::Closed(status) => format!("agent is {status}"),
    }
}

/// The `write_agent` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteAgentTool;

impl WriteAgentTool {
    /// Delivers the message to one agent; an idle one's round is handed to the session.
    async fn deliver(
        &self,
        id: &str,
        message: &str,
        ctx: &ToolContext,
    ) -> Result<(), Undeliverable> {
        if let Delivery::Wake(tool_call_id, message) = ctx.agents.deliver(id, message)? {
            wake(ctx, tool_call_id, message).await;
        }
        Ok(())
    }
}

/// Hands the round an idle agent wakes for to the session, and waits until it is handed (not
/// answered: the agent answers in the background).
async fn wake(ctx: &ToolContext, tool_call_id: String, message: String) {
    let Some(sender) = &ctx.subagents else {
        // Outside a session nothing runs the round: the agent keeps the message as its last.
        ctx.agents.finish_round(&tool_call_id, Err(String::new()));
        return;
    };
    let (reply, handed) = oneshot::channel();
    if sender
        .send(SubagentRequest::Wake {
            tool_call_id: tool_call_id.clone(),
            message,
            reply,
        })
        .is_err()
    {
        ctx.agents.finish_round(&tool_call_id, Err(String::new()));
        return;
    }
    let _ = handed.await;
}

impl AsyncTool for WriteAgentTool {
    const NAME: &'static str = NAME;
    // Talking to the session's own agents needs no permission; what they do asks for its own.
    type Args = WriteArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_owned(),
            description: "Sends a follow-up message to background agents started by task. It becomes a new user turn of each agent's conversation: an idle agent wakes and answers it as its next turn; a running agent takes it when its current turn ends.\n* Name one agent with agent_id, a few known ones with agent_ids, or every agent this conversation started with scope \"children\".\n* Send the message, then end your turn: you are notified when the agent is idle again, and read_agent gives its answer.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "description": "The id of the one background agent to send the message to."},
                    "agent_ids": {"type": "array", "items": {"type": "string", "description": "{minLength: 1}"}, "description": "A few background agent ids to send the same message to (all or none receive it).\n\n{minItems: 1, maxItems: 16, uniqueItems: true}"},
                    "scope": {"type": "string", "enum": ["siblings", "children"], "description": "Every agent of a group instead of named ones: children are the agents this conversation started; siblings those of the same parent (none for the main conversation)."},
                    "message": {"type": "string", "description": "The message; each recipient answers it as a new turn of its conversation."}
                },
                "required": ["message"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<WriteArgs, ToolFailure> {
        parse(args)
    }

    async fn act(&self, args: WriteArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        if args.message.is_empty() {
            return Err(failure(
                "No message provided. Please supply a message to send to the agent.",
            ));
        }
        let ids = match args.to {
            Recipients::One(id) => {
                self.deliver(&id, &args.message, ctx)
                    .await
                    .map_err(|why| failure(refusal(&id, &why)))?;
                return Ok(ToolOutput::detailed(
                    format!(
                        "Message delivered to agent {id}. Use read_agent to check the agent's response."
                    ),
                    format!("Message to {id}:\n{}", args.message),
                ));
            }
            // The main conversation has no parent, so no siblings (agents start no agents here).
            Recipients::Siblings => {
                return Err(failure(
                    "scope \"siblings\" is only available when this session has related agents. Use list_agents to discover agent_ids and pass explicit agent_ids if needed.",
                ));
            }
            Recipients::Children => {
                let ids = ctx.agents.receiving();
                if ids.is_empty() {
                    return Err(failure(
                        "No messages delivered. scope \"children\" matched no agent that can receive messages.\n\nRun list_agents to get current agent IDs and scopes.",
                    ));
                }
                if ids.len() > MAX_RECIPIENTS {
                    return Err(failure(format!(
                        "scope \"children\" matched {} agents, which exceeds the limit of {MAX_RECIPIENTS}. Use list_agents and pass an explicit agent_ids list to select recipients.",
                        ids.len()
                    )));
                }
                ids
            }
            Recipients::Named(ids) => ids,
        };
        // All or none: every recipient is checked before any receives the message.
        let mut statuses = Vec::with_capacity(ids.len());
        let mut refused = Vec::new();
        for id in &ids {
            match ctx.agents.can_receive(id) {
                Ok(status) => statuses.push(status),
                Err(why) => refused.push(format!("- {id}, failed, reason=\"{}\"", reason(&why))),
            }
        }
        if !refused.is_empty() {
            return Err(failure(format!(
                "No messages delivered. Some recipients cannot receive messages:\n{}\n\nRun list_agents to get current agent IDs and scopes.",
                refused.join("\n")
            )));
        }
        let mut lines = Vec::with_capacity(ids.len());
        for (id, before) in ids.iter().zip(statuses) {
            self.deliver(id, &args.message, ctx)
                .await
                .map_err(|why| failure(refusal(id, &why)))?;
            let status = match before {
                AgentStatus::Running => "running",
                other => other.word(),
            };
            lines.push(format!("- {id}, delivered, task_status={status}"));
        }
        let count = match ids.len() {
            1 => "1 agent".to_owned(),
            n => format!("{n} agents"),
        };
        Ok(ToolOutput::text(format!(
            "Message delivered to {count}.\n{}",
            lines.join("\n")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use crate::task::AgentType;

    fn context() -> ToolContext {
        let ctx = ToolContext::new(std::env::temp_dir());
        ctx.agents
            .start("reader", "c1", AgentType::Explore, "Read it", true);
        ctx.agents.finish_round("c1", Ok("first".into()));
        ctx
    }

    async fn error(args: Value, ctx: &ToolContext) -> String {
        WriteAgentTool.run(args, ctx).await.unwrap_err().message
    }

    #[tokio::test]
    async fn bad_calls_get_the_runtimes_texts() {
        let ctx = context();
        assert_eq!(
            error(json!({"agent_id": "reader"}), &ctx).await,
            "Invalid input: \"message\": Required"
        );
        assert_eq!(
            error(json!({"agent_id": 5, "message": "x"}), &ctx).await,
            "Invalid input: \"agent_id\": Expected string, received number"
        );
        assert_eq!(
            error(json!({"agent_id": "reader", "message": 7}), &ctx).await,
            "Invalid input: \"message\": Expected string, received number"
        );
        assert_eq!(
            error(json!({"message": "x"}), &ctx).await,
            "Invalid input: Provide exactly one of \"agent_id\", \"agent_ids\", or \"scope\""
        );
        assert_eq!(
            error(
                json!({"agent_id": "reader", "scope": "children", "message": "x"}),
                &ctx
            )
            .await,
            "Invalid input: Provide exactly one of \"agent_id\", \"agent_ids\", or \"scope\""
        );
        assert_eq!(
            error(json!({"agent_ids": [], "message": "x"}), &ctx).await,
            "Invalid input: \"agent_ids\": Array must contain at least 1 element(s)"
        );
        assert_eq!(
            error(json!({"agent_id": "reader", "message": ""}), &ctx).await,
            "No message provided. Please supply a message to send to the agent."
        );
        assert_eq!(
            error(json!({"agent_id": "nope", "message": "x"}), &ctx).await,
            "No agent found with agent_id: nope. The agent may have been cleared or never existed."
        );
        assert_eq!(
            error(json!({"scope": "siblings", "message": "x"}), &ctx).await,
            "scope \"siblings\" is only available when this session has related agents. Use list_agents to discover agent_ids and pass explicit agent_ids if needed."
        );
        let too_many: Vec<String> = (0..17).map(|i| format!("a{i}")).collect();
        assert!(
            error(json!({"agent_ids": too_many, "message": "x"}), &ctx)
                .await
                .contains("at most 16 element(s)")
        );
    }

    #[tokio::test]
    async fn several_recipients_get_it_all_or_none() {
        let ctx = context();
        assert_eq!(
            error(
                json!({"agent_ids": ["reader", "nope"], "message": "x"}),
                &ctx
            )
            .await,
            "No messages delivered. Some recipients cannot receive messages:\n- nope, failed, reason=\"not found in visible scopes\"\n\nRun list_agents to get current agent IDs and scopes."
        );
        // Nothing was delivered to the one that exists.
        assert_eq!(ctx.agents.get("reader").unwrap().status, AgentStatus::Idle);
        let out = WriteAgentTool
            .run(json!({"scope": "children", "message": "x"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "Message delivered to 1 agent.\n- reader, delivered, task_status=idle"
        );
    }

    #[tokio::test]
    async fn an_idle_agent_is_woken_through_the_session_and_a_running_one_queues() {
        let mut ctx = context();
        let (sender, mut requests) = tokio::sync::mpsc::unbounded_channel();
        ctx.subagents = Some(sender);
        let session = tokio::spawn(async move {
            match requests.recv().await {
                Some(SubagentRequest::Wake {
                    tool_call_id,
                    message,
                    reply,
                }) => {
                    let _ = reply.send(());
                    (tool_call_id, message)
                }
                other => panic!("expected a wake, got {other:?}"),
            }
        });
        let out = WriteAgentTool
            .run(json!({"agent_id": "reader", "message": "Next?"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "Message delivered to agent reader. Use read_agent to check the agent's response."
        );
        assert_eq!(
            out.detailed_content.as_deref(),
            Some("Message to reader:\nNext?")
        );
        assert_eq!(session.await.unwrap(), ("c1".into(), "Next?".into()));
        // Running now: a second message waits for the round to end, and needs no session.
        WriteAgentTool
            .run(json!({"agent_id": "reader", "message": "Then?"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            ctx.agents.get("reader").unwrap().queued,
            std::collections::VecDeque::from(["Then?".to_owned()])
        );
    }

    #[tokio::test]
    async fn a_sync_agent_takes_no_message() {
        let ctx = ToolContext::new(std::env::temp_dir());
        ctx.agents
            .start("sync-reader", "c9", AgentType::Explore, "Read it", false);
        ctx.agents.finish_round("c9", Ok("done".into()));
        assert_eq!(
            error(json!({"agent_id": "sync-reader", "message": "x"}), &ctx).await,
            "write_agent only supports background agents. Agent sync-reader is in sync mode. A new background task must be started for follow-up messages."
        );
    }
}
