//! What a session is built from: its settings and its parts (model, tools, clients).

use std::path::PathBuf;
use std::sync::Arc;

use turnstile_journal::Durability;

use super::compaction_options::InfiniteSessions;
use crate::autopilot::{AgentMode, DEFAULT_MAX_CONTINUES};
use crate::client::{ExternalTools, PermissionAsker, RefusalNotice};
use crate::hooks::HookRunner;
use crate::prompt::{SectionTransformer, SystemMessageConfig};
use turnstile_permissions::{LiveRules, PermissionPolicy};
use turnstile_providers::ModelProvider;
use turnstile_tools::ToolRegistry;

/// Everything a session needs besides its model and tools.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Working directory of the tools.
    pub cwd: PathBuf,
    /// Model name sent to the provider.
    pub model: String,
    /// When the journal is fsynced.
    pub durability: Durability,
    /// Default mode of a send.
    pub mode: AgentMode,
    /// Nudges before autopilot gives up.
    pub max_autopilot_continues: u32,
    /// Who may run what.
    pub permissions: PermissionPolicy,
    /// The rules a client changes while the session runs (shared with whoever changes them).
    pub live_permissions: Arc<LiveRules>,
    /// Let file tools reach outside `cwd`.
    pub allow_outside_cwd: bool,
    /// Tool processes run in the kernel sandbox (`session/sandbox.rs`); false only when the
    /// user opts out (`--no-sandbox`).
    pub sandbox: bool,
    /// `view`, `glob` and `grep` ask a `read` permission for what they read inside `cwd`, as
    /// the Copilot CLI's SDK sessions do (the server sets it when the client answers
    /// permission requests; the terminal trusts the working directory).
    pub ask_reads_in_cwd: bool,
    /// Ask the provider for a streamed answer.
    pub streaming: bool,
    /// Keep `ask_user` from the model even when a client answers questions (SDK
    /// `askUserDisabled`).
    pub ask_user_disabled: bool,
    /// An exact system prompt (a replayed recording's); when set, `system_message` is unused.
    pub system_prompt: Option<String>,
    /// How the system prompt is built from the engine's sections (SDK `systemMessage`).
    pub system_message: SystemMessageConfig,
    /// Reasoning effort asked of the model, recorded in `session.start` (SDK `reasoningEffort`).
    pub reasoning_effort: Option<String>,
    /// Tools never offered to the model (SDK `defaultAgent.excludedTools`); a call to one
    /// anyway is answered as for a tool that does not exist.
    pub excluded_tools: Vec<String>,
    /// The model's context window in tokens; `None` looks the model up in
    /// [`crate::prompt::tokens::token_limit`].
    pub token_limit: Option<u64>,
    /// When the history is compacted (SDK `infiniteSessions`).
    pub infinite_sessions: InfiniteSessions,
    /// Leave the repository's instruction files out of the system prompt (SDK
    /// `skipCustomInstructions`).
    pub skip_custom_instructions: bool,
    /// Extra directories whose `.github/instructions/**/*.instructions.md` files join the
    /// system prompt (SDK `instructionDirectories`), read again for every prompt as the
    /// repository's instructions are.
    pub instruction_directories: Vec<PathBuf>,
    /// The model reads pictures (SDK `modelCapabilities.supports.vision`): the pictures tool
    /// results gave (`view` of an image) go in its requests. Off, they stay in the journal
    /// and are left out of every request, earlier ones included, as the Copilot CLI leaves
    /// them out; on again, they are all sent.
    pub vision: bool,
    /// A remote store every journal line also goes to, fenced and acknowledged before the
    /// line counts as durable (`turnstile_journal::sink`); `None` for the file store alone.
    pub journal_sink: Option<Arc<dyn turnstile_journal::JournalSink>>,
    /// The session's MCP servers, started before it; the session offers their tools after
    /// `SessionParts::tools` (and follows their changes), announces their status at the
    /// start and stops them with it.
    pub mcp: Option<Arc<turnstile_mcp::McpHost>>,
    /// The skills of the SDK's `skillDirectories` (listed in `session.skills_loaded` at the
    /// start); the `skill` tool in `SessionParts::tools` loads them.
    pub skills: Arc<turnstile_tools::skills::SkillSet>,
    /// The skill files that could not be loaded, each recorded as a `session.warning`.
    pub skill_warnings: Vec<turnstile_tools::skills::SkillWarning>,
    /// Most built-in tool calls of one turn running at once; the others wait in request
    /// order (`--max-parallel-tools`).
    pub max_parallel_tools: usize,
    /// Most sub-agents of the session working at once; the others wait before their first
    /// model call (`--max-parallel-agents`).
    pub max_parallel_agents: usize,
    /// The kind of client `workspace.yaml` names, as the Copilot CLI does: `sdk` for an SDK
    /// client's session (the default), `github/cli` for a prompt run from the command line.
    pub client_name: String,
    /// Told of a call refused for want of a rule and of someone to ask (`None`: logged).
    pub refusal_notice: Option<Arc<dyn RefusalNotice>>,
    /// The session's limits (`sessionLimits`), recorded in `session.start` and
    /// `session.resume`; on a resume the journal's, when it has some, win.
    pub session_limits: Option<turnstile_journal::payload::SessionLimits>,
    /// The built-in GitHub MCP server's tool config, recorded in `session.start` for a resume
    /// that names none.
    pub github_mcp_tool_config: Option<turnstile_journal::payload::GitHubMcpToolConfig>,
    /// Anthropic documents (PDF attachments) are sent with their title and citations enabled
    /// (`enableCitations`).
    pub enable_citations: bool,
    /// Keep the files tool calls change, so a rewind can restore them
    /// (`enableFileChangeTracking`, `crate::rewind_files`).
    pub file_change_tracking: bool,
}

impl SessionConfig {
    /// Defaults for a session working in `cwd` with `model`.
    pub fn new(cwd: impl Into<PathBuf>, model: impl Into<String>) -> Self {
        SessionConfig {
            cwd: cwd.into(),
            model: model.into(),
            durability: Durability::Turn,
            mode: AgentMode::Interactive,
            max_autopilot_continues: DEFAULT_MAX_CONTINUES,
            permissions: PermissionPolicy::default(),
            live_permissions: Arc::default(),
            allow_outside_cwd: false,
            sandbox: true,
            ask_reads_in_cwd: false,
            streaming: true,
            ask_user_disabled: false,
            system_prompt: None,
            system_message: SystemMessageConfig::default(),
            reasoning_effort: None,
            excluded_tools: Vec::new(),
            token_limit: None,
            infinite_sessions: InfiniteSessions::default(),
            skip_custom_instructions: false,
            instruction_directories: Vec::new(),
            vision: true,
            journal_sink: None,
            mcp: None,
            skills: Arc::default(),
            skill_warnings: Vec::new(),
            max_parallel_tools: super::slots::DEFAULT_PARALLEL_TOOLS,
            max_parallel_agents: super::slots::DEFAULT_PARALLEL_AGENTS,
            client_name: "sdk".into(),
            refusal_notice: None,
            session_limits: None,
            github_mcp_tool_config: None,
            enable_citations: false,
            file_change_tracking: false,
        }
    }
}

/// The parts a session is built from.
pub struct SessionParts {
    /// The settings.
    pub config: SessionConfig,
    /// The model.
    pub provider: Arc<dyn ModelProvider>,
    /// The tools.
    pub tools: Arc<ToolRegistry>,
    /// Hooks (command hooks, an SDK client's, or none).
    pub hooks: Option<Arc<dyn HookRunner>>,
    /// Tools an SDK client implements.
    pub external_tools: Option<Arc<dyn ExternalTools>>,
    /// A client that decides permissions the policy leaves open.
    pub permission_asker: Option<Arc<dyn PermissionAsker>>,
    /// A client that rewrites system prompt sections (`transform` actions).
    pub section_transformer: Option<Arc<dyn SectionTransformer>>,
}

/// Options of an open session a client may change (SDK `session.options.update`); `None`
/// leaves one as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveOptions {
    /// Streamed answers (`enableStreaming`): the deltas' events come only with them.
    pub streaming: Option<bool>,
    /// Keep `ask_user` from the model (`askUserDisabled`).
    pub ask_user_disabled: Option<bool>,
}
