//! `task`: hands a piece of work to a sub-agent, a nested agent loop with its own history,
//! system prompt and tool subset, and gives the model the sub-agent's final answer.
//!
//! The tool checks the call and describes the sub-agent; the session runs the sub-agent's
//! loop (`session/subagent.rs`), reached through [`ToolContext::subagents`] the way a tool
//! reaches the permission flow through its asks channel.

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::{AsyncTool, ToolContext, ToolFailure, ToolOutput, ToolSpec};

/// The tool's name.
pub const NAME: &str = "task";

/// The agent types a sub-agent can be, in the order the runtime lists them (its schema and
/// its unknown-type answer).
pub const AGENT_TYPES: [AgentType; 6] = [
    AgentType::Explore,
    AgentType::Task,
    AgentType::General,
    AgentType::CodeReview,
    AgentType::Research,
    AgentType::SecurityReview,
];

/// The tools an explore agent gets (read and search; the runtime's subset, in its order).
const EXPLORE_TOOLS: [&str; 7] = [
    "bash",
    "read_bash",
    "stop_bash",
    "list_bash",
    "view",
    "grep",
    "glob",
];

/// The tools a research agent gets (read, search and fetch; the runtime's subset).
const RESEARCH_TOOLS: [&str; 4] = ["view", "web_fetch", "grep", "glob"];

/// What a sub-agent is for; decides its system prompt and its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentType {
    /// Fast read-only exploration of the code base.
    Explore,
    /// Runs commands (tests, builds) and reports briefly.
    Task,
    /// Any multi-step work with the whole tool set.
    General,
    /// Reviews a change for real bugs, with the whole tool set.
    CodeReview,
    /// Searches and reads to answer a question, with read and fetch tools only.
    Research,
    /// Reviews a change for security holes, with the whole tool set.
    SecurityReview,
}

impl AgentType {
    /// The type as the model names it (`agent_type`), also the agent's `agentName`.
    pub fn name(self) -> &'static str {
        match self {
            AgentType::Explore => "explore",
            AgentType::Task => "task",
            AgentType::General => "general-purpose",
            AgentType::CodeReview => "code-review",
            AgentType::Research => "research",
            AgentType::SecurityReview => "security-review",
        }
    }

    /// The runtime's display name of the agent (`agentDisplayName`).
    pub fn display_name(self) -> &'static str {
        match self {
            AgentType::Explore => "Explore Agent",
            AgentType::Task => "Task Agent",
            AgentType::General => "General Purpose Agent",
            AgentType::CodeReview => "Code Review Agent",
            AgentType::Research => "Research Agent",
            AgentType::SecurityReview => "Security Review Agent",
        }
    }

    /// What the agent does, for `agentDescription` and the tool's description.
    pub fn description(self) -> &'static str {
        match self {
            AgentType::Explore => {
                "Explores the code base and answers questions about it with read and search tools (grep, glob, view, bash) in its own context window; several can run side by side."
            }
            AgentType::Task => {
                "Runs commands with long output (tests, builds, linters, installs) and reports briefly on success and in full on failure."
            }
            AgentType::General => {
                "Does complex multi-step work with the whole tool set in its own context window."
            }
            AgentType::CodeReview => {
                "Reviews a change (staged, unstaged or a branch's diff) without changing it and reports only bugs, security holes and logic errors it is sure of; no style remarks."
            }
            AgentType::Research => {
                "Answers a research question by searching and reading (grep, glob, view, web_fetch) and reports what it found with the sources."
            }
            AgentType::SecurityReview => {
                "Reviews a change for exploitable security holes (injection, secrets, unsafe paths and permissions, and the like) and reports only the ones it is sure of."
            }
        }
    }

    /// The sub-agent's system prompt.
    pub fn system_prompt(self, cwd: &std::path::Path) -> String {
        let role = match self {
            AgentType::Explore => {
                "You are an exploration sub-agent. Answer the question you are given as quickly as you can, then stop. Do not change any file. Keep the answer short and cite file paths and line numbers."
            }
            AgentType::Task => {
                "You are a command-running sub-agent. Run what you are asked to run. When it succeeds, answer with a one-line summary; when it fails, answer with the output that shows why."
            }
            AgentType::General => {
                "You are a sub-agent working on your parent agent's task on your own: nobody can answer questions, so work until the task is done, then answer with what you did and found."
            }
            AgentType::CodeReview => {
                "You are a code review sub-agent. Find the change to review (git diff, staged and unstaged, or the branch against its base), read what it touches, and report only problems you are sure of: bugs, security holes, logic errors, each with the file, the line and why. Do not change any file; say so plainly when you found nothing."
            }
            AgentType::Research => {
                "You are a research sub-agent. Search and read to answer the question you are given, check what you claim against what you read, and answer with your findings and where each came from. Do not change any file."
            }
            AgentType::SecurityReview => {
                "You are a security review sub-agent. Review the change you are given, or the working tree's uncommitted change, for holes an attacker could use: injection, secrets in code, unsafe paths, permissions and deserialisation, and the like. Report only what you are sure of, each with the file, the line, the attack and the fix. Do not change any file."
            }
        };
        format!(
            "{role}\n\nYour answer is the only thing your parent agent reads of your work: make it complete.\n\n<environment_context>\nWorking directory: {}\n</environment_context>",
            cwd.display()
        )
    }

    /// Whether the agent may call the tool `name` (it never gets `task` itself: sub-agents
    /// do not nest here).
    pub fn offers(self, name: &str) -> bool {
        match self {
            AgentType::Explore => EXPLORE_TOOLS.contains(&name),
            AgentType::Research => RESEARCH_TOOLS.contains(&name),
            AgentType::Task
            | AgentType::General
            | AgentType::CodeReview
            | AgentType::SecurityReview => ![
                NAME,
                "task_complete",
                "read_agent",
                "list_agents",
                "write_agent",
            ]
            .contains(&name),
        }
    }

    fn parse(name: &str) -> Option<Self> {
        AGENT_TYPES.into_iter().find(|t| t.name() == name)
    }
}

/// The built-in agent types a session offers: all of [`AGENT_TYPES`], or the ones its
/// `includedBuiltinAgents` names less the ones its `excludedBuiltinAgents` names (exclusion
/// wins; a name that is no built-in type is ignored, as the runtime ignores it).
pub fn offered_types(included: Option<&[String]>, excluded: &[String]) -> Vec<AgentType> {
    AGENT_TYPES
        .into_iter()
        .filter(|t| included.is_none_or(|names| names.iter().any(|n| n == t.name())))
        .filter(|t| !excluded.iter().any(|n| n == t.name()))
        .collect()
}

/// A checked `task` call.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskArgs {
    /// Short description shown as the call's intent.
    pub description: String,
    /// The work, as the sub-agent's first user message.
    pub prompt: String,
    /// The kind of sub-agent.
    pub agent_type: AgentType,
    /// The short name the model gave the agent.
    pub name: String,
    /// A model other than the session's, when the model asked for one.
    pub model: Option<String>,
    /// `mode: "background"`: the call answers at once with the agent's id, and the agent
    /// runs alongside the rest of the turn.
    pub background: bool,
}

impl TaskArgs {
    /// Checks a call's arguments: the runtime's wording for a missing field and for an
    /// unknown agent type; `mode` is `sync` (the default) or `background`.
    pub fn parse(args: &Value) -> Result<Self, ToolFailure> {
        Self::parse_among(args, &AGENT_TYPES)
    }

    /// [`TaskArgs::parse`] for a session that offers only `types`: another type is unknown.
    pub fn parse_among(args: &Value, types: &[AgentType]) -> Result<Self, ToolFailure> {
        let field = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        // The runtime checks the required fields in its schema's order and names the first.
        for key in ["name", "prompt", "agent_type", "description"] {
            if field(key).is_none() {
                return Err(ToolFailure::invalid(format!(
                    "Invalid input: \"{key}\": Required"
                )));
            }
        }
        let kind = field("agent_type").unwrap_or_default();
        let Some(agent_type) = AgentType::parse(&kind).filter(|t| types.contains(t)) else {
            return Err(ToolFailure::new(
                format!(
                    "Unknown agent_type: {kind}. Valid types are: {}",
                    available(types)
                ),
                "failure",
            ));
        };
        let background = match field("mode").as_deref() {
            None | Some("sync") => false,
            Some("background") => true,
            Some(mode) => {
                return Err(ToolFailure::invalid(format!(
                    "Invalid input: \"mode\": Invalid enum value. Expected 'sync' | 'background', received '{mode}'"
                )));
            }
        };
        Ok(TaskArgs {
            description: field("description").unwrap_or_default(),
            prompt: field("prompt").unwrap_or_default(),
            agent_type,
            name: field("name").unwrap_or_default(),
            model: field("model").filter(|m| !m.is_empty()),
            background,
        })
    }
}

/// The agent types, comma-separated.
fn available(types: &[AgentType]) -> String {
    types
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a background `task` call answers at once (the runtime's words).
pub fn started_text(agent_id: &str) -> String {
    format!(
        "Agent started in background with agent_id: {agent_id}. You'll be notified when it completes. Tell the user you're waiting and end your response, or continue unrelated work until notified. The agent supports multi-turn conversations — use write_agent to send follow-up messages."
    )
}

/// Work a tool hands to the session's agent runner.
#[derive(Debug)]
pub enum SubagentRequest {
    /// Run the sub-agent of a `task` call; the session answers on `reply` with its final text
    /// (or why it failed), or with the agent's id at once in background mode.
    Start {
        /// The checked call.
        args: TaskArgs,
        /// Where the session sends the outcome.
        reply: oneshot::Sender<Result<ToolOutput, ToolFailure>>,
    },
    /// Run the next round of an idle agent that `write_agent` woke with `message`; the
    /// session answers on `reply` once the round is under way.
    Wake {
        /// The `task` call that started the agent.
        tool_call_id: String,
        /// The message the round answers.
        message: String,
        /// Told when the round is handed over.
        reply: oneshot::Sender<()>,
    },
}

/// Where a `task` call sends its sub-agent to be run.
pub type SubagentSender = mpsc::UnboundedSender<SubagentRequest>;

/// The `task` tool, offering the agent types it holds (the session's built-in agent policy).
pub struct TaskTool {
    types: Vec<AgentType>,
}

impl Default for TaskTool {
    /// Every built-in agent type.
    fn default() -> Self {
        TaskTool {
            types: AGENT_TYPES.to_vec(),
        }
    }
}

impl TaskTool {
    /// The tool offering only `types` (see [`offered_types`]).
    pub fn offering(types: Vec<AgentType>) -> Self {
        TaskTool { types }
    }
}

impl AsyncTool for TaskTool {
    const NAME: &'static str = NAME;
    // The sub-agent's own calls ask for what they need; starting one needs nothing.
    type Args = TaskArgs;

    fn offer(&self) -> ToolSpec {
        let types: Vec<String> = self
            .types
            .iter()
            .map(|t| format!("- {}: {}", t.name(), t.description()))
            .collect();
        ToolSpec {
            name: NAME.to_owned(),
            description: format!(
                "Hands a self-contained piece of work to a sub-agent that runs in its own context window with its own tools, and returns its final answer as one message. The sub-agent knows nothing of this conversation: give it the whole context in the prompt. For a known file or a single search, use view, grep or glob yourself.\n\nAgent types:\n{}",
                types.join("\n")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A short (3-5 word) description of the work, shown as the call's intent."},
                    "prompt": {"type": "string", "description": "The work for the sub-agent, with all the context it needs."},
                    "agent_type": {"type": "string", "enum": self.types.iter().map(|t| t.name()).collect::<Vec<_>>(), "description": "The kind of sub-agent to run."},
                    "name": {"type": "string", "description": "A short name for the sub-agent (e.g. \"math-helper\")."},
                    "model": {"type": "string", "description": "A model to run the sub-agent with instead of the session's."},
                    "mode": {"type": "string", "enum": ["sync", "background"], "description": "\"sync\" (the default): the call returns the sub-agent's answer. \"background\": the call returns the agent's id at once and the agent works while you go on; you are notified when it is idle, read_agent gives its answer and write_agent sends it follow-up messages."}
                },
                "required": ["name", "prompt", "agent_type", "description"]
            }),
            skip_permission: false,
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<TaskArgs, ToolFailure> {
        TaskArgs::parse_among(args, &self.types)
    }

    async fn act(&self, args: TaskArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let Some(sender) = &ctx.subagents else {
            return Err(ToolFailure::new(
                "A sub-agent can only run inside a session.",
                "no_session",
            ));
        };
        let (reply, answer) = oneshot::channel();
        sender
            .send(SubagentRequest::Start { args, reply })
            .map_err(|_| ToolFailure::cancelled())?;
        answer.await.map_err(|_| ToolFailure::cancelled())?
    }

    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        args.get("description")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;

    fn call(extra: Value) -> Value {
        let mut args =
            json!({"description": "d", "prompt": "p", "agent_type": "explore", "name": "n"});
        if let (Some(map), Value::Object(extra)) = (args.as_object_mut(), extra) {
            map.extend(extra);
        }
        args
    }

    #[test]
    fn a_missing_field_is_named_as_the_runtime_names_it() {
        let failure = TaskArgs::parse(&json!({"prompt": "p"})).unwrap_err();
        assert_eq!(failure.message, "Invalid input: \"name\": Required");
        let failure = TaskArgs::parse(&json!({"name": "n", "prompt": "p"})).unwrap_err();
        assert_eq!(failure.message, "Invalid input: \"agent_type\": Required");
    }

    #[test]
    fn agent_types_known_and_unknown() {
        let args = TaskArgs::parse(&call(json!({}))).unwrap();
        assert_eq!(args.agent_type, AgentType::Explore);
        let unknown = TaskArgs::parse(&call(json!({"agent_type": "nope"}))).unwrap_err();
        assert_eq!(
            unknown.message,
            "Unknown agent_type: nope. Valid types are: explore, task, general-purpose, code-review, research, security-review"
        );
        for (name, kind) in [
            ("code-review", AgentType::CodeReview),
            ("research", AgentType::Research),
            ("security-review", AgentType::SecurityReview),
        ] {
            let args = TaskArgs::parse(&call(json!({"agent_type": name}))).unwrap();
            assert_eq!(args.agent_type, kind);
            assert_eq!(kind.name(), name);
        }
        let background = TaskArgs::parse(&call(json!({"mode": "background"}))).unwrap();
        assert!(background.background);
        assert!(
            !TaskArgs::parse(&call(json!({"mode": "sync"})))
                .unwrap()
                .background
        );
        let bad = TaskArgs::parse(&call(json!({"mode": "later"}))).unwrap_err();
        assert!(bad.message.contains("'later'"), "{bad}");
    }

    #[test]
    fn a_session_offers_its_agent_policy() {
        let names = |types: Vec<AgentType>| types.iter().map(|t| t.name()).collect::<Vec<_>>();
        let without = offered_types(None, &["explore".into(), "no-such-agent".into()]);
        assert_eq!(
            names(without.clone()),
            [
                "task",
                "general-purpose",
                "code-review",
                "research",
                "security-review"
            ]
        );
        let only = offered_types(
            Some(&["research".into(), "explore".into()]),
            &["explore".into()],
        );
        assert_eq!(names(only), ["research"]);
        // The offer and the check follow the policy: the schema's enum leaves the type out,
        // and a call naming it is refused like an unknown one.
        let tool = TaskTool::offering(without.clone());
        let spec = tool.offer();
        let offered = &spec.parameters["properties"]["agent_type"]["enum"];
        assert!(
            !offered.as_array().unwrap().iter().any(|v| v == "explore"),
            "{offered}"
        );
        assert!(!spec.description.contains("- explore:"));
        let refused = TaskArgs::parse_among(&call(json!({})), &without).unwrap_err();
        assert_eq!(
            refused.message,
            "Unknown agent_type: explore. Valid types are: task, general-purpose, code-review, research, security-review"
        );
    }

    #[test]
    fn tool_subsets() {
        assert!(AgentType::Explore.offers("grep"));
        assert!(!AgentType::Explore.offers("edit"));
        assert!(AgentType::General.offers("edit"));
        assert!(!AgentType::General.offers(NAME));
        assert!(!AgentType::Task.offers("read_agent"));
        assert!(AgentType::CodeReview.offers("bash") && AgentType::SecurityReview.offers("edit"));
        assert!(!AgentType::CodeReview.offers(NAME));
        let research: Vec<&str> = ["bash", "view", "create", "web_fetch", "grep", "glob", "sql"]
            .into_iter()
            .filter(|t| AgentType::Research.offers(t))
            .collect();
        assert_eq!(research, ["view", "web_fetch", "grep", "glob"]);
    }

    #[tokio::test]
    async fn outside_a_session_the_call_fails_clearly() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let failure = TaskTool::default()
            .run(call(json!({})), &ctx)
            .await
            .unwrap_err();
        assert_eq!(failure.code.as_deref(), Some("no_session"));
    }
}
