//! `tool.execution_*` payloads: one tool call from start to result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::payload;

/// `tool.execution_start`: the engine starts running a tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionStart {
    /// The call's id (from the model's [`ToolRequest`](super::ToolRequest)).
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Arguments the tool runs with (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub arguments: Option<Value>,
    /// Turn the call was made in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Model that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Display title of the tool. Not in the schema, yet the runtime writes it (e.g.
    /// `"Task complete"`); set it only to mirror the runtime, since schema validation rejects it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_title: Option<String>,
    /// `X-GitHub-Copilot-Request-TE` signal of the model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rte: Option<bool>,
    /// Paths a shell command may touch, captured before it runs (shell tools only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_tool_info: Option<ShellToolInfo>,
    /// MCP server display name, for MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server_name: Option<String>,
    /// MCP server config key (what telemetry joins on), for MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_config_server_name: Option<String>,
    /// The tool's own name on its MCP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool_name: Option<String>,
    /// MCP transport: `stdio`, `http`, `sse` or `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_transport: Option<String>,
    /// Where the MCP server config came from: `user`, `workspace`, `plugin`, `builtin`, `managed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_config_source: Option<String>,
    /// Show the output expanded in the timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_verbatim: Option<bool>,
    /// Tool definition metadata of MCP Apps tools (`name`, `description`, `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_description: Option<Value>,
    /// Parent tool call when a sub-agent runs the tool (deprecated by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// HydraFusion attribution (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<Value>,
}
payload!(ToolExecutionStart, "tool.execution_start");

/// `tool.user_requested`: the user, not the model, runs a tool (a shell command given to
/// `session.shell.executeUserRequested`); its `tool.execution_complete` (with
/// `isUserRequested: true`) follows without a `tool.execution_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUserRequested {
    /// The call's id, which its completion carries.
    pub tool_call_id: String,
    /// The tool run (`local_shell` for a shell command).
    pub tool_name: String,
    /// Its arguments (`{command, description}` for a shell command; any JSON).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub arguments: Option<Value>,
}
payload!(ToolUserRequested, "tool.user_requested");

/// Shell-aware path hints of a shell tool call, so a file's pre-image can be saved first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellToolInfo {
    /// Files the command may read or write.
    pub possible_paths: Vec<String>,
    /// Whether the command redirects into a file (`>`, `>>`).
    pub has_write_file_redirection: bool,
    /// The command without a redundant leading `cd` into the working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_command: Option<String>,
}

/// `tool.execution_partial_result` (ephemeral): streamed output of a running tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionPartialResult {
    /// The running call.
    pub tool_call_id: String,
    /// Output chunk to append.
    pub partial_output: String,
}
payload!(ToolExecutionPartialResult, "tool.execution_partial_result");

/// `tool.execution_progress` (ephemeral): a status line of a running tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionProgress {
    /// The running call.
    pub tool_call_id: String,
    /// Human-readable status (e.g. from an MCP server).
    pub progress_message: String,
}
payload!(ToolExecutionProgress, "tool.execution_progress");

/// `tool.execution_complete`: a tool call's outcome, success or failure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionComplete {
    /// The finished call.
    pub tool_call_id: String,
    /// Model that made the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Interaction the call belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// Turn the call was made in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// `X-GitHub-Copilot-Request-TE` signal of the model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rte: Option<bool>,
    /// Whether the tool succeeded.
    pub success: bool,
    /// True when the user, not the model, asked for the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_user_requested: Option<bool>,
    /// What the tool returned, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResult>,
    /// Why the tool failed, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// FIDES IFC label of the tool's ingress, `{ "ifc": ... }` (experimental, opaque).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub mcp_meta: Option<Value>,
    /// Tool-specific telemetry (`properties`, `restrictedProperties`, `metrics`, ...), key order kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_telemetry: Option<Map<String, Value>>,
    /// Tool definition metadata of MCP Apps tools (`name`, `description`, `_meta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_description: Option<Value>,
    /// Whether the call ran in a sandbox container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandboxed: Option<bool>,
    /// Shell completion facts kept after the result contents are stripped (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_execution: Option<ShellExecution>,
    /// Parent tool call when a sub-agent ran the tool (deprecated by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// HydraFusion attribution (experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<Value>,
}
payload!(ToolExecutionComplete, "tool.execution_complete");

/// A successful tool's result in [`ToolExecutionComplete`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The text the model sees (possibly truncated).
    pub content: String,
    /// The full text for the timeline (diffs, ...); readers fall back to `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detailed_content: Option<String>,
    /// Native content blocks (text, terminal, shell_exit, image, audio, resource...; kept raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<Vec<Value>>,
    /// Binary results sent to the model: inline, omitted-for-size or asset references (raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_results_for_llm: Option<Vec<Value>>,
    /// MCP Apps UI resource to render in a sandboxed iframe (raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui_resource: Option<Value>,
    /// Structured content an MCP tool returned verbatim (any JSON; a present `null` is kept).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub structured_content: Option<Value>,
    /// Sources the model may cite (`id`, `content`, `title`, `url`, `path`; experimental).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citable_sources: Option<Vec<Value>>,
    /// FIDES IFC label of the result (experimental, opaque).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::payload::present"
    )]
    pub mcp_meta: Option<Value>,
}

/// A failed tool's error in [`ToolExecutionComplete`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolError {
    /// Human-readable message (what the model is told).
    pub message: String,
    /// Machine-readable code, when the tool gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Recovery action: `sign_in`, `switch_account`, `show_account`, `review_sandbox_policy`,
    /// `allow_sandbox_outbound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation: Option<String>,
}

/// Exit facts of a shell tool call, kept apart from its (strippable) result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShellExecution {
    /// The process's exit code.
    pub exit_code: i64,
}
