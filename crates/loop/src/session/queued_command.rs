//! A slash command a client queues (SDK `session.commands.enqueue`), taken as the Copilot CLI
//! takes it when it serves SDK clients:
//!
//! - It joins the session's one queue, behind the messages and commands sent before it, and
//!   `pending_messages.modified` announces it; it is listed by `queued_items` until the
//!   session takes it, which announces the queue again.
//! - With a host (a client registered interest in `command.queued`) the session hands it
//!   over (`command.queued`) and holds the queue until the host answers
//!   (`answer_queued_command`): messages and commands queued meanwhile wait, and the
//!   session's other commands wait as they do while a message runs. The answer ends it with
//!   `command.completed`; `stopProcessingQueue` drops what waits behind it.
//! - Without one it is taken and dropped: the engine runs no queued command itself.
//! - When the queue is empty after it, the session goes idle (`assistant.idle`,
//!   `session.idle`), as after a message. An abort while it is held ends it as `abort`, the
//!   queue dropped, and idle.
//!
//! None of this changes what a resume must know: only the abort is recorded.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{
    Abort, AssistantIdle, CommandCompleted, CommandQueued, PendingMessagesModified, SessionIdle,
};

use super::actor::Actor;
use super::command::Command;
use super::emitter;
use super::error::LoopError;
use super::handle::SessionHandle;
use super::lock::lock;
use super::send_queue::{QueueRefused, QueuedItem, QueuedKind};
use super::shared::Shared;

/// Why a command could not be queued.
#[derive(Debug, thiserror::Error)]
pub enum EnqueueError {
    /// The queue holds as many commands as it takes.
    #[error(transparent)]
    Refused(#[from] QueueRefused),
    /// The session is closed.
    #[error(transparent)]
    Closed(#[from] LoopError),
}

impl SessionHandle {
    /// Queues `command` behind what was sent before it; `hosted`: a client takes queued
    /// commands (it registered interest in `command.queued`).
    pub fn enqueue_command(&self, command: String, hosted: bool) -> Result<(), EnqueueError> {
        let request_id = Uuid::new_v4().to_string();
        let cancel = CancellationToken::new();
        {
            let _running = lock(&self.shared.running);
            self.shared.queue.push(
                &request_id,
                QueuedKind::Command,
                command.clone(),
                None,
                cancel.clone(),
            )?;
        }
        // Announced before the actor can take it, so the client sees the queue grow first.
        emitter::publish_live(&self.shared.subscribers, &PendingMessagesModified {});
        let cmd = Command::Enqueued {
            request_id: request_id.clone(),
            command,
            hosted,
            cancel,
        };
        if self.tx.send(cmd).is_err() {
            self.shared.queue.take(&request_id);
            return Err(LoopError::Closed(self.id).into());
        }
        Ok(())
    }

    /// The messages and commands waiting, oldest first (not the running or held one).
    pub fn queued_items(&self) -> Vec<QueuedItem> {
        self.shared.queue.items()
    }

    /// Drops the newest waiting item; false when none waits.
    pub fn remove_most_recent_queued(&self) -> bool {
        let removed = self.shared.queue.remove_most_recent();
        if removed {
            emitter::publish_live(&self.shared.subscribers, &PendingMessagesModified {});
        }
        removed
    }

    /// Drops every waiting item (the running or held one goes on); the queue is announced
    /// even when it was empty, as the Copilot CLI announces it.
    pub fn clear_queue(&self) {
        self.shared.queue.clear();
        emitter::publish_live(&self.shared.subscribers, &PendingMessagesModified {});
    }

    /// The host's answer for the held command `request_id` (`stop`: drop what waits behind
    /// it); false when no held command has that id.
    pub fn answer_queued_command(&self, request_id: &str, stop: bool) -> bool {
        self.shared.queue.answer(request_id, stop)
    }
}

impl Actor {
    /// Takes the queued command `request_id`: passes over it when it was dropped, holds it
    /// for its host, and goes idle when nothing waits behind it.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn queued_command(
        &self,
        shared: &Shared,
        request_id: &str,
        command: String,
        hosted: bool,
        cancel: &CancellationToken,
        rx: &mut mpsc::UnboundedReceiver<Command>,
        deferred: &mut std::collections::VecDeque<Command>,
    ) -> Result<(), LoopError> {
        {
            // Moved from queued to running under the running lock, as a message is.
            let mut running = lock(&shared.running);
            shared.queue.take(request_id);
            if cancel.is_cancelled() {
                // Dropped while it waited: the drop was announced, and whatever runs before
                // or after it ends in its own idle.
                return Ok(());
            }
            *running = Some(cancel.clone());
        }
        self.emitter.emit(&PendingMessagesModified {})?;
        let mut aborted = false;
        if hosted {
            let answer = shared.queue.hold(request_id);
            self.emitter.emit(&CommandQueued {
                request_id: request_id.to_owned(),
                command,
            })?;
            let waited = async {
                tokio::select! {
                    answer = answer => answer.ok(),
                    () = cancel.cancelled() => None,
                }
            };
            let stop = self.while_running(waited, rx, deferred).await;
            shared.queue.release();
            match stop {
                Some(stop) => {
                    self.emitter.emit(&CommandCompleted {
                        request_id: request_id.to_owned(),
                    })?;
                    if stop && shared.queue.clear() > 0 {
                        self.emitter.emit(&PendingMessagesModified {})?;
                    }
                }
                None => aborted = true,
            }
        }
        *lock(&shared.running) = None;
        if aborted {
            // What an abort cancelled behind it is dropped with it.
            self.emitter.emit(&Abort {
                reason: "user_initiated".into(),
            })?;
            shared.queue.clear();
            self.emitter.emit(&PendingMessagesModified {})?;
        }
        if !shared.queue.has_waiting() {
            self.emitter.boundary().await?;
            self.emitter.emit(&AssistantIdle { aborted: None })?;
            self.emitter.emit(&SessionIdle {
                aborted: None,
                mode: None,
            })?;
        }
        Ok(())
    }
}
