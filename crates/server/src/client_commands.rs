//! The slash commands a session's clients registered (`commands` of create/resume), by
//! connection, and the runs of them waiting for their client (`command.execute` until
//! `session.commands.handlePendingCommand`). When the commands of the session change (a client
//! with commands joins or leaves), every client is told with `commands.changed`, as the Copilot
//! CLI tells them.
//!
//! Bounds: at most [`MAX_PENDING`] runs wait at once (a client that never answers cannot grow
//! the server); a client's commands are bounded by the size of its open request.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde::Deserialize;
use tokio::sync::oneshot;
use turnstile_journal::payload::{ChangedCommand, CommandsChanged};

/// The most command runs a session waits on at once.
pub const MAX_PENDING: usize = 64;

/// One command a client registers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandParams {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

/// How a run of a client's command ended: `Err` with the client's error text.
pub(crate) type RunOutcome = Result<(), String>;

/// Why a run could not wait for its client.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum RunRefused {
    /// [`MAX_PENDING`] runs are waiting.
    #[error("{MAX_PENDING} commands are already waiting for their clients in this session")]
    Full,
}

/// One session's registered commands and waiting runs.
#[derive(Debug, Default)]
pub(crate) struct ClientCommands {
    by_peer: Mutex<BTreeMap<u64, Vec<CommandParams>>>,
    pending: Mutex<HashMap<String, oneshot::Sender<RunOutcome>>>,
}

impl ClientCommands {
    /// Every registered command, in the order of the connections that registered them; a
    /// name registered twice is listed once (the first connection's).
    pub(crate) fn all(&self) -> Vec<CommandParams> {
        let mut out: Vec<CommandParams> = Vec::new();
        for command in self.lock_peers().values().flatten() {
            if !out
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(&command.name))
            {
                out.push(command.clone());
            }
        }
        out
    }

    /// The command named `name` (case-insensitively, without its `/`).
    pub(crate) fn find(&self, name: &str) -> Option<CommandParams> {
        self.all()
            .into_iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The commands `peer` registered when it opened or joined the session (a later
    /// registration of the same connection replaces the earlier one). `Some` is the notice
    /// to send when the session's commands changed.
    pub(crate) fn declare(
        &self,
        peer: u64,
        commands: Vec<CommandParams>,
    ) -> Option<CommandsChanged> {
        let before = self.all();
        {
            let mut peers = self.lock_peers();
            if commands.is_empty() {
                peers.remove(&peer);
            } else {
                peers.insert(peer, commands);
            }
        }
        self.changed_since(&before)
    }

    /// `peer` left the session: the notice to send when it had commands.
    pub(crate) fn leave(&self, peer: u64) -> Option<CommandsChanged> {
        self.declare(peer, Vec::new())
    }

    /// The commands of the connections of `earlier` (the same session opened before) that
    /// are still among `clients` and declared nothing here: a session reopened by a joining
    /// client keeps the commands of the clients that stay.
    pub(crate) fn keep_from(&self, earlier: &ClientCommands, clients: &[u64]) {
        let kept: Vec<(u64, Vec<CommandParams>)> = earlier
            .lock_peers()
            .iter()
            .filter(|(p, _)| clients.contains(p))
            .map(|(p, c)| (*p, c.clone()))
            .collect();
        let mut peers = self.lock_peers();
        for (peer, commands) in kept {
            peers.entry(peer).or_insert(commands);
        }
    }

    /// The `commands.changed` notice when the commands differ from `before`.
    pub(crate) fn changed_since(&self, before: &[CommandParams]) -> Option<CommandsChanged> {
        let now = self.all();
        (now != before).then(|| CommandsChanged {
            commands: now
                .into_iter()
                .map(|c| ChangedCommand {
                    name: c.name,
                    description: c.description,
                })
                .collect(),
        })
    }

    /// Waits for the client's answer to run `request_id`.
    pub(crate) fn wait(
        &self,
        request_id: &str,
    ) -> Result<oneshot::Receiver<RunOutcome>, RunRefused> {
        let mut pending = self.lock_pending();
        pending.retain(|_, tx| !tx.is_closed());
        if pending.len() >= MAX_PENDING {
            return Err(RunRefused::Full);
        }
        let (tx, rx) = oneshot::channel();
        pending.insert(request_id.to_owned(), tx);
        Ok(rx)
    }

    /// The client's answer for `request_id`; `false` when no run waits for it.
    pub(crate) fn answer(&self, request_id: &str, outcome: RunOutcome) -> bool {
        match self.lock_pending().remove(request_id) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    fn lock_peers(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Vec<CommandParams>>> {
        self.by_peer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<RunOutcome>>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(name: &str) -> CommandParams {
        CommandParams {
            name: name.into(),
            description: Some(format!("{name} it")),
        }
    }

    #[test]
    fn joining_and_leaving_with_commands_changes_them() {
        let commands = ClientCommands::default();
        assert!(commands.declare(1, Vec::new()).is_none());
        let joined = commands.declare(2, vec![command("deploy")]).unwrap();
        assert_eq!(joined.commands[0].name, "deploy");
        assert!(commands.declare(2, vec![command("deploy")]).is_none());
        assert!(commands.leave(1).is_none(), "1 had none");
        assert_eq!(
            commands.find("DEPLOY").map(|c| c.name),
            Some("deploy".into())
        );
        assert!(commands.leave(2).unwrap().commands.is_empty());
    }

    #[test]
    fn a_reopened_session_keeps_the_commands_of_the_clients_that_stay() {
        let earlier = ClientCommands::default();
        earlier.declare(1, vec![command("a")]);
        earlier.declare(2, vec![command("b")]);
        let now = ClientCommands::default();
        now.declare(3, vec![command("c")]);
        now.keep_from(&earlier, &[3, 1]);
        let names: Vec<String> = now.all().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["a", "c"]);
    }

    #[tokio::test]
    async fn a_run_ends_with_its_answer_and_unknown_answers_match_nothing() {
        let commands = ClientCommands::default();
        let rx = commands.wait("r1").unwrap();
        assert!(!commands.answer("other", Ok(())));
        assert!(commands.answer("r1", Err("boom".into())));
        assert_eq!(rx.await.unwrap(), Err("boom".into()));
        assert!(!commands.answer("r1", Ok(())), "answered once");
    }

    #[test]
    fn waiting_runs_are_bounded() {
        let commands = ClientCommands::default();
        let held: Vec<_> = (0..MAX_PENDING)
            .map(|i| commands.wait(&format!("r{i}")).unwrap())
            .collect();
        assert_eq!(commands.wait("more").unwrap_err(), RunRefused::Full);
        drop(held);
        assert!(commands.wait("more").is_ok(), "abandoned runs make room");
    }
}
