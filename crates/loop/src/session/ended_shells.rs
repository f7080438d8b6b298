//! Shells that ended while no call waited for them, told to the model at the next turn as the
//! Copilot runtime tells them.
//!
//! An async shell (or a sync one gone on in the background) that ends has nothing else to
//! say so: its call returned long ago, and the model may never read it again. The runtime
//! records a `system.notification` for it right after the next turn's `assistant.turn_start`
//! (at times right before it, as its timing falls), and that turn's request ends with its text
//! as a user message; the fold puts it into the conversation where it was recorded, so resume
//! and replay send the same. An end a waiting
//! call saw (the sync call itself, `read_bash` with a delay) is told by that call's result,
//! and a detached command's end is not told (the runtime told none in its probe).

use serde_json::json;
use turnstile_journal::payload::{PendingMessagesModified, SystemNotification};

use super::LoopError;
use super::actor::Actor;
use turnstile_tools::shells::EndedShell;

impl Actor {
    /// Records a `system.notification` for each shell that ended untold since the last turn
    /// and gives the texts the model reads after the history (where the fold puts them).
    pub(super) fn announce_ended_shells(&self) -> Result<Vec<String>, LoopError> {
        let ended = self.shells.take_untold_ends();
        if !ended.is_empty() {
            // The runtime's notices leave its queue of pending messages.
            self.emitter.emit(&PendingMessagesModified {})?;
        }
        let mut texts = Vec::new();
        for shell in ended {
            let note = notification(&shell);
            self.emitter.emit(&note)?;
            texts.push(note.content);
        }
        Ok(texts)
    }
}

/// The runtime's notice of an ended shell (Copilot CLI 1.0.81-0; `docs/tools.md`).
fn notification(shell: &EndedShell) -> SystemNotification {
    let EndedShell {
        id,
        description,
        exit_code,
    } = shell;
    let ended = match exit_code {
        0 => "has completed successfully".to_owned(),
        code => format!("has exited with exit code {code}"),
    };
    SystemNotification {
        content: format!(
            "<system_notification>\nShell command \"{description}\" (shellId: {id}) {ended}. Use read_bash with shellId \"{id}\" to retrieve the output.\n</system_notification>"
        ),
        kind: json!({
            "type": "shell_completed",
            "shellId": id,
            "exitCode": exit_code,
            "description": description,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(exit_code: i32) -> SystemNotification {
        notification(&EndedShell {
            id: "0".into(),
            description: "Wait then fail".into(),
            exit_code,
        })
    }

    #[test]
    fn the_notice_says_how_the_shell_ended() {
        let failed = ended(4);
        assert_eq!(
            failed.content,
            "<system_notification>\nShell command \"Wait then fail\" (shellId: 0) has exited with exit code 4. Use read_bash with shellId \"0\" to retrieve the output.\n</system_notification>"
        );
        assert_eq!(
            failed.kind,
            json!({"type": "shell_completed", "shellId": "0", "exitCode": 4, "description": "Wait then fail"})
        );
        // The runtime's words for a success (its "Quick pass" shell, `docs/tools.md`).
        let passed = ended(0);
        assert_eq!(
            passed.content,
            "<system_notification>\nShell command \"Wait then fail\" (shellId: 0) has completed successfully. Use read_bash with shellId \"0\" to retrieve the output.\n</system_notification>"
        );
        assert_eq!(passed.kind["exitCode"], 0);
    }
}
