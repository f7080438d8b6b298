//! Session journals on NATS JetStream (`docs/stores.md`).
//!
//! One stream holds every journal, one subject per session (`<prefix>.journal.<id>`), one
//! message per journal line with exactly the bytes of `events.jsonl`. Appends come from the
//! journal writer through [`NatsSink`], fenced by the expected last subject sequence and
//! deduplicated by the event id; a KV lease names the one writer; KV buckets hold the session
//! index and checkpoints, an object bucket the folded states too large for a checkpoint
//! entry; live events travel on core NATS ([`LiveFeed`]). The journal's seal is a subject per
//! session in a stream of its own, appended by the same writer (`stored_seal.rs`).

mod checkpoints;
mod config;
mod connect;
mod import;
mod leader;
mod lease;
mod listing;
mod listing_format;
mod live;
pub mod local_server;
mod objects;
mod read;
mod records;
mod sink;
mod states;
mod stored_seal;
mod transient;
mod working_copy;

use std::io::{Read, Seek, Write};
use std::sync::Arc;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::stream::Stream;
use async_nats::jetstream::{self, kv};

use turnstile_journal::ending::Ending;
use turnstile_journal::{JournalSink, LineMeter, SessionSummary, StateRoot, Uuid, max_line_bytes};
use turnstile_store::{AttachMode, Attachment, Exported, Imported, JournalStore, StoreError};

pub use config::{DEFAULT_LEASE_SECS, DEFAULT_LISTING_COMPACT_AFTER, NatsConfig, is_nats_url};
use import::PublishError;
pub use lease::LeaseGrant;
pub use listing::MAX_LISTING_BYTES;
pub use live::{LiveEvents, LiveFeed};
pub use records::{FoldedObject, Holder, IndexValue, StoreCheckpoint, StoredEntry};
pub use sink::NatsSink;
pub use states::MAX_STATE_BYTES;
pub use stored_seal::{SealTail, StoredSeal};
pub use working_copy::Synced;

/// A JetStream journal store (see the crate doc).
#[derive(Debug, Clone)]
pub struct NatsStore {
    config: NatsConfig,
    js: jetstream::Context,
    stream: Stream,
    seals: Stream,
    leases: kv::Store,
    index: kv::Store,
    checkpoints: kv::Store,
    states: states::StateBucket,
    listing: listing::ListingBucket,
    lease_ttl: std::time::Duration,
}

/// A session attached to the JetStream store: its sink (which holds and renews the lease) and
/// what the working copy held when it was made.
#[derive(Debug)]
pub struct NatsAttachment {
    id: Uuid,
    sink: Option<Arc<NatsSink>>,
    synced: Synced,
}

impl NatsAttachment {
    /// What the working copy sync did.
    pub fn synced(&self) -> Synced {
        self.synced
    }

    /// The sink, for callers that look at its acknowledgements.
    pub fn nats_sink(&self) -> Option<&Arc<NatsSink>> {
        self.sink.as_ref()
    }
}

impl Attachment for NatsAttachment {
    fn sink(&self) -> Option<Arc<dyn JournalSink>> {
        self.sink
            .as_ref()
            .map(|s| Arc::clone(s) as Arc<dyn JournalSink>)
    }
}

impl NatsStore {
    /// Connects and creates the stream and buckets when missing.
    pub async fn open(config: NatsConfig) -> Result<Self, StoreError> {
        let js = connect::connect(&config).await?;
        let stream = connect::journal_stream(&js, &config).await?;
        let seals = connect::seal_stream(&js, &config).await?;
        let leases = connect::lease_bucket(&js, &config).await?;
        let index = connect::index_bucket(&js, &config).await?;
        let checkpoints = connect::checkpoint_bucket(&js, &config).await?;
        let lease_ttl = connect::lease_ttl(&leases, &config);
        Ok(NatsStore {
            config,
            js,
            stream,
            seals,
            leases,
            index,
            checkpoints,
            states: states::StateBucket::default(),
            listing: listing::ListingBucket::default(),
            lease_ttl,
        })
    }

    /// The settings.
    pub fn config(&self) -> &NatsConfig {
        &self.config
    }

    fn remote(&self, what: String, e: impl std::fmt::Display) -> StoreError {
        StoreError::Remote {
            store: self.describe(),
            what,
            reason: e.to_string(),
        }
    }

    /// Stream sequence of the last line of `id`'s journal as the stream leader has it; 0 when
    /// the subject is empty.
    pub async fn last_seq(&self, id: Uuid) -> Result<u64, StoreError> {
        leader::last_sequence(&self.stream, &self.config.journal_subject(id))
            .await
            .map_err(|e| self.remote(format!("looking up session {id}"), e))
    }

    /// The index entry of `id` (what `sessions` lists for it), read from the one key; `None`
    /// when the session was never indexed.
    pub async fn summary(&self, id: Uuid) -> Result<Option<SessionSummary>, StoreError> {
        let what = || format!("reading the index entry of session {id}");
        let Some(value) = leader::kv_value(&self.index, &id.to_string())
            .await
            .map_err(|e| self.remote(what(), e))?
        else {
            return Ok(None);
        };
        serde_json::from_slice::<IndexValue>(&value)
            .map(|v| Some(v.split().0))
            .map_err(|e| self.remote(what(), e))
    }

    /// The server that leads the journal stream (its RAFT leader on a cluster), if known.
    pub async fn stream_leader(&self) -> Result<Option<String>, StoreError> {
        let mut stream = self
            .js
            .get_stream(&self.config.stream)
            .await
            .map_err(|e| self.remote("reading the stream".into(), e))?;
        let info = stream
            .info()
            .await
            .map_err(|e| self.remote("reading the stream".into(), e))?;
        Ok(info.cluster.as_ref().and_then(|c| c.leader.clone()))
    }

    /// Whether the journal stream and the lease, index and checkpoint buckets each have a
    /// leader and every other replica is current: a node that came back has caught up. A
    /// second node lost before that leaves a group without a quorum for longer than an
    /// election; tests that kill one node at a time wait for this first.
    pub async fn replicas_current(&self) -> Result<bool, StoreError> {
        let names = [
            self.config.stream.clone(),
            self.config.seal_stream(),
            format!("KV_{}", self.config.lease_bucket()),
            format!("KV_{}", self.config.index_bucket()),
            format!("KV_{}", self.config.checkpoint_bucket()),
        ];
        for name in names {
            let what = || format!("reading stream {name}");
            let mut stream = self
                .js
                .get_stream(&name)
                .await
                .map_err(|e| self.remote(what(), e))?;
            let info = stream.info().await.map_err(|e| self.remote(what(), e))?;
            let Some(cluster) = &info.cluster else {
                continue;
            };
            let replicas = info.config.num_replicas.saturating_sub(1);
            if cluster.leader.is_none()
                || cluster.replicas.len() < replicas
                || cluster.replicas.iter().any(|r| !r.current || r.offline)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The live feed of an attached session, fenced by its writer's lease (see
    /// [`LiveFeed`]); a read-only attachment's feed sends nothing.
    pub fn live_feed(&self, attachment: &NatsAttachment) -> LiveFeed {
        LiveFeed::new(
            self.js.client(),
            self.config.live_subject(attachment.id),
            attachment.sink.clone(),
        )
    }

    /// Subscribes to the live events of `id` from its lease holder (before reading its
    /// history, so nothing falls between the two).
    pub async fn watch(&self, id: Uuid) -> Result<LiveEvents, StoreError> {
        LiveEvents::subscribe(
            &self.js.client(),
            &self.leases,
            self.config.live_subject(id),
            id,
            &self.describe(),
        )
        .await
    }

    /// The stored seal of `id` (empty when it has none), as far as its leader holds it. Read
    /// it before the journal: a record is stored only after the lines it covers.
    pub async fn seal(&self, id: Uuid) -> Result<StoredSeal, StoreError> {
        stored_seal::read(
            &self.js.client(),
            &self.seals,
            &self.config.seal_subject(id),
        )
        .await
        .map_err(|reason| self.remote(format!("reading the seal of session {id}"), reason))
    }

    /// Clears the seal subject of a session being created (under its lease): records left by
    /// an import that failed before its journal was stored seal nothing.
    async fn fresh_seal(&self, id: Uuid) -> Result<(), StoreError> {
        let subject = self.config.seal_subject(id);
        let what = || format!("clearing the seal of new session {id}");
        if leader::last_sequence(&self.seals, &subject)
            .await
            .map_err(|e| self.remote(what(), e))?
            == 0
        {
            return Ok(());
        }
        self.seals
            .purge()
            .filter(subject)
            .await
            .map(|_| ())
            .map_err(|e| self.remote(what(), e))
    }

    /// [`JournalStore::import_from`] with the journal's seal (the bytes of its
    /// `events.jsonl.seal`), stored after the lines by the same writer: the session verifies
    /// on this store as it did on the one it came from. The seal is not checked here
    /// (`turnstile verify` does); a journal already present keeps its seal.
    pub async fn import_sealed<R: Read + Seek + Send>(
        &self,
        id: Uuid,
        journal: &mut R,
        seal: Option<&[u8]>,
    ) -> Result<Imported, StoreError> {
        self.import_with(id, journal, seal.unwrap_or_default())
            .await
    }

    /// Writes every stored line of `id` up to stream sequence `last` (0: none) to `out` as it
    /// arrives, holding one line at a time; a failure of `out` is [`StoreError::Write`].
    async fn stream_into(
        &self,
        id: Uuid,
        last: u64,
        out: &mut (impl Write + Send),
    ) -> Result<(), StoreError> {
        let mut failed = None;
        let read = read::Read::to(self.config.journal_subject(id), DeliverPolicy::All, last)
            .each(&self.js.client(), &self.stream, |line| {
                out.write_all(&line.payload).map_err(|e| {
                    let reason = e.to_string();
                    failed = Some(e);
                    reason
                })
            })
            .await;
        if let Some(source) = failed {
            return Err(StoreError::Write { source });
        }
        read.map_err(|reason| self.remote(format!("reading session {id}"), reason))
    }

    /// The import of `journal` with the seal records `seal` (empty: none).
    async fn import_with<R: Read + Seek + Send>(
        &self,
        id: Uuid,
        journal: &mut R,
        seal: &[u8],
    ) -> Result<Imported, StoreError> {
        let (_scratch, root, copy, copy_len) = import::scratch_copy(id, journal).await?;
        if self.contains(id).await? {
            let mut same = import::compare_with(&copy)?;
            let last = self.last_seq(id).await?;
            self.stream_into(id, last, &mut same).await?;
            let compared = import::compared(same, &copy)?;
            if compared.same {
                return Ok(Imported::AlreadyPresent);
            }
            return Err(StoreError::Conflict {
                store: self.describe(),
                id,
                existing: compared.bytes,
                imported: copy_len,
            });
        }
        let lease = lease::take(&self.leases, &self.describe(), id, self.lease_ttl, false).await?;
        self.fresh_seal(id).await?;
        let sink = NatsSink::start(&self.config, id, 0, 0, SealTail::default(), lease)?;
        let result = import::publish(&sink, &copy, id)
            .and_then(|seq| import::publish_seal(&sink, seal).map(|()| seq))
            .and_then(|seq| sink.wait(seq).map(|()| seq).map_err(PublishError::Sink));
        let acked = sink.acknowledged();
        sink.finish();
        let read = match result {
            Ok(seq) => seq,
            Err(PublishError::Store(e)) => return Err(e),
            Err(PublishError::Sink(e)) => {
                return Err(self.remote(format!("importing session {id}"), e));
            }
        };
        // Every acknowledgement is not every line stored: a message the stream took for a
        // duplicate is acknowledged with the sequence of the one it matched. Only the subject
        // read back says what the session holds.
        let mut same = import::compare_with(&copy)?;
        let last = self.last_seq(id).await?;
        self.stream_into(id, last, &mut same).await?;
        let compared = import::compared(same, &copy)?;
        if !compared.same {
            return Err(StoreError::ShortImport {
                store: self.describe(),
                id,
                read,
                stored: compared.lines,
            });
        }
        // The index and checkpoint come from the same bytes, laid out as a working copy.
        self.record(&root, id, Some(acked)).await?;
        Ok(Imported::Created)
    }

    /// The compacted listing (`listing.rs`) with the index messages after it merged in; the
    /// whole index when there is none; beside each session its ending when its entry has
    /// one. A listing that read many messages after it writes it anew; a failure to write
    /// costs the next listing time, never this one's answer.
    pub async fn list_with_endings(&self) -> Result<StoredListing, StoreError> {
        let what = || "reading the session index".to_owned();
        let filter = format!("{}>", self.index.prefix);
        let until = leader::last_sequence(&self.index.stream, &filter)
            .await
            .map_err(|e| self.remote(what(), e))?;
        // An object in a line format this build does not read is left for the build that
        // wrote it: rewriting it in an older format would only make that one read the index.
        let mut keep_object = false;
        let mut old_format = false;
        let (covers, compacted) = match self
            .listing
            .read(&self.js, &self.config, &self.index.stream, until)
            .await
        {
            Ok(c) => {
                old_format = !c.format.is_current();
                (c.covers, c.entries)
            }
            Err(e @ listing::Unread::Format(_)) => {
                tracing::warn!(error = %e, "the compacted session listing is not read; reading the whole index");
                keep_object = true;
                (0, Vec::new())
            }
            Err(e) => {
                tracing::debug!(error = %e, "no compacted listing taken; reading the whole index");
                (0, Vec::new())
            }
        };
        // Every message after the compacted listing, not the last per key: with one message
        // kept per key they are the same set, and a plain pass costs the server far less than
        // a per-key lookup.
        let later = if until > covers {
            let from = match covers {
                0 => DeliverPolicy::All,
                covers => DeliverPolicy::ByStartSequence {
                    start_sequence: covers + 1,
                },
            };
            // On past `until` to the end: a session written again while the read is under way
            // would otherwise be missing (`read::End::CaughtUp`). No filter: the bucket's
            // stream holds index messages only, and a reader with a
            // wildcard filter makes the server count the filter's pending messages subject by
            // subject when it is created (over 5 s at 1 000 000 keys on a loaded machine: the
            // request timed out), where an unfiltered one is counted at once.
            read::Read::to(String::new(), from, until)
                .caught_up()
                .collect(&self.js.client(), &self.index.stream)
                .await
                .map_err(|reason| self.remote(what(), reason))?
        } else {
            Vec::new()
        };
        let read_later = later.len();
        // What the read took in: past `until` when sessions were written meanwhile.
        let covered = later.last().map_or(until, |m| m.seq.max(until));
        let listed = listing::merge(compacted, later, &self.index.prefix);
        // An object in an earlier format carries no endings: replaced once by this build.
        if !keep_object
            && (old_format
                || listing::worth_compacting(
                    read_later,
                    listed.len(),
                    self.config.listing_compact_after,
                ))
            && let Err(e) = self
                .listing
                .write(&self.js, &self.config, &self.index.stream, covered, &listed)
                .await
        {
            tracing::warn!(error = %e, "the compacted session listing was not written");
        }
        let mut sessions = Vec::with_capacity(listed.len());
        let mut endings = Vec::with_capacity(listed.len());
        for entry in listed {
            sessions.push(entry.summary);
            endings.push(entry.ending);
        }
        Ok(StoredListing { sessions, endings })
    }

    /// The sessions whose lease a writer holds now (its entry has not expired): the running
    /// ones, whatever their index entries (written at detach) say. One pass over the lease
    /// bucket's keys, which are the running sessions only, whatever the number listed.
    pub async fn leased(&self) -> Result<std::collections::HashSet<Uuid>, StoreError> {
        use futures_util::StreamExt;
        let what = || "reading the lease bucket".to_owned();
        let mut keys = self
            .leases
            .keys()
            .await
            .map_err(|e| self.remote(what(), e))?;
        let mut held = std::collections::HashSet::new();
        while let Some(key) = keys.next().await {
            let key = key.map_err(|e| self.remote(what(), e))?;
            if let Ok(id) = Uuid::parse_str(&key) {
                held.insert(id);
            }
        }
        Ok(held)
    }

    /// Records the working copy's facts: the index entry always, the checkpoint when the copy
    /// is exactly what the store acknowledged (`acked` lines ending at `stream_seq`).
    async fn record(
        &self,
        root: &StateRoot,
        id: Uuid,
        acked: Option<(u64, u64)>,
    ) -> Result<(), StoreError> {
        let paths = root.session(id);
        let summary = SessionSummary::read(&paths)?;
        // How the copy ends, read off the bytes the summary counted: `sessions` shows it
        // without reading the journal (an unreadable tail leaves the entry without one).
        let ending = turnstile_journal::session_dir::open_read_nofollow(&paths.events)
            .and_then(|file| Ending::read(&file, summary.size))
            .ok();
        let value =
            serde_json::to_vec(&IndexValue::new(summary.clone(), ending)).unwrap_or_default();
        let value = bytes::Bytes::from(value);
        transient::retry("indexing a session", || {
            self.index.put(id.to_string(), value.clone())
        })
        .await
        .map_err(|e| self.remote(format!("indexing session {id}"), e))?;
        if let Some((events, stream_seq)) = acked
            && summary.events == events
            && let Some(bytes) = working_copy::copy_size(root, id)?
            && let Some(sha256) = working_copy::copy_prefix_hash(root, id, bytes).await?
        {
            let checkpoint = StoreCheckpoint {
                events,
                bytes,
                stream_seq,
                sha256,
                folded: None,
            };
            self.put_checkpoint(id, &checkpoint).await?;
        }
        Ok(())
    }
}

impl JournalStore for NatsStore {
    type Attachment = NatsAttachment;

    fn describe(&self) -> String {
        format!("{} stream {}", self.config.url, self.config.stream)
    }

    async fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        Ok(self.list_with_endings().await?.sessions)
    }

    async fn contains(&self, id: Uuid) -> Result<bool, StoreError> {
        Ok(self.last_seq(id).await? > 0)
    }

    async fn export_to<W: Write + Send>(
        &self,
        id: Uuid,
        out: &mut W,
    ) -> Result<Exported, StoreError> {
        let last = self.last_seq(id).await?;
        if last == 0 {
            return Err(StoreError::NotFound {
                store: self.describe(),
                id,
            });
        }
        let mut meter = LineMeter::new(out, max_line_bytes());
        self.stream_into(id, last, &mut meter).await?;
        let (measured, _) = meter
            .finish()
            .map_err(|source| StoreError::Write { source })?;
        Ok(measured)
    }

    async fn import_from<R: Read + Seek + Send>(
        &self,
        id: Uuid,
        journal: &mut R,
    ) -> Result<Imported, StoreError> {
        self.import_with(id, journal, &[]).await
    }

    async fn attach(
        &self,
        id: Uuid,
        root: &StateRoot,
        mode: AttachMode,
    ) -> Result<NatsAttachment, StoreError> {
        let lease = match mode {
            AttachMode::Read => None,
            AttachMode::Create => {
                Some(lease::take(&self.leases, &self.describe(), id, self.lease_ttl, false).await?)
            }
            AttachMode::Resume => {
                Some(lease::take(&self.leases, &self.describe(), id, self.lease_ttl, true).await?)
            }
        };
        // The seal before the journal: a reader without the lease then never holds a seal
        // covering lines its journal lacks (a record is stored after the lines it covers).
        let seal = match mode {
            AttachMode::Create => {
                self.fresh_seal(id).await?;
                StoredSeal::default()
            }
            _ => self.seal(id).await?,
        };
        // Read only once the lease is ours: no other writer appends after this point.
        let last = self.last_seq(id).await?;
        let synced = match mode {
            AttachMode::Create if last > 0 => {
                return Err(StoreError::AlreadyExists {
                    store: self.describe(),
                    id,
                });
            }
            AttachMode::Create => Synced {
                events: 0,
                last_stream_seq: 0,
                fetched: 0,
            },
            _ if last == 0 => {
                return Err(StoreError::NotFound {
                    store: self.describe(),
                    id,
                });
            }
            _ => {
                // The copy needs the covered prefix only, never the folded state.
                let checkpoint = self.checkpoint_entry(id).await?.map(|e| e.checkpoint);
                let synced = working_copy::sync(
                    &self.js.client(),
                    &self.stream,
                    &self.config.journal_subject(id),
                    root,
                    id,
                    last,
                    checkpoint,
                )
                .await?;
                // The writer continues the stored seal, never the copy's own.
                stored_seal::write_copy(root, id, &seal.bytes)?;
                synced
            }
        };
        let sink = match lease {
            Some(mut lease) => Some(NatsSink::start(
                &self.config,
                id,
                synced.events,
                synced.last_stream_seq,
                seal.tail,
                {
                    lease::renew(&self.leases, &self.describe(), id, &mut lease).await?;
                    lease
                },
            )?),
            None => None,
        };
        Ok(NatsAttachment { id, sink, synced })
    }

    async fn detach(&self, attachment: NatsAttachment, root: &StateRoot) -> Result<(), StoreError> {
        let id = attachment.id;
        let Some(sink) = attachment.sink else {
            return Ok(());
        };
        sink.finish();
        let acked = sink.failure().is_none().then(|| sink.acknowledged());
        if root.session(id).events.exists() {
            self.record(root, id, acked).await?;
        }
        Ok(())
    }
}

/// A listing of the store: the sessions newest first and, at the same positions, how each
/// one's journal ended (`None` for an entry written by an earlier build).
#[derive(Debug, Default)]
pub struct StoredListing {
    /// The sessions, newest first.
    pub sessions: Vec<SessionSummary>,
    /// Each session's ending, at its position in `sessions`.
    pub endings: Vec<Option<Ending>>,
}
