//! The set of tools a session offers the model, in the order they are offered.

use std::sync::Arc;

use serde_json::Value;

use super::{
    Tool, ToolSpec, bash, create, edit, glob, grep, list_agents, list_bash, read_agent, read_bash,
    skill, sql, stop_bash, task, task_complete, view, web_fetch, write_agent,
};

/// The tools of a session, looked up by name; keeps registration order so the
/// `tools` array and the unknown-tool message are stable. Cloning shares the tools (a
/// session's set is rebuilt, not edited, when its MCP servers' tools change).
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools in the runtime's order; `task_complete` only in autopilot, as the
    /// runtime offers it.
    pub fn builtin(autopilot: bool) -> Self {
        let mut registry = Self::new();
        registry.register(Box::new(bash::BashTool));
        registry.register(Box::new(read_bash::ReadBashTool));
        registry.register(Box::new(stop_bash::StopBashTool));
        registry.register(Box::new(list_bash::ListBashTool));
        registry.register(Box::new(view::ViewTool));
        registry.register(Box::new(create::CreateTool));
        registry.register(Box::new(edit::EditTool));
        registry.register(Box::new(web_fetch::WebFetchTool));
        registry.register(Box::new(sql::SqlTool));
        registry.register(Box::new(read_agent::ReadAgentTool));
        registry.register(Box::new(list_agents::ListAgentsTool));
        registry.register(Box::new(write_agent::WriteAgentTool));
        registry.register(Box::new(grep::GrepTool));
        registry.register(Box::new(glob::GlobTool));
        registry.register(Box::new(task::TaskTool::default()));
        if autopilot {
            registry.register(Box::new(task_complete::TaskCompleteTool));
        }
        registry
    }

    /// Registers `skill` over `skills` at the runtime's place (after `web_fetch`), when the
    /// session has skill directories. The runtime does not offer the tool while no skill is
    /// enabled; since a client may turn skills on and off, the loop leaves it out of the
    /// tools of a request made while none is (`SkillSet::any_enabled`).
    pub fn offer_skills(&mut self, skills: Arc<crate::skills::SkillSet>) {
        if !skills.configured() {
            return;
        }
        let tool: Arc<dyn Tool> = Arc::new(skill::SkillTool::new(skills));
        self.unregister("skill");
        let at = self
            .tools
            .iter()
            .position(|t| t.name() == "web_fetch")
            .map_or(self.tools.len(), |i| i + 1);
        self.tools.insert(at, tool);
    }

    /// Offers `ask_user` (last), answered by `answers`: the runtime offers the tool only when
    /// someone can answer it.
    pub fn offer_ask_user(&mut self, answers: Arc<dyn crate::ask_user::UserInput>) {
        self.register(Box::new(crate::ask_user::AskUserTool::new(answers)));
    }

    /// Offers `exit_plan_mode` (last), reviewed by `reviewer`: the runtime offers the tool only
    /// when someone can review a plan (and only to messages in plan mode, `turn.rs`).
    pub fn offer_exit_plan_mode(&mut self, reviewer: Arc<dyn crate::plan_review::PlanReviewer>) {
        self.register(Box::new(crate::exit_plan_mode::ExitPlanModeTool::new(
            reviewer,
        )));
    }

    /// Adds a tool; one with the same name is replaced in place (so an SDK
    /// client can override a built-in without reordering the list).
    pub fn register(&mut self, tool: Box<dyn Tool>) {
        self.register_shared(Arc::from(tool));
    }

    /// [`ToolRegistry::register`] for a tool already shared.
    pub fn register_shared(&mut self, tool: Arc<dyn Tool>) {
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
    }

    /// Removes the tool called `name`, if any.
    pub fn unregister(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let index = self.tools.iter().position(|t| t.name() == name)?;
        Some(self.tools.remove(index))
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.name() == name)
            .map(|t| t.as_ref())
    }

    /// Every tool's spec, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// The OpenAI Chat Completions `tools` array for these tools.
    pub fn openai_tools(&self) -> Value {
        Value::Array(self.specs().iter().map(ToolSpec::to_openai).collect())
    }

    /// Every tool's name, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The result text for a call to a tool that is not here (the runtime's wording, TOOLS.md).
    pub fn unknown_tool_message(&self, name: &str) -> String {
        format!(
            "Tool '{name}' does not exist. Available tools that can be called are {}.",
            self.names().join(", ")
        )
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_names_and_order() {
        assert_eq!(
            ToolRegistry::builtin(false).names(),
            vec![
                "bash",
                "read_bash",
                "stop_bash",
                "list_bash",
                "view",
                "create",
                "edit",
                "web_fetch",
                "sql",
                "read_agent",
                "list_agents",
                "write_agent",
                "grep",
                "glob",
                "task"
            ]
        );
        let autopilot = ToolRegistry::builtin(true);
        assert_eq!(autopilot.names().last(), Some(&"task_complete"));
        assert!(autopilot.get("task_complete").is_some());
        assert!(ToolRegistry::builtin(false).get("task_complete").is_none());
    }

    #[test]
    fn unknown_tool_message_lists_tools() {
        let registry = ToolRegistry::builtin(false);
        assert_eq!(
            registry.unknown_tool_message("read_file"),
            "Tool 'read_file' does not exist. Available tools that can be called are bash, read_bash, stop_bash, list_bash, view, create, edit, web_fetch, sql, read_agent, list_agents, write_agent, grep, glob, task."
        );
    }

    #[test]
    fn skill_is_offered_after_web_fetch_only_with_an_enabled_skill() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a")).unwrap();
        std::fs::write(
            tmp.path().join("a/SKILL.md"),
            "---\nname: a\ndescription: A\n---\nx\n",
        )
        .unwrap();
        let dirs = [tmp.path().to_path_buf()];
        let mut registry = ToolRegistry::builtin(false);
        registry.offer_skills(Arc::new(crate::skills::SkillSet::load(&[], &[]).0));
        assert!(registry.get("skill").is_none());
        registry.offer_skills(Arc::new(
            crate::skills::SkillSet::load(&dirs, &["a".into()]).0,
        ));
        assert_eq!(registry.names()[7..10], ["web_fetch", "skill", "sql"]);
        assert_eq!(registry.len(), 16);
    }

    #[test]
    fn register_replaces_same_name_in_place() {
        let mut registry = ToolRegistry::builtin(false);
        registry.register(Box::new(task_complete::TaskCompleteTool));
        registry.register(Box::new(view::ViewTool));
        assert_eq!(registry.len(), 16);
        assert_eq!(registry.names()[4], "view");
        assert!(registry.unregister("view").is_some());
        assert!(registry.get("view").is_none());
    }

    #[test]
    fn builtin_names_are_the_registry_names() {
        let registry = ToolRegistry::builtin(true);
        let mut names = registry.names();
        names.sort();
        let mut ours = turnstile_permissions::BUILTIN_TOOLS.to_vec();
        ours.sort();
        assert_eq!(names, ours);
    }
}
