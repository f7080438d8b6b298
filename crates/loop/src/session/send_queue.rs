//! What waits in a session's queue: the messages sent while another ran and the slash
//! commands a client queued (`session.commands.enqueue`), in the order they came, each with
//! what cancels it; and the queued command the session holds for its host until the host
//! answers (`command.queued`, then `session.commands.respondToQueuedCommand`).
//!
//! The actor takes the items in order from its channel; this list is what a client sees of
//! them (`session.queue.pendingItems`) and what it may drop (`removeMostRecent`, `clear`). An
//! item dropped here is cancelled, and the actor passes over it when it reaches it.
//!
//! Bounds: at most [`MAX_QUEUED_COMMANDS`] commands wait at once (a client that queues
//! without end cannot grow the server); messages are bounded by their senders, who wait.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::lock::lock;
use crate::autopilot::AgentMode;

/// The most slash commands that wait in one session's queue at once.
pub const MAX_QUEUED_COMMANDS: usize = 256;

/// What a queued item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueuedKind {
    /// A message sent while another ran.
    Message,
    /// A slash command a client queued.
    Command,
}

impl QueuedKind {
    /// The schema's name (`QueuePendingItemsKind`).
    pub fn as_str(self) -> &'static str {
        match self {
            QueuedKind::Message => "message",
            QueuedKind::Command => "command",
        }
    }
}

/// One waiting item as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedItem {
    /// The session's number for it, in the order items were queued (`"0"`, `"1"`, ...).
    pub id: String,
    /// A message or a command.
    pub kind: QueuedKind,
    /// The prompt or the command line.
    pub display_text: String,
    /// The mode the message was sent with; `None` for a command or the session's mode.
    pub agent_mode: Option<AgentMode>,
}

/// Why a command was not queued.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueueRefused {
    /// [`MAX_QUEUED_COMMANDS`] commands wait already.
    #[error("{MAX_QUEUED_COMMANDS} commands are already queued in this session")]
    Full,
}

struct Waiting {
    /// The message id, or the queued command's request id.
    key: String,
    item: QueuedItem,
    cancel: CancellationToken,
}

/// The session's queue and its held command.
#[derive(Default)]
pub(super) struct SendQueue {
    waiting: Mutex<Vec<Waiting>>,
    next_id: AtomicU64,
    /// The command handed to its host: its request id and where the answer goes (`true`:
    /// stop, drop what is queued behind it).
    held: Mutex<Option<(String, oneshot::Sender<bool>)>>,
}

impl SendQueue {
    /// Queues an item under `key`; `cancel` is what dropping it cancels.
    pub(super) fn push(
        &self,
        key: &str,
        kind: QueuedKind,
        display_text: String,
        agent_mode: Option<AgentMode>,
        cancel: CancellationToken,
    ) -> Result<(), QueueRefused> {
        let mut waiting = lock(&self.waiting);
        if kind == QueuedKind::Command
            && waiting
                .iter()
                .filter(|w| w.item.kind == QueuedKind::Command)
                .count()
                >= MAX_QUEUED_COMMANDS
        {
            return Err(QueueRefused::Full);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        waiting.push(Waiting {
            key: key.to_owned(),
            item: QueuedItem {
                id,
                kind,
                display_text,
                agent_mode,
            },
            cancel,
        });
        Ok(())
    }

    /// The item `key` leaves the queue (the actor takes it, or it could not be sent).
    pub(super) fn take(&self, key: &str) {
        lock(&self.waiting).retain(|w| w.key != key);
    }

    /// True when an item that was not dropped waits.
    pub(super) fn has_waiting(&self) -> bool {
        lock(&self.waiting).iter().any(|w| !w.cancel.is_cancelled())
    }

    /// The items that wait, oldest first (the ones an abort cancelled are gone).
    pub(super) fn items(&self) -> Vec<QueuedItem> {
        lock(&self.waiting)
            .iter()
            .filter(|w| !w.cancel.is_cancelled())
            .map(|w| w.item.clone())
            .collect()
    }

    /// Drops the newest item; false when none waits.
    pub(super) fn remove_most_recent(&self) -> bool {
        let mut waiting = lock(&self.waiting);
        waiting.retain(|w| !w.cancel.is_cancelled());
        match waiting.pop() {
            Some(w) => {
                w.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Drops every item; how many waited.
    pub(super) fn clear(&self) -> usize {
        let mut waiting = lock(&self.waiting);
        let live = waiting.iter().filter(|w| !w.cancel.is_cancelled()).count();
        for w in waiting.drain(..) {
            w.cancel.cancel();
        }
        live
    }

    /// Cancels every item, leaving them listed until the actor passes them (`abort`).
    pub(super) fn cancel_all(&self) {
        for w in lock(&self.waiting).iter() {
            w.cancel.cancel();
        }
    }

    /// Holds the command `request_id` for its host; the receiver gets the host's answer.
    pub(super) fn hold(&self, request_id: &str) -> oneshot::Receiver<bool> {
        let (tx, rx) = oneshot::channel();
        *lock(&self.held) = Some((request_id.to_owned(), tx));
        rx
    }

    /// The host's answer for `request_id`; false when no held command has that id.
    pub(super) fn answer(&self, request_id: &str, stop: bool) -> bool {
        let mut held = lock(&self.held);
        if held.as_ref().is_none_or(|(id, _)| id != request_id) {
            return false;
        }
        held.take().is_some_and(|(_, tx)| tx.send(stop).is_ok())
    }

    /// The held command is over (answered or aborted): a late answer matches nothing.
    pub(super) fn release(&self) {
        lock(&self.held).take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(queue: &SendQueue, key: &str, kind: QueuedKind) -> CancellationToken {
        let cancel = CancellationToken::new();
        queue
            .push(key, kind, format!("/{key}"), None, cancel.clone())
            .unwrap();
        cancel
    }

    #[test]
    fn items_are_numbered_in_order_and_dropped_newest_first() {
        let queue = SendQueue::default();
        let a = push(&queue, "a", QueuedKind::Command);
        let b = push(&queue, "b", QueuedKind::Message);
        let ids: Vec<String> = queue.items().into_iter().map(|i| i.id).collect();
        assert_eq!(ids, ["0", "1"]);
        assert!(queue.remove_most_recent());
        assert!(b.is_cancelled() && !a.is_cancelled());
        queue.take("a");
        assert!(!queue.remove_most_recent(), "a left the queue to run");
        push(&queue, "c", QueuedKind::Command);
        assert_eq!(queue.items()[0].id, "2", "numbers are not reused");
    }

    #[test]
    fn clear_drops_all_and_an_abort_hides_what_it_cancelled() {
        let queue = SendQueue::default();
        assert_eq!(queue.clear(), 0);
        let a = push(&queue, "a", QueuedKind::Command);
        push(&queue, "b", QueuedKind::Command);
        queue.cancel_all();
        assert!(a.is_cancelled() && queue.items().is_empty() && !queue.has_waiting());
        assert!(!queue.remove_most_recent());
        push(&queue, "c", QueuedKind::Command);
        assert_eq!(queue.clear(), 1);
        assert!(queue.items().is_empty());
    }

    #[tokio::test]
    async fn a_held_command_takes_one_answer_with_its_own_id() {
        let queue = SendQueue::default();
        assert!(!queue.answer("r1", false), "nothing held");
        let rx = queue.hold("r1");
        assert!(!queue.answer("other", false));
        assert!(queue.answer("r1", true));
        assert!(rx.await.unwrap());
        assert!(!queue.answer("r1", true), "answered once");
        let _rx = queue.hold("r2");
        queue.release();
        assert!(!queue.answer("r2", false), "released without an answer");
    }

    #[test]
    fn waiting_commands_are_bounded() {
        let queue = SendQueue::default();
        for i in 0..MAX_QUEUED_COMMANDS {
            push(&queue, &format!("c{i}"), QueuedKind::Command);
        }
        let refused = queue.push(
            "more",
            QueuedKind::Command,
            String::new(),
            None,
            CancellationToken::new(),
        );
        assert_eq!(refused, Err(QueueRefused::Full));
        push(&queue, "m", QueuedKind::Message);
    }
}
