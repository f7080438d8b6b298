//! Ends of shells that no call saw: a shell counts the calls waiting in it, so an end a
//! waiting call reports is that call's to tell, and any other end is kept for the session to
//! tell the model at its next turn (`session/ended_shells.rs`). The count itself is kept by
//! `Shell::wait` (its `Waiting` guard).

use super::{ShellStatus, Shells};

/// A shell that ended while no call waited for it: what its notification says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedShell {
    /// Its id.
    pub id: String,
    /// Its call's description (its command when the call gave none).
    pub description: String,
    /// Its exit code (128 + signal when a signal ended it).
    pub exit_code: i32,
}

impl Shells {
    /// The shells that ended while no call waited for them and that the model was not told
    /// of yet, in the order they were started, marked told.
    pub fn take_untold_ends(&self) -> Vec<EndedShell> {
        let table = self.lock();
        let mut ended = Vec::new();
        for shell in &table.shells {
            let mut state = shell.lock();
            if !std::mem::take(&mut state.untold_end) {
                continue;
            }
            if let ShellStatus::Exited(exit_code) = state.status {
                // A call without a description (the runtime requires one) is named by its
                // command.
                let description = match shell.spec.description.as_str() {
                    "" => shell.spec.command.clone(),
                    given => given.to_owned(),
                };
                ended.push(EndedShell {
                    id: shell.id.clone(),
                    description,
                    exit_code,
                });
            }
        }
        ended
    }
}
