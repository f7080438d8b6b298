//! The tools a session offers its model: the `Tool` trait, the values tools exchange with the
//! loop, the registry and the built-in tools (`bash`, `read_bash`, `stop_bash`, `list_bash`,
//! `view`, `create`, `edit`, `web_fetch`, `skill`, `sql`, `read_agent`, `list_agents`,
//! `write_agent`, `grep`, `glob`, `task`, `task_complete`), the adapter of MCP servers' tools
//! (`mcp`), and the skills the `skill` tool loads ([`skills`]).
//!
//! Names, parameters and result texts follow the Copilot runtime
//! (`docs/tools.md`) so that journals recorded by either
//! engine replay on the other. A tool never panics on outside input: every
//! problem is a [`ToolFailure`] the model gets to read.
//!
//! A tool says what it needs permission for ([`PermissionAsk`], from `turnstile-permissions`,
//! which decides it); it does not decide. What a call needs of its session (asking a further
//! permission, sending an event, starting a sub-agent) goes through channels the
//! [`ToolContext`] carries, which the loop serves. This crate depends on `turnstile-permissions`,
//! `turnstile-journal` and `turnstile-mcp`, never on `turnstile-loop`.

use std::path::PathBuf;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub mod agents;
mod args;
pub mod ask_user;
pub mod asks;
pub mod bash;
pub mod create;
mod diff;
pub mod edit;
pub mod events;
pub mod exit_plan_mode;
pub mod glob;
pub mod grep;
pub mod list_agents;
pub mod list_bash;
pub mod mcp;
pub mod paths;
pub mod plan_review;
pub mod processes;
pub mod read_agent;
pub mod read_bash;
pub mod reads;
mod registry;
mod shapes;
pub mod shells;
pub mod skill;
pub mod skills;
pub mod sql;
pub mod stop_bash;
pub mod supervisor;
pub mod task;
pub mod task_complete;
pub mod view;
pub mod view_image;
pub mod web_fetch;
pub mod write_agent;

pub use args::json_type_name;
pub use registry::ToolRegistry;
pub use shapes::{AsyncTool, BlockingTool};
pub use turnstile_permissions::{PermissionAsk, PermissionKind};

/// A boxed, sendable future, the return type of [`Tool::run`] (keeps the trait object-safe).
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The text the runtime shows for a tool cut short by an abort or a crash (TOOLS.md).
pub const INTERRUPTED_MESSAGE: &str =
    "The execution of this tool, or a previous tool was interrupted.";

/// What the model is told about a tool (one entry of the OpenAI `tools` array).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolSpec {
    /// The tool name the model calls.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// A client tool declared with `skipPermission: true` runs without a `custom-tool`
    /// permission request (built-in tools ignore it: their request follows what they do).
    pub skip_permission: bool,
}

impl ToolSpec {
    /// This spec as one element of an OpenAI Chat Completions `tools` array.
    pub fn to_openai(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// What a running tool can see of its session.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's working directory: relative paths resolve against it and
    /// file tools stay inside it.
    pub cwd: PathBuf,
    /// Lets file tools touch paths outside `cwd` (`--allow-all-paths`).
    pub allow_outside_cwd: bool,
    /// The file tools ask a `read` permission for what they read inside `cwd` (an SDK
    /// session whose client answers permissions, as the Copilot CLI's; see [`reads`]).
    pub ask_reads_in_cwd: bool,
    /// Cancelled when the session aborts; running tools stop and fail with "cancelled".
    pub cancel: CancellationToken,
    /// Streamed output chunks; the loop turns them into ephemeral
    /// `tool.execution_partial_result` events.
    pub partial: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    /// Where a tool that starts processes records their group before they run, so a resume
    /// after a crash can stop them (`None`: nothing is recorded).
    pub processes: Option<std::sync::Arc<processes::ProcessTable>>,
    /// The model's id of the call being run.
    pub tool_call_id: Option<String>,
    /// The session's shells (`bash`, `read_bash`, `stop_bash`, `list_bash`); they outlive a
    /// call, so a session passes the same set to every call.
    pub shells: std::sync::Arc<shells::Shells>,
    /// The session's SQLite database (`sql`), kept open across calls; the default has no
    /// session directory, so `sql` fails in it.
    pub database: std::sync::Arc<sql::SessionDatabase>,
    /// The host rules `web_fetch` applies to every hop (`--allow-url`, `--deny-url`).
    pub urls: std::sync::Arc<turnstile_permissions::hosts::UrlRules>,
    /// Where the call asks for permissions it finds it needs while running (`None`: outside
    /// a session, nobody can be asked; see [`ToolContext::permit`]).
    pub asks: Option<asks::AskSender>,
    /// Where the call sends the session events it causes (`None`: outside a session).
    pub events: Option<events::EventSender>,
    /// Where `task` sends the sub-agent it starts (`None`: outside a session).
    pub subagents: Option<task::SubagentSender>,
    /// The session's agents (`read_agent`, `list_agents`, `write_agent`); shared like `shells`.
    pub agents: std::sync::Arc<agents::Agents>,
    /// The kernel sandbox every process a tool starts enters.
    pub sandbox: Sandboxing,
    /// The engine's own directories (the state directory, `$COPILOT_HOME`): no file tool
    /// writes in them ([`paths::resolve_for_write`]).
    pub engine_dirs: std::sync::Arc<Vec<PathBuf>>,
    /// The `_meta` an MCP tool's call carries (a `preMcpToolCall` hook's `metaToUse`; `None`:
    /// none).
    pub mcp_meta: Option<serde_json::Map<String, Value>>,
}

/// Whether the processes a tool starts are confined, and by what.
pub use turnstile_sandbox::Sandboxing;

impl ToolContext {
    /// A context for `cwd` with the defaults: paths confined to `cwd`, a fresh
    /// cancellation token, no partial-output channel.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            allow_outside_cwd: false,
            ask_reads_in_cwd: false,
            cancel: CancellationToken::new(),
            partial: None,
            processes: None,
            tool_call_id: None,
            shells: std::sync::Arc::default(),
            database: std::sync::Arc::default(),
            urls: std::sync::Arc::default(),
            asks: None,
            events: None,
            subagents: None,
            agents: std::sync::Arc::default(),
            sandbox: Sandboxing::Off,
            engine_dirs: std::sync::Arc::default(),
            mcp_meta: None,
        }
    }
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// What the model sees (`result.content`).
    pub content: String,
    /// A fuller text for UIs, e.g. a diff (`result.detailedContent`); the session records
    /// `content` there when a tool gives none, as the Copilot CLI does.
    pub detailed_content: Option<String>,
    /// Content blocks for live subscribers only (`result.contents`, e.g. a shell's
    /// `shell_exit`): the runtime strips them from its journal, and so does the session.
    pub live_contents: Option<Vec<Value>>,
    /// Pictures for the model beside the text (`result.binaryResultsForLlm`, e.g. `view` of
    /// an image): the model gets them in a user message after the tool results.
    pub binary_results: Vec<BinaryResult>,
}

/// A picture a tool gives the model (one entry of `result.binaryResultsForLlm`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BinaryResult {
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// Their media type, e.g. `image/png`.
    pub mime_type: String,
    /// The text the model reads before the picture, e.g. `Image file at path /w/a.png`.
    pub description: String,
}

impl BinaryResult {
    /// The entry as the journal records it (`{type: "image", data, mimeType, description}`,
    /// the Copilot CLI's keys and order).
    pub fn to_value(&self) -> Value {
        serde_json::json!({
            "type": "image",
            "data": self.data,
            "mimeType": self.mime_type,
            "description": self.description,
        })
    }
}

impl ToolOutput {
    /// A result with only model-facing content.
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            ..Default::default()
        }
    }

    /// A result with its own detailed text for UIs.
    pub fn detailed(content: impl Into<String>, detail: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            detailed_content: Some(detail.into()),
            ..Default::default()
        }
    }
}

/// A failed tool call; the model sees `message` (`tool.execution_complete` `error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// Human-readable reason, written for the model.
    pub message: String,
    /// Machine-readable reason (`error.code`), e.g. "timeout", "cancelled", "outside_cwd".
    pub code: Option<String>,
}

impl ToolFailure {
    /// A failure with a message and a code.
    pub fn new(message: impl Into<String>, code: &str) -> Self {
        ToolFailure {
            message: message.into(),
            code: Some(code.to_owned()),
        }
    }

    /// A failure caused by bad arguments (code "invalid_arguments").
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(message, "invalid_arguments")
    }

    /// The failure for a tool stopped by the session's cancellation (code "cancelled").
    pub fn cancelled() -> Self {
        Self::new(INTERRUPTED_MESSAGE, "cancelled")
    }
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolFailure {}

/// Runs blocking file-system work off the async workers (a big directory walk
/// must not stall the session's other tasks).
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolFailure>
where
    F: FnOnce() -> Result<T, ToolFailure> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolFailure::new(format!("The tool stopped unexpectedly: {e}"), "internal"))?
}

/// The failure for a path that is not there (the runtime's wording).
pub(crate) fn not_found(path: &std::path::Path) -> ToolFailure {
    ToolFailure::new(
        format!(
            "Path {} does not exist. Please provide a valid path.",
            path.display()
        ),
        "not_found",
    )
}

/// The failure for an I/O error on `path`, with what was being done.
pub(crate) fn io_failure(what: &str, path: &std::path::Path, e: &std::io::Error) -> ToolFailure {
    if e.kind() == std::io::ErrorKind::NotFound {
        return not_found(path);
    }
    ToolFailure::new(format!("Failed to {what} {}: {e}", path.display()), "io")
}

/// One tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// The name, description and parameter schema offered to the model.
    fn spec(&self) -> ToolSpec;

    /// Checks arguments and says what permission the call needs; Err is a tool
    /// failure the model sees (bad args).
    fn permission(
        &self,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure>;

    /// Runs the call. Re-checks everything `permission` checked, since it may be
    /// called on its own.
    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>>;

    /// A short human title for the call, e.g. "*.txt" or the path (the runtime's intentionSummary).
    fn intention_summary(&self, _args: &Value, _ctx: &ToolContext) -> Option<String> {
        None
    }

    /// The tool's display title where the runtime gives one (`toolRequests[].toolTitle`).
    fn tool_title(&self) -> Option<&str> {
        None
    }

    /// For a tool of an MCP server: the server's name and the tool's own name there.
    fn mcp_origin(&self) -> Option<(&str, &str)> {
        None
    }

    /// What a shell tool's command may touch, recorded in `tool.execution_start` before it
    /// runs; `None` for other tools and for arguments that do not parse.
    fn shell_tool_info(&self, _args: &Value) -> Option<turnstile_journal::payload::ShellToolInfo> {
        None
    }
}
