//! `skill`: loads one of the session's skills (`crate::skills`) into the conversation.
//!
//! Offered only while a skill is enabled, as the runtime (the set is live: a client may turn
//! skills on and off while the session runs, so the call reads it as it is then). The call's answer says the skill was
//! loaded; the skill itself reaches the model as its `<skill-context>` block in a user message
//! after the tool result, which the loop records with `skill.invoked` once the call completed.

use std::sync::Arc;

use serde_json::{Value, json};

use super::events::ToolEvent;
use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec};
use crate::skills::{Skill, SkillSet};

/// The `skill` tool over a session's skills.
#[derive(Debug, Clone)]
pub struct SkillTool {
    skills: Arc<SkillSet>,
}

impl SkillTool {
    /// The tool for `skills`.
    pub fn new(skills: Arc<SkillSet>) -> Self {
        SkillTool { skills }
    }

    fn load(&self, args: &Value) -> Result<Skill, ToolFailure> {
        let name = match args.get("skill") {
            Some(Value::String(name)) => name,
            // The runtime's schema check of the call (its journal keeps the part after the colon).
            Some(Value::Null) | None => {
                return Err(ToolFailure::new(
                    "Invalid input: \"skill\": Required",
                    "failure",
                ));
            }
            Some(_) => {
                return Err(ToolFailure::new(
                    "Invalid input: \"skill\": Expected string",
                    "failure",
                ));
            }
        };
        self.skills.enabled(name).ok_or_else(|| {
            ToolFailure::new(
                format!(
                    "Skill \"{name}\" not found. Available skills: {}",
                    self.skills.enabled_names().join(", ")
                ),
                "failure",
            )
        })
    }
}

impl AsyncTool for SkillTool {
    const NAME: &'static str = "skill";
    type Args = Skill;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "skill".into(),
            description: "Loads a skill into the conversation: its instructions follow as a \
                <skill-context> message. Call it with the name of one of the skills listed in \
                <available_skills> as soon as one fits the task, before answering."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "skill": {"type": "string", "description": "The name of the skill to load, e.g. \"pdf\"."}
                },
                "required": ["skill"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<Skill, ToolFailure> {
        self.load(args)
    }

    async fn act(&self, skill: Skill, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let output = ToolOutput {
            content: format!(
                "Skill \"{}\" loaded successfully. Follow the instructions in the skill context.",
                skill.name
            ),
            detailed_content: Some(format!("Skill loaded successfully ✅\n\n{}", skill.body)),
            ..Default::default()
        };
        ctx.notify(ToolEvent::SkillInvoked(Box::new(skill)));
        Ok(output)
    }

    /// The runtime titles a call by the skill it names.
    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        args.get("skill").and_then(Value::as_str).map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;

    fn tool(dir: &std::path::Path) -> SkillTool {
        std::fs::create_dir_all(dir.join("demo")).unwrap();
        std::fs::write(
            dir.join("demo/SKILL.md"),
            "---\nname: demo\ndescription: Demo\n---\n\nSay DEMO.\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("off")).unwrap();
        std::fs::write(
            dir.join("off/SKILL.md"),
            "---\nname: off\ndescription: Off\n---\nx\n",
        )
        .unwrap();
        let (set, warnings) = SkillSet::load(&[dir.to_path_buf()], &["off".into()]);
        assert!(warnings.is_empty());
        SkillTool::new(Arc::new(set))
    }

    #[tokio::test]
    async fn loads_an_enabled_skill_and_tells_the_session() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = tool(tmp.path());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut ctx = ToolContext::new(tmp.path());
        ctx.events = Some(tx);
        let out = tool.run(json!({"skill": "demo"}), &ctx).await.unwrap();
        assert_eq!(
            out.content,
            "Skill \"demo\" loaded successfully. Follow the instructions in the skill context."
        );
        assert_eq!(
            out.detailed_content.as_deref(),
            Some("Skill loaded successfully ✅\n\nSay DEMO.\n")
        );
        match rx.try_recv() {
            Ok(ToolEvent::SkillInvoked(skill)) => assert_eq!(skill.name, "demo"),
            other => panic!("expected the skill, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn disabled_unknown_and_missing_names_fail() {
        let tmp = tempfile::tempdir().unwrap();
        let tool = tool(tmp.path());
        let ctx = ToolContext::new(tmp.path());
        for (args, text) in [
            (
                json!({"skill": "off"}),
                "Skill \"off\" not found. Available skills: demo",
            ),
            (
                json!({"skill": "nope"}),
                "Skill \"nope\" not found. Available skills: demo",
            ),
            (json!({}), "Invalid input: \"skill\": Required"),
            (
                json!({"skill": 3}),
                "Invalid input: \"skill\": Expected string",
            ),
        ] {
            let failure = tool.run(args.clone(), &ctx).await.unwrap_err();
            assert_eq!(
                (failure.message.as_str(), failure.code.as_deref()),
                (text, Some("failure")),
                "{args}"
            );
            assert!(tool.permission(&args, &ctx).is_err());
        }
    }
}
