//! The user's commands as the session's handles and its actor share them: what names one
//! running or waiting to run, and how one ended (`user_shell.rs` runs them).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use turnstile_tools::bash::user::UserCommandOutcome;

/// A user's command running or waiting to: what names it and what cancels it.
pub(super) struct Running {
    pub(super) request_id: Option<String>,
    pub(super) tool_call_id: String,
    pub(super) cancel: Arc<CancellationToken>,
}

/// How a user's command ended, as `session.shell.executeUserRequested` answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserShellResult {
    /// The id of its `tool.user_requested` and `tool.execution_complete`.
    pub tool_call_id: String,
    /// It ran and exited with 0.
    pub success: bool,
    /// stdout and stderr as they came (the middle left out past 64 KiB).
    pub output: String,
    /// Its exit status; `None` when it was cancelled or could not start.
    pub exit_code: Option<i32>,
    /// On failure, what the model is told: the output, followed by why it has no exit code.
    pub error: Option<String>,
}

impl UserShellResult {
    pub(super) fn of(tool_call_id: String, outcome: UserCommandOutcome) -> Self {
        let success = outcome.success();
        let error = (!success).then(|| match &outcome.failure {
            Some(why) if outcome.output.is_empty() => why.clone(),
            Some(why) => format!("{}\n{why}", outcome.output),
            None => outcome.output.clone(),
        });
        UserShellResult {
            tool_call_id,
            success,
            output: outcome.output,
            exit_code: outcome.exit_code,
            error,
        }
    }
}
