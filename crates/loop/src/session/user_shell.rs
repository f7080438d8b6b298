//! A command the user runs in the session's shell (SDK `session.shell.executeUserRequested`),
//! recorded as the Copilot CLI records it: `tool.user_requested` (`local_shell`, the command),
//! its output streamed as ephemeral `tool.execution_partial_result`, then
//! `tool.execution_complete` with `isUserRequested: true`; no `tool.execution_start`. The
//! fold turns the pair into the user message the next request carries
//! (`turnstile_replay`'s `fold_user_shell`), so a live session and a resume send the same.
//!
//! - It runs in the session's working directory inside the sandbox the session's `bash`
//!   tool's commands enter (`turnstile_tools::bash::user`): the rules the user set hold for
//!   their own commands too (docs/decisions.md).
//! - It is taken in order with the session's other commands: one sent while a message runs
//!   waits for that message to end, so its record never falls inside a turn; a message sent
//!   while it runs waits for it, and sees its output.
//! - `cancel_user_shell` (by the client's request id or the tool call id) kills its process
//!   group; the session closing cancels it as well.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    ToolError, ToolExecutionComplete, ToolExecutionPartialResult, ToolResult, ToolUserRequested,
};
use turnstile_tools::bash::user::{self, UserCommand};

use super::actor::Actor;
use super::command::Command;
use super::error::LoopError;
use super::handle::SessionHandle;
use super::lock::lock;
use super::user_commands::{Running, UserShellResult};

/// The tool name the runtime records a user's shell command under.
const TOOL_NAME: &str = "local_shell";

impl SessionHandle {
    /// Runs `command` for the user after the messages sent before it, and answers when it
    /// ends; `request_id` is the client's handle for [`Self::cancel_user_shell`].
    pub async fn run_user_shell(
        &self,
        request_id: Option<String>,
        command: String,
    ) -> Result<UserShellResult, LoopError> {
        let tool_call_id = Uuid::new_v4().to_string();
        let cancel = Arc::new(CancellationToken::new());
        // Known before the command is sent: a cancel from here on reaches it, queued or not.
        lock(&self.shared.user_shells).push(Running {
            request_id,
            tool_call_id: tool_call_id.clone(),
            cancel: Arc::clone(&cancel),
        });
        let (done, rx) = oneshot::channel();
        let cmd = Command::UserShell {
            command,
            tool_call_id,
            cancel: CancellationToken::clone(&cancel),
            done,
        };
        let result = self.command(cmd, rx).await;
        lock(&self.shared.user_shells).retain(|r| !Arc::ptr_eq(&r.cancel, &cancel));
        result
    }

    /// Cancels the user's command named `id` (its request id or its tool call id): true if
    /// one was running or waiting to, false for an unknown id or one already cancelled.
    pub fn cancel_user_shell(&self, id: &str) -> bool {
        let mut found = false;
        for running in lock(&self.shared.user_shells).iter() {
            let named = running.request_id.as_deref() == Some(id) || running.tool_call_id == id;
            if named && !running.cancel.is_cancelled() {
                running.cancel.cancel();
                found = true;
            }
        }
        found
    }

    /// Cancels every command of the user's (the session is closing).
    pub(super) fn cancel_user_shells(&self) {
        for running in lock(&self.shared.user_shells).iter() {
            running.cancel.cancel();
        }
    }
}

impl Actor {
    /// Records, runs and records the end of a user's command (see the module doc).
    pub(super) async fn user_shell(
        &self,
        command: String,
        tool_call_id: String,
        cancel: CancellationToken,
    ) -> Result<UserShellResult, LoopError> {
        self.emitter.emit(&ToolUserRequested {
            tool_call_id: tool_call_id.clone(),
            tool_name: TOOL_NAME.to_owned(),
            arguments: Some(serde_json::json!({
                "command": command,
                "description": format!("Execute shell command: {command}"),
            })),
        })?;
        let (partial_tx, mut partial_rx) = mpsc::unbounded_channel();
        let cmd = UserCommand {
            command: &command,
            cwd: &self.parts.config.cwd,
            sandbox: &self.sandbox,
            processes: Some(Arc::clone(&self.processes)),
            tool_call_id: &tool_call_id,
        };
        let outcome = {
            let run = user::run(cmd, Some(partial_tx), &cancel);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    biased;
                    Some(chunk) = partial_rx.recv() => self.user_shell_output(&tool_call_id, chunk)?,
                    outcome = &mut run => break outcome,
                }
            }
        };
        // What came just before the end still precedes the completion.
        while let Ok(chunk) = partial_rx.try_recv() {
            self.user_shell_output(&tool_call_id, chunk)?;
        }
        let sandboxed = outcome.sandboxed;
        let result = UserShellResult::of(tool_call_id, outcome);
        self.emitter.emit(&ToolExecutionComplete {
            tool_call_id: result.tool_call_id.clone(),
            success: result.success,
            is_user_requested: Some(true),
            result: result.success.then(|| ToolResult {
                content: result.output.clone(),
                ..Default::default()
            }),
            error: result.error.as_ref().map(|message| ToolError {
                message: message.clone(),
                ..Default::default()
            }),
            sandboxed: sandboxed.then_some(true),
            ..Default::default()
        })?;
        self.emitter.boundary().await?;
        Ok(result)
    }

    fn user_shell_output(&self, tool_call_id: &str, chunk: String) -> Result<(), LoopError> {
        self.emitter.emit(&ToolExecutionPartialResult {
            tool_call_id: tool_call_id.to_owned(),
            partial_output: chunk,
        })?;
        Ok(())
    }
}
