//! The connected clients, for the notifications every one of them gets (`session.lifecycle`).
//! A narrow handle: what forwards a session's events needs to announce, not the whole server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::peer::Peer;

/// Every connected client; cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Broadcaster {
    peers: Arc<Mutex<HashMap<u64, Arc<Peer>>>>,
}

impl Broadcaster {
    /// Adds a connected client.
    pub(crate) fn add(&self, peer: Arc<Peer>) {
        lock(&self.peers).insert(peer.id(), peer);
    }

    /// Forgets a client that went away.
    pub(crate) fn remove(&self, id: u64) {
        lock(&self.peers).remove(&id);
    }

    /// Sends a `session.lifecycle` notification to every connected client.
    pub(crate) fn lifecycle(&self, params: &Value) {
        let peers: Vec<_> = lock(&self.peers).values().cloned().collect();
        for peer in peers {
            peer.notify("session.lifecycle", params);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
