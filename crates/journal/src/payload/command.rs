//! Ephemeral notices of the session's slash commands: the commands the clients registered
//! (`commands.changed`), one of them handed to its client to run (`command.execute`), a queued
//! command handed to its host (`command.queued`), and the end of a command's request
//! (`command.completed`).

use serde::{Deserialize, Serialize};

use super::payload;

/// One command of `commands.changed`: a command a client registered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedCommand {
    /// The name, without the leading `/`.
    pub name: String,
    /// What it does (empty when the client gave none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `commands.changed` (ephemeral): the commands the session's clients registered, all of
/// them, after a client joined or left with some.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandsChanged {
    /// Every registered command now.
    pub commands: Vec<ChangedCommand>,
}
payload!(CommandsChanged, "commands.changed");

/// `command.execute` (ephemeral): a registered command to run; the client that registered
/// it answers with `session.commands.handlePendingCommand`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecute {
    /// The id the answer names.
    pub request_id: String,
    /// The whole command line (`/deploy production`).
    pub command: String,
    /// The name, without the leading `/`.
    pub command_name: String,
    /// What follows the name.
    pub args: String,
}
payload!(CommandExecute, "command.execute");

/// `command.completed` (ephemeral): a command's request ended; a client dismisses what it
/// shows for it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandCompleted {
    /// The request that ended.
    pub request_id: String,
}
payload!(CommandCompleted, "command.completed");

/// `command.queued` (ephemeral): a slash command reached the head of the session's queue and
/// waits for the host that registered interest in it; the host answers with
/// `session.commands.respondToQueuedCommand`, and what is queued behind waits until then.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandQueued {
    /// The id the answer names.
    pub request_id: String,
    /// The command as it was queued (`/compact`, or any text).
    pub command: String,
}
payload!(CommandQueued, "command.queued");
