//! The single writer of a session's journal: write-ahead appends, group-committed fsyncs.
//!
//! Appends are written to the file by the caller (so a line is in the journal before anyone
//! is told about it); a syncer thread turns "durable up to event N" requests into one fsync
//! that covers every line written so far (group commit). A failed write or fsync poisons the
//! writer: the kernel may have dropped the dirty pages, so retrying could claim durability for
//! data that is gone. Reopen (which recovers the tail) instead.

mod error;
mod index_facts;
mod options;
mod shared;
mod syncer;

use std::io::{self, BufReader, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use tokio::sync::watch;
use uuid::Uuid;

use crate::event::Event;
use crate::layout::{EVENTS_FILE, LayoutError, SessionPaths, StateRoot};
use crate::repair::cut_tail;
use crate::scan::{JournalScan, ScanError, Verdict};
use crate::seal_file::SealWriter;
use crate::session_dir::{Access, SessionDir};
use crate::sink::{JournalSink, SinkError};
use crate::summary::HEAD_LINES;
use crate::writer_lock::WriterLock;
pub use error::WriteError;
use index_facts::index_facts;
pub use options::{Durability, Recovery, TrustedPrefix, UnknownDurability, WriterOptions};
use shared::{Shared, State, lock, poison};
use syncer::syncer_loop;

/// The one writer of a session's journal (see the module doc).
#[derive(Debug)]
pub struct JournalWriter {
    shared: Arc<Shared>,
    durability: Durability,
    syncer: Option<JoinHandle<()>>,
    paths: SessionPaths,
    sink: Option<Arc<dyn JournalSink>>,
    /// Whether lines are hashed for the seal (their digests taken outside the state lock).
    sealed: bool,
    _lock: WriterLock,
}

impl JournalWriter {
    /// Creates a new session under `root` and opens its writer.
    pub fn create(
        root: &StateRoot,
        id: Uuid,
        options: WriterOptions,
    ) -> Result<(Self, Recovery), WriteError> {
        let paths = root.create_session(id)?;
        Self::open(&paths, options)
    }

    /// Opens an existing session's journal for append: takes the lock, checks every line
    /// (after a trusted prefix), cuts a torn tail to a side file, refuses mid-file damage.
    pub fn open(
        paths: &SessionPaths,
        options: WriterOptions,
    ) -> Result<(Self, Recovery), WriteError> {
        // Every file of the session is opened relative to the directory, never through a link.
        let lock = WriterLock::acquire_in(SessionDir::open(&paths.dir)?)?;
        let dir = lock.dir();
        let name = paths
            .events
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(EVENTS_FILE)
            .to_owned();
        if paths.events.parent() != Some(paths.dir.as_path()) {
            return Err(LayoutError::WrongKind {
                path: paths.events.clone(),
                what: "is not inside its session directory",
            }
            .into());
        }
        match dir.stat(&name)? {
            None => {
                return Err(LayoutError::Io {
                    path: paths.events.clone(),
                    source: io::ErrorKind::NotFound.into(),
                }
                .into());
            }
            Some(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
                return Err(LayoutError::Link {
                    path: paths.events.clone(),
                    target: std::fs::read_link(&paths.events).ok(),
                }
                .into());
            }
            Some(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {}
            Some(_) => {
                return Err(LayoutError::WrongKind {
                    path: paths.events.clone(),
                    what: "is not a regular file (expected the session's events.jsonl)",
                }
                .into());
            }
        }
        // A key that cannot be read is refused before anything is cut or written.
        let seal_key = options.sealing.key()?;
        // Refuses a symlinked or hard-linked journal before a byte is read or cut.
        let file = dir.open_file(&name, Access::Append)?;
        let scan = scan_from(&paths.events, options.trusted_prefix)?;
        let mut recovery = Recovery::default();
        let (events, bytes, last_id) = match scan.verdict() {
            Verdict::Clean => (scan.good_lines, scan.file_len, scan.last_id),
            Verdict::TornTail {
                cut_at,
                line,
                reason,
                kept_lines,
            } => {
                recovery.torn_tail = Some(cut_tail(dir, &name, cut_at, line, &reason)?);
                (kept_lines, cut_at, scan.last_id)
            }
            Verdict::Damaged { first, .. } => {
                return Err(WriteError::Damaged {
                    path: paths.events.clone(),
                    line: first.line,
                    offset: first.offset,
                    message: first.message,
                });
            }
        };
        recovery.events = events;
        recovery.bytes = bytes;
        recovery.last_id = last_id;
        let facts = index_facts(paths, dir, &name, bytes);
        let seal =
            seal_key.and_then(|key| SealWriter::open(dir, &name, bytes, key, options.sink.clone()));
        let sealed = seal.is_some();
        let (durable_tx, _) = watch::channel((events, false));
        let shared = Arc::new(Shared {
            path: paths.events.clone(),
            file,
            state: Mutex::new(State {
                written: events,
                bytes,
                last_id,
                durable: events,
                requested: events,
                poisoned: None,
                closing: false,
                facts,
                seal,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            durable_tx,
        });
        let syncer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("journal-syncer".into())
                .spawn(move || syncer_loop(&shared))
                .map_err(|source| WriteError::Io {
                    path: paths.events.clone(),
                    source,
                })?
        };
        let writer = JournalWriter {
            shared,
            durability: options.durability,
            syncer: Some(syncer),
            paths: paths.clone(),
            sink: options.sink,
            sealed,
            _lock: lock,
        };
        writer.update_index();
        Ok((writer, recovery))
    }

    /// The session's paths.
    pub fn paths(&self) -> &SessionPaths {
        &self.paths
    }

    /// The durability mode.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Id of the last event in the journal (the `parentId` of the next one).
    pub fn last_id(&self) -> Option<Uuid> {
        self.lock_state().last_id
    }

    /// Number of events in the journal (including those written before this writer opened).
    pub fn event_count(&self) -> u64 {
        self.lock_state().written
    }

    /// Size of the journal in bytes.
    pub fn byte_len(&self) -> u64 {
        self.lock_state().bytes
    }

    /// Highest event sequence number known durable.
    pub fn durable_seq(&self) -> u64 {
        self.lock_state().durable
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Appends the session's current facts to the session index (no fsync; see `index.rs`).
    fn update_index(&self) {
        let record = {
            let mut st = self.lock_state();
            if let Some(facts) = st.facts.as_mut() {
                facts.due = false;
            }
            st.index_record(&self.shared.file)
        };
        if let Some((root, record)) = record {
            crate::index::append(&root, &record);
        }
    }

    /// Appends one persisted event and returns its sequence number (1-based event count).
    ///
    /// The line is in the file (page cache) when this returns; with [`Durability::Event`] it is
    /// also fsynced. Ephemeral types and events that do not chain to the last id are refused.
    pub fn append(&self, event: &Event) -> Result<u64, WriteError> {
        let seq = self.append_unsynced(event)?;
        if self.durability == Durability::Event {
            self.sync_to(seq)?;
        }
        Ok(seq)
    }

    /// Appends like [`Self::append`] but never waits for an fsync, whatever the durability;
    /// the caller waits with [`Self::sync_to`] or [`Self::durable`] when it needs to (for
    /// example after releasing its own locks, so concurrent producers share one fsync).
    pub fn append_unsynced(&self, event: &Event) -> Result<u64, WriteError> {
        if event.is_ephemeral() {
            return Err(WriteError::Ephemeral(event.event_type.to_string()));
        }
        let mut line = Vec::with_capacity(event.data.get().len() + 160);
        event.write_persisted(&mut line);
        line.push(b'\n');
        // The one hash of the line's bytes, before the lock; under it only the chain's link.
        let digest = self.sealed.then(|| turnstile_seal::LineDigest::of(&line));
        let seq = {
            let mut st = self.lock_state();
            self.check_poison(&st)?;
            if event.parent_id != st.last_id {
                return Err(WriteError::BrokenChain {
                    id: event.id,
                    parent: event.parent_id,
                    last: st.last_id,
                });
            }
            // The replica first: a line it refuses (another writer, a lost lease) reaches
            // neither store, and the writer accepts nothing after it.
            if let Some(sink) = &self.sink
                && let Err(e) = sink.send(st.written + 1, event.id, &line)
            {
                poison(&self.shared, &mut st, e.to_string());
                return Err(e.into());
            }
            if let Err(e) = (&self.shared.file).write_all(&line) {
                // Part of the line may be on disk; the next open cuts it as a torn tail.
                let reason = format!("write failed: {e}");
                poison(&self.shared, &mut st, reason);
                return Err(WriteError::Io {
                    path: self.shared.path.clone(),
                    source: e,
                });
            }
            st.written += 1;
            st.bytes += line.len() as u64;
            if let (Some(seal), Some(digest)) = (st.seal.as_mut(), &digest) {
                seal.push(digest, line.len() as u64);
            }
            st.last_id = Some(event.id);
            let seq = st.written;
            if let Some(facts) = st.facts.as_mut() {
                if seq <= HEAD_LINES as u64 {
                    facts.head.absorb_event(event);
                }
                facts.updated = Some(event.timestamp.clone());
                if let Some(ending) = facts.ending.as_mut() {
                    ending.absorb(event);
                }
                if matches!(
                    event.event_type.as_str(),
                    "assistant.turn_end" | "session.shutdown"
                ) {
                    facts.due = true;
                }
            }
            seq
        };
        Ok(seq)
    }

    /// Marks a turn boundary (turn end, before idle): fsyncs everything written so far unless
    /// durability is [`Durability::Off`]. Returns the durable sequence number.
    pub fn turn_boundary(&self) -> Result<u64, WriteError> {
        let seq = self.checkpoint_seal();
        if self.durability == Durability::Off {
            return Ok(seq);
        }
        self.sync_to(seq)
    }

    /// Appends the seal's checkpoint of the lines written since the last one; returns the
    /// event count it covers. A seal that cannot be written is dropped (see `seal_file.rs`).
    fn checkpoint_seal(&self) -> u64 {
        let mut st = self.lock_state();
        if let Some(seal) = st.seal.as_mut()
            && !seal.checkpoint()
        {
            st.seal = None;
        }
        st.written
    }

    /// Blocks until every event up to `seq` is fsynced (requesting the fsync if needed) and
    /// acknowledged by the sink, if there is one.
    pub fn sync_to(&self, seq: u64) -> Result<u64, WriteError> {
        let durable = self.sync_file_to(seq)?;
        self.sink_ack(seq)?;
        Ok(durable)
    }

    /// Blocks until the sink acknowledged every line up to `seq`; a failure poisons.
    fn sink_ack(&self, seq: u64) -> Result<(), WriteError> {
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        sink.wait(seq).map_err(|e| self.sink_failed(e))
    }

    fn sink_failed(&self, e: SinkError) -> WriteError {
        poison(&self.shared, &mut self.lock_state(), e.to_string());
        e.into()
    }

    fn sync_file_to(&self, seq: u64) -> Result<u64, WriteError> {
        let mut st = self.lock_state();
        loop {
            self.check_poison(&st)?;
            if st.durable >= seq {
                return Ok(st.durable);
            }
            if st.requested < seq {
                st.requested = seq;
                self.shared.work.notify_one();
            }
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Waits asynchronously until every event up to `seq` is durable, requesting the fsync,
    /// and acknowledged by the sink, if there is one.
    pub async fn durable(&self, seq: u64) -> Result<u64, WriteError> {
        let durable = self.durable_file(seq).await?;
        if let Some(sink) = &self.sink {
            sink.wait_async(seq)
                .await
                .map_err(|e| self.sink_failed(e))?;
        }
        Ok(durable)
    }

    async fn durable_file(&self, seq: u64) -> Result<u64, WriteError> {
        let mut rx = self.shared.durable_tx.subscribe();
        {
            let mut st = self.lock_state();
            self.check_poison(&st)?;
            if st.durable >= seq {
                return Ok(st.durable);
            }
            if st.requested < seq {
                st.requested = seq;
                self.shared.work.notify_one();
            }
        }
        let outcome = rx
            .wait_for(|&(durable, poisoned)| poisoned || durable >= seq)
            .await
            .map(|v| *v);
        let durable = match outcome {
            Ok((durable, false)) => durable,
            _ => {
                let st = self.lock_state();
                self.check_poison(&st)?;
                st.durable
            }
        };
        Ok(durable)
    }

    fn check_poison(&self, st: &State) -> Result<(), WriteError> {
        match &st.poisoned {
            Some(reason) => Err(WriteError::Poisoned {
                path: self.shared.path.clone(),
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Syncs (unless durability is off), stops the syncer and releases the lock.
    pub fn close(mut self) -> Result<(), WriteError> {
        // Whatever the durability, a closed session's lines are all in the replica.
        let result = self
            .turn_boundary()
            .and_then(|_| self.sink_ack(self.event_count()));
        self.stop_syncer();
        result
    }

    fn stop_syncer(&mut self) {
        {
            let mut st = self.lock_state();
            st.closing = true;
            self.shared.work.notify_one();
        }
        if let Some(handle) = self.syncer.take() {
            let _ = handle.join();
            if let Some(seal) = self.lock_state().seal.as_mut() {
                seal.close();
            }
            // The last word for the session index (once: the syncer is gone only once).
            self.update_index();
        }
    }

    /// Poisons the writer as if an fsync had failed (for tests of the failure path).
    #[doc(hidden)]
    pub fn poison_for_test(&self, reason: &str) {
        let mut st = self.lock_state();
        poison(&self.shared, &mut st, reason.to_owned());
    }
}

impl Drop for JournalWriter {
    fn drop(&mut self) {
        self.stop_syncer();
    }
}

fn scan_from(path: &Path, trusted: Option<TrustedPrefix>) -> Result<JournalScan, ScanError> {
    let Some(prefix) = trusted else {
        return JournalScan::of_file(path);
    };
    let err = |source| ScanError {
        path: path.to_path_buf(),
        source,
    };
    let mut file = crate::session_dir::open_read_nofollow(path).map_err(err)?;
    let len = file.metadata().map_err(err)?.len();
    if prefix.len > len {
        return JournalScan::of_file(path);
    }
    io::Seek::seek(&mut file, io::SeekFrom::Start(prefix.len)).map_err(err)?;
    let mut scan = JournalScan::of_reader(
        BufReader::with_capacity(1 << 16, file),
        prefix.lines,
        prefix.len,
    )
    .map_err(err)?;
    scan.good_lines += prefix.lines;
    if scan.last_id.is_none() {
        scan.last_id = prefix.last_id;
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventType;
    use serde_json::value::RawValue;

    fn event(parent: Option<Uuid>, n: u32) -> Event {
        let data = RawValue::from_string(format!("{{\"n\":{n}}}")).unwrap();
        Event::with_raw_data(EventType::new("session.info"), data, parent)
    }

    fn new_writer(durability: Durability) -> (tempfile::TempDir, JournalWriter) {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        let (w, rec) = JournalWriter::create(
            &root,
            Uuid::new_v4(),
            WriterOptions {
                durability,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(rec.events, 0);
        (tmp, w)
    }

    #[test]
    fn appends_chain_and_reopen_continues() {
        let (_tmp, w) = new_writer(Durability::Event);
        let mut last = None;
        for n in 0..5 {
            let ev = event(last, n);
            last = Some(ev.id);
            assert_eq!(w.append(&ev).unwrap(), u64::from(n) + 1);
        }
        assert_eq!(w.durable_seq(), 5);
        let paths = w.paths().clone();
        let bytes = w.byte_len();
        w.close().unwrap();
        let (w, rec) = JournalWriter::open(&paths, WriterOptions::default()).unwrap();
        assert_eq!((rec.events, rec.bytes, rec.last_id), (5, bytes, last));
        assert!(matches!(
            w.append(&event(None, 9)),
            Err(WriteError::BrokenChain { .. })
        ));
    }

    #[test]
    fn ephemeral_events_are_refused() {
        let (_tmp, w) = new_writer(Durability::Turn);
        let data = RawValue::from_string("{}".into()).unwrap();
        let idle = Event::with_raw_data(EventType::new("session.idle"), data, None);
        assert!(matches!(w.append(&idle), Err(WriteError::Ephemeral(_))));
        assert_eq!(std::fs::read(&w.paths().events).unwrap().len(), 0);
    }

    #[test]
    fn turn_boundary_makes_everything_durable() {
        let (_tmp, w) = new_writer(Durability::Turn);
        let a = event(None, 1);
        w.append(&a).unwrap();
        w.append(&event(Some(a.id), 2)).unwrap();
        assert_eq!(w.durable_seq(), 0);
        assert_eq!(w.turn_boundary().unwrap(), 2);
    }

    #[test]
    fn off_never_syncs_on_boundaries() {
        let (_tmp, w) = new_writer(Durability::Off);
        w.append(&event(None, 1)).unwrap();
        assert_eq!(w.turn_boundary().unwrap(), 1);
        assert_eq!(w.durable_seq(), 0);
    }

    #[test]
    fn poisoned_writer_refuses_everything() {
        let (_tmp, w) = new_writer(Durability::Turn);
        let a = event(None, 1);
        w.append(&a).unwrap();
        w.poison_for_test("fsync failed: EIO");
        let err = w.append(&event(Some(a.id), 2)).unwrap_err().to_string();
        assert!(err.contains("poisoned") && err.contains("EIO"), "{err}");
        assert!(w.turn_boundary().is_err());
    }

    #[tokio::test]
    async fn async_durable_wait() {
        let (_tmp, w) = new_writer(Durability::Turn);
        let a = event(None, 1);
        let seq = w.append(&a).unwrap();
        assert_eq!(w.durable(seq).await.unwrap(), 1);
    }

    #[test]
    fn concurrent_producers_group_commit() {
        let (_tmp, w) = new_writer(Durability::Event);
        let w = std::sync::Arc::new(w);
        // The chain needs ordering, so producers take turns through a mutex around
        // "read last id + append"; fsyncs still overlap across producers.
        let gate = std::sync::Arc::new(Mutex::new(()));
        std::thread::scope(|s| {
            for t in 0..4 {
                let (w, gate) = (&w, &gate);
                s.spawn(move || {
                    for n in 0..25 {
                        let _g = gate.lock().unwrap();
                        let ev = event(w.last_id(), t * 100 + n);
                        w.append(&ev).unwrap();
                    }
                });
            }
        });
        assert_eq!(w.event_count(), 100);
        assert_eq!(w.durable_seq(), 100);
    }
}
