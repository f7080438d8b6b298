//! Which of a session's connections answer elicitations (opened or joined it with
//! `requestElicitation: true`). The session can ask for a form while one is left; when the
//! answer to "can it?" changes (the first such client joins, the last one leaves), every client
//! of the session is told with `capabilities.changed`, as the Copilot CLI tells them.

use std::collections::BTreeSet;
use std::sync::Mutex;

use turnstile_journal::payload::{CapabilitiesChanged, UiCapabilities};

/// The connections of one session that answer elicitations, by connection id.
#[derive(Debug, Default)]
pub(crate) struct ElicitationPeers {
    peers: Mutex<BTreeSet<u64>>,
}

impl ElicitationPeers {
    /// The set holding `peer` when it declared a handler.
    pub(crate) fn opened_by(peer: u64, answers: bool) -> Self {
        let set = ElicitationPeers::default();
        set.declare(peer, answers);
        set
    }

    /// Whether some connection answers elicitations.
    pub(crate) fn any(&self) -> bool {
        !self.lock().is_empty()
    }

    /// What `peer` declared when it opened or joined the session (a later declaration of the
    /// same connection replaces the earlier one). `Some` is the notice to send when the
    /// session's capability changed.
    pub(crate) fn declare(&self, peer: u64, answers: bool) -> Option<CapabilitiesChanged> {
        let mut peers = self.lock();
        let before = !peers.is_empty();
        if answers {
            peers.insert(peer);
        } else {
            peers.remove(&peer);
        }
        changed(before, !peers.is_empty())
    }

    /// `peer` left the session: the notice to send when it was the last one that answered.
    pub(crate) fn leave(&self, peer: u64) -> Option<CapabilitiesChanged> {
        self.declare(peer, false)
    }

    /// The connections of `earlier` (the same session opened before) that are still among
    /// `clients`, besides those already here: a session reopened by a joining client keeps
    /// the handlers of the clients that stay.
    pub(crate) fn keep_from(&self, earlier: &ElicitationPeers, clients: &[u64]) {
        let kept: Vec<u64> = earlier
            .lock()
            .iter()
            .copied()
            .filter(|p| clients.contains(p))
            .collect();
        self.lock().extend(kept);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.peers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The `capabilities.changed` notice for a change of whether a client answers elicitations.
pub(crate) fn changed(before: bool, now: bool) -> Option<CapabilitiesChanged> {
    (before != now).then_some(CapabilitiesChanged {
        ui: Some(UiCapabilities {
            elicitation: Some(now),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(notice: Option<CapabilitiesChanged>) -> Option<bool> {
        notice.and_then(|n| n.ui).and_then(|ui| ui.elicitation)
    }

    #[test]
    fn the_first_to_join_and_the_last_to_leave_change_the_capability() {
        let peers = ElicitationPeers::opened_by(1, false);
        assert!(!peers.any());
        assert_eq!(said(peers.declare(2, true)), Some(true));
        assert_eq!(said(peers.declare(3, true)), None);
        assert_eq!(said(peers.leave(2)), None);
        assert_eq!(said(peers.leave(1)), None, "1 never answered");
        assert_eq!(said(peers.leave(3)), Some(false));
        assert!(!peers.any());
    }

    #[test]
    fn a_reopened_session_keeps_the_handlers_of_the_clients_that_stay() {
        let earlier = ElicitationPeers::opened_by(1, true);
        earlier.declare(2, true);
        let now = ElicitationPeers::opened_by(3, false);
        now.keep_from(&earlier, &[3, 2]);
        assert!(now.any());
        assert_eq!(said(now.leave(2)), Some(false));
    }
}
