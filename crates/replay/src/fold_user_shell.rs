//! A command the user ran in the session's shell (`session.shell.executeUserRequested`), as
//! the model learns of it: the runtime records `tool.user_requested` (the command) and then
//! `tool.execution_complete` with `isUserRequested: true` (the output), and the next request
//! carries one user message that wraps both. The fold builds that message from the two
//! events, so a live session, a resume and `turnstile history` show the same.

use serde::Deserialize;

/// The part of `tool.user_requested` the message needs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UserRequested {
    /// The call's id, which its `tool.execution_complete` carries.
    pub(crate) tool_call_id: String,
    /// `{command, description}` of the `local_shell` call.
    pub(crate) arguments: Arguments,
}

/// `arguments` of [`UserRequested`].
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments {
    /// The command line the user typed.
    pub(crate) command: String,
}

/// The part of the user-requested `tool.execution_complete` the message needs: the output is
/// `result.content` on success, `error.message` otherwise.
#[derive(Debug, Deserialize)]
pub(crate) struct Completed {
    success: bool,
    #[serde(default)]
    result: Option<Content>,
    #[serde(default)]
    error: Option<ErrorMessage>,
}

#[derive(Debug, Deserialize)]
struct Content {
    content: String,
}

#[derive(Debug, Deserialize)]
struct ErrorMessage {
    message: String,
}

impl Completed {
    /// The user message the model is given, worded as the Copilot CLI 1.0.81 words it (an
    /// exit code other than 0 is not named: the runtime says "non-zero exit code").
    pub(crate) fn message(&self, command: &str) -> String {
        let output = if self.success {
            self.result.as_ref().map(|r| r.content.as_str())
        } else {
            self.error.as_ref().map(|e| e.message.as_str())
        };
        let status = if self.success {
            "exit code 0"
        } else {
            "non-zero exit code"
        };
        format!(
            "<user_shell_command_output>\nThe user executed a shell command directly in their \
             terminal ({status}).\n\nCommand:\n{command}\n\nOutput:\n{}\n\
             </user_shell_command_output>",
            output.unwrap_or("")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completed(json: &str) -> Completed {
        serde_json::from_str(json).expect("completion")
    }

    #[test]
    fn a_success_names_exit_code_0_and_the_result() {
        let done = completed(
            r#"{"toolCallId":"t","isUserRequested":true,"success":true,"result":{"content":"hello-marker"}}"#,
        );
        assert_eq!(
            done.message("echo hello-marker"),
            "<user_shell_command_output>\nThe user executed a shell command directly in their terminal (exit code 0).\n\nCommand:\necho hello-marker\n\nOutput:\nhello-marker\n</user_shell_command_output>"
        );
    }

    #[test]
    fn a_failure_says_non_zero_and_gives_the_error_text() {
        let done = completed(
            r#"{"toolCallId":"t","isUserRequested":true,"success":false,"error":{"message":"out-line\nerr-line"}}"#,
        );
        assert_eq!(
            done.message("echo out-line; echo err-line >&2; exit 3"),
            "<user_shell_command_output>\nThe user executed a shell command directly in their terminal (non-zero exit code).\n\nCommand:\necho out-line; echo err-line >&2; exit 3\n\nOutput:\nout-line\nerr-line\n</user_shell_command_output>"
        );
    }
}
