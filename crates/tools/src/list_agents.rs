//! `list_agents`: the session's background agents, grouped by status as the runtime lists
//! them.

use serde_json::{Value, json};

use super::agents::{AgentRecord, AgentStatus};
use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec};

/// The tool's name.
pub const NAME: &str = "list_agents";

/// The `list_agents` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListAgentsTool;

fn include_completed(args: &Value) -> Result<bool, ToolFailure> {
    match args.get("include_completed") {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ToolFailure::invalid(
            "Invalid input: \"include_completed\": Expected boolean",
        )),
    }
}

fn check_scope(args: &Value) -> Result<(), ToolFailure> {
    match args.get("scope") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if ["siblings", "children", "all"].contains(&s.as_str()) => Ok(()),
        Some(other) => Err(ToolFailure::invalid(format!(
            "Invalid input: \"scope\": Invalid enum value. Expected 'siblings' | 'children' | 'all', received {other}"
        ))),
    }
}

/// A group of the list: its title, the mark of its lines, and which agents it holds.
type Group = (&'static str, &'static str, fn(&AgentStatus) -> bool);

/// The list as the runtime gives it: one group per status (running, idle, then failed), each
/// agent on its line with its running time and the session that owns it.
pub fn listing(records: &[AgentRecord], include_completed: bool, owner: Option<&str>) -> String {
    let groups: [Group; 3] = [
        ("Running", "🔄", |s| matches!(s, AgentStatus::Running)),
        ("Idle", "💤", |s| matches!(s, AgentStatus::Idle)),
        ("Failed", "❌", |s| matches!(s, AgentStatus::Failed(_))),
    ];
    let owner = owner.map(|o| format!(", owner: {o}")).unwrap_or_default();
    let mut sections = Vec::new();
    for (title, mark, belongs) in groups {
        if !include_completed && title == "Failed" {
            continue;
        }
        let lines: Vec<String> = records
            .iter()
            .filter(|r| belongs(&r.status))
            .map(|r| {
                format!(
                    "  {mark} {}: {} - \"{}\" ({}s{owner})",
                    r.id,
                    r.agent_type.name(),
                    r.description,
                    r.elapsed_secs()
                )
            })
            .collect();
        if !lines.is_empty() {
            sections.push(format!("{title} ({}):\n{}", lines.len(), lines.join("\n")));
        }
    }
    if sections.is_empty() {
        "No background agents.".to_owned()
    } else {
        format!("Background agents:\n\n{}", sections.join("\n\n"))
    }
}

impl AsyncTool for ListAgentsTool {
    const NAME: &'static str = NAME;
    /// Whether the ended agents are listed too.
    type Args = bool;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_owned(),
            description: "Lists the agents of this session (running, idle, failed) with their ids, types, descriptions and running times. To follow one agent, call read_agent with its id instead.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "include_completed": {"type": "boolean", "description": "false: leave out the failed agents; true (the default): list them too."},
                    "scope": {"type": "string", "enum": ["siblings", "children", "all"], "description": "Which agents to list; every background agent here is a child of this session, so each scope lists the same ones."}
                },
                "required": []
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<bool, ToolFailure> {
        let include = include_completed(args)?;
        check_scope(args)?;
        Ok(include)
    }

    async fn act(&self, include: bool, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(listing(
            &ctx.agents.list(),
            include,
            ctx.agents.owner(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use crate::agents::Agents;
    use crate::task::AgentType;

    #[tokio::test]
    async fn lists_by_status_with_the_owner() {
        let mut ctx = ToolContext::new(std::env::temp_dir());
        let out = ListAgentsTool.run(json!({}), &ctx).await.unwrap();
        assert_eq!(out.content, "No background agents.");
        ctx.agents = std::sync::Arc::new(Agents::owned_by("s-1".into()));
        ctx.agents
            .start("a", "c1", AgentType::Explore, "Read it", true);
        ctx.agents.start("b", "c2", AgentType::Task, "Run it", true);
        ctx.agents.finish_round("c2", Ok("ok".into()));
        ctx.agents
            .start("c", "c3", AgentType::Task, "Break it", true);
        ctx.agents.finish_round("c3", Err("boom".into()));
        let out = ListAgentsTool.run(json!({}), &ctx).await.unwrap();
        assert!(
            out.content
                .starts_with("Background agents:\n\nRunning (1):\n  🔄 a: explore - \"Read it\" ("),
            "{}",
            out.content
        );
        assert!(
            out.content
                .contains("s, owner: s-1)\n\nIdle (1):\n  💤 b: task - \"Run it\" ("),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("\n\nFailed (1):\n  ❌ c: task"),
            "{}",
            out.content
        );
        let out = ListAgentsTool
            .run(json!({"include_completed": false, "scope": "all"}), &ctx)
            .await
            .unwrap();
        assert!(!out.content.contains("Failed"), "{}", out.content);
        assert!(out.content.contains("Idle (1)"), "{}", out.content);
        let bad = ListAgentsTool
            .run(json!({"scope": "everyone"}), &ctx)
            .await
            .unwrap_err();
        assert!(bad.message.contains("\"scope\""), "{bad}");
    }
}
