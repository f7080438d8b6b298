//! What an SDK client can take over from the engine: tools it implements itself, permission
//! decisions, hooks ([`crate::hooks::HookRunner`]). The server crate implements these traits
//! over JSON-RPC; the loop records every request and answer in the journal.

use serde_json::Value;

use turnstile_tools::{BoxFuture, ToolFailure, ToolOutput, ToolSpec};

/// One call of a client-defined tool, as recorded in `external_tool.requested`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalToolCall {
    /// Id the client answers with.
    pub request_id: String,
    /// The session.
    pub session_id: String,
    /// The model's tool call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments.
    pub arguments: Value,
}

/// Tools implemented by the client.
pub trait ExternalTools: Send + Sync {
    /// The tools, offered to the model next to the built-in ones (a client tool with a
    /// built-in's name replaces it).
    fn specs(&self) -> Vec<ToolSpec>;
    /// Runs one call: resolves when the client answers. Dropped when the message is aborted.
    /// A failure with code `rejected` (the SDK's `resultType: "rejected"`) ends the message
    /// after this turn, as the runtime does; any other failure is read by the model.
    fn call(&self, call: ExternalToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolFailure>>;
}

/// Why a permission request got no answer; its text is the `reason` of the recorded
/// `permission.completed {result: {kind: "cancelled"}}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The client went away before answering.
    #[error("the SDK client disconnected")]
    Disconnected,
    /// The same request id is already waiting for an answer.
    #[error("permission request {0} is already being asked")]
    AlreadyAsked(String),
    /// The message was aborted while the request waited.
    #[error("the message was aborted")]
    Aborted,
}

/// A client that decides permissions.
pub trait PermissionAsker: Send + Sync {
    /// Asks about the request just recorded as `permission.requested`; resolves to the schema's
    /// `PermissionResult` object (`{"kind":"approved"}`, `{"kind":"denied-interactively-by-user"}`, ...).
    /// `Err` says why nobody answered.
    fn ask(
        &self,
        request_id: String,
        request: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>>;
}

/// The person running the engine, told how to allow a call that was refused because no rule
/// approved it and nobody could be asked (the terminal prints it in plain words on stderr).
/// Without one, the engine logs the same hint as a warning.
pub trait RefusalNotice: Send + Sync + std::fmt::Debug {
    /// `tool` was refused; `request` is the recorded `permissionRequest`, `hint` the flags
    /// that would allow it (`" (allow with --allow-tool 'shell(touch)')"`, or empty).
    fn refused(&self, tool: &str, request: &Value, hint: &str);
}
