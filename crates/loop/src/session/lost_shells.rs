//! Shells a dead engine left: found when a session resumes, recorded, and told to the model
//! once at the next turn.
//!
//! A shell whose tool call the crash cut short needs no telling: the resume closes that call
//! with an interrupted result, which the model reads. A shell whose call had already returned
//! (started with `mode: "async"`, or a sync command gone on in the background) has nothing
//! else to say it is gone, so the next turn records a `system.notification` for it, which the
//! fold puts into the conversation where it was recorded: resume and replay send the same.

use serde_json::json;
use turnstile_journal::payload::{SessionWarning, SystemNotification};

use super::LoopError;
use super::actor::Actor;
use super::emitter::Emitter;
use turnstile_tools::processes;
use turnstile_tools::shells::LostShell;

/// The shells the dead engine was running (recorded in `<session>/processes.json`): their
/// processes died with it or are stopped next (or, not proven the engine's, reported as left
/// running: `open.rs::stop_left_processes`), so each is recorded in a `session.warning`.
/// `answered` are the tool calls the resume closes or continues: their shells are told by
/// their results.
pub(super) fn find(
    emitter: &Emitter,
    dir: &std::path::Path,
    answered: &[String],
) -> Result<Vec<LostShell>, LoopError> {
    let mut lost = Vec::new();
    for record in processes::lost_shells(dir) {
        let Some(id) = record.shell_id else { continue };
        emitter.emit(&SessionWarning {
            warning_type: "shells".into(),
            message: format!(
                "shell {id} (tool call {}) was lost: the previous engine stopped while it ran",
                record.tool_call_id
            ),
            ..Default::default()
        })?;
        lost.push(LostShell {
            id,
            command: record.command.unwrap_or_default(),
            untold: !answered.contains(&record.tool_call_id),
        });
    }
    Ok(lost)
}

impl Actor {
    /// Records a `system.notification` for each lost shell the model was not told of yet and
    /// gives the texts the model reads after the history (where the fold puts them).
    pub(super) fn announce_lost_shells(&self) -> Result<Vec<String>, LoopError> {
        let mut texts = Vec::new();
        for shell in self.shells.take_untold_lost() {
            let note = notification(&shell);
            self.emitter.emit(&note)?;
            texts.push(note.content);
        }
        Ok(texts)
    }
}

/// The notice of a lost shell, in the shape of the runtime's notice of a shell that ended
/// (`shell_completed`, with no exit code: there was none to read).
fn notification(shell: &LostShell) -> SystemNotification {
    let what = if shell.command.is_empty() {
        String::new()
    } else {
        format!(" (`{}`)", shell.command)
    };
    SystemNotification {
        content: format!(
            "<system_notification>\nShell \"{id}\"{what} was lost: the engine running it stopped, and its processes are gone. Run the command again if you still need it.\n</system_notification>",
            id = shell.id,
        ),
        kind: json!({
            "type": "shell_completed",
            "shellId": shell.id,
            "description": format!("lost: {}", shell.command),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_the_shell_and_its_command() {
        let note = notification(&LostShell {
            id: "srv".into(),
            command: "sleep 300".into(),
            untold: true,
        });
        assert_eq!(
            note.content,
            "<system_notification>\nShell \"srv\" (`sleep 300`) was lost: the engine running it stopped, and its processes are gone. Run the command again if you still need it.\n</system_notification>"
        );
        assert_eq!(note.kind["type"], "shell_completed");
        assert_eq!(note.kind["shellId"], "srv");
        assert!(note.kind.get("exitCode").is_none());
    }
}
