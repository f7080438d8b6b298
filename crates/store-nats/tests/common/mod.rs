//! What the store tests share: journals as the engine's writer writes them, the runtime they
//! drive the store with, and a new session attached to a store.

use std::path::Path;
use std::time::Duration;

use turnstile_journal::{Event, EventType, JournalWriter, StateRoot, Uuid};
use turnstile_store::{AttachMode, JournalStore};
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsAttachment, NatsConfig, NatsStore};

/// A runtime of two workers: the store's publisher has its own thread, the test's tasks these.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The store of `server` with a lease of `ttl`.
pub fn config_with_lease(server: &LocalNats, ttl: Duration) -> NatsConfig {
    let mut config = NatsConfig::new(server.url());
    config.lease_ttl = ttl;
    config
}

/// A new session created on `store`, its working copy under `copies`.
pub async fn create_session(store: &NatsStore, copies: &Path) -> (Uuid, NatsAttachment) {
    let id = Uuid::new_v4();
    let attachment = store
        .attach(id, &StateRoot::new(copies), AttachMode::Create)
        .await
        .unwrap();
    (id, attachment)
}

/// A new session id and a journal of `lines` `session.info` lines, written by the journal
/// writer (so the bytes are exactly what a session directory holds).
pub fn journal(lines: usize) -> (Uuid, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let root = StateRoot::new(dir.path());
    let id = Uuid::new_v4();
    let (w, _) = JournalWriter::create(&root, id, Default::default()).unwrap();
    let mut last = None;
    for n in 0..lines {
        let data =
            serde_json::value::RawValue::from_string(format!("{{\"message\":\"line {n}\"}}"))
                .unwrap();
        let ev = Event::with_raw_data(EventType::new("session.info"), data, last);
        last = Some(ev.id);
        w.append_unsynced(&ev).unwrap();
    }
    w.close().unwrap();
    (id, std::fs::read(root.session(id).events).unwrap())
}

/// A fork of `journal`: its first `keep` lines, byte for byte (the same event ids), then
/// `more` new lines chained to them, as a session forked from it would hold.
pub fn fork(journal: &[u8], keep: usize, more: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let root = StateRoot::new(dir.path());
    let id = Uuid::new_v4();
    let (w, _) = JournalWriter::create(&root, id, Default::default()).unwrap();
    let mut last = None;
    for line in journal.split_inclusive(|&b| b == b'\n').take(keep) {
        let ev = Event::from_line(line.trim_ascii_end()).unwrap();
        last = Some(ev.id);
        w.append_unsynced(&ev).unwrap();
    }
    for n in 0..more {
        let data =
            serde_json::value::RawValue::from_string(format!("{{\"message\":\"fork {n}\"}}"))
                .unwrap();
        let ev = Event::with_raw_data(EventType::new("session.info"), data, last);
        last = Some(ev.id);
        w.append_unsynced(&ev).unwrap();
    }
    w.close().unwrap();
    std::fs::read(root.session(id).events).unwrap()
}
