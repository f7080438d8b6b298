//! The compacted session listing on a real `nats-server`: a listing through it equals the
//! index itself (the index read key by key, ordered newest first, same times in stream
//! order), after sessions were added, updated and removed past the sequence it covers, after
//! a stale compaction replaced a newer one, while two listers compacted at once, and when the
//! object is damaged or was made from an index that was since made anew; an object in the
//! first line format is read, one in a format this build does not know is left alone.

use crate::common;

use std::collections::HashMap;

use async_nats::jetstream::kv::Operation;
use async_nats::jetstream::object_store::ObjectMetadata;
use futures_util::StreamExt;
use tokio::io::AsyncReadExt;
use turnstile_journal::ending::Ending;
use turnstile_journal::{SessionSummary, StateRoot, Uuid};
use turnstile_store::JournalStore;
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{IndexValue, NatsConfig, NatsStore};

/// A store that compacts after `after` index messages.
async fn store(server: &LocalNats, after: usize) -> NatsStore {
    let mut config = NatsConfig::new(server.url());
    config.listing_compact_after = after;
    NatsStore::open(config).await.unwrap()
}

/// Raw access to the server, as another process has it.
struct Raw {
    js: async_nats::jetstream::Context,
    index: async_nats::jetstream::kv::Store,
}

impl Raw {
    async fn new(server: &LocalNats, store: &NatsStore) -> Raw {
        let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
        let index = js
            .get_key_value(store.config().index_bucket())
            .await
            .unwrap();
        Raw { js, index }
    }

    /// Writes the entry of `id`, updated at minute `minute` (minutes repeat: same times).
    async fn put(&self, id: Uuid, minute: u32, prompt: &str) {
        let summary = SessionSummary {
            id: Some(id),
            cwd: Some("/work/project".into()),
            created: Some("2026-12-01T00:00:00.000Z".into()),
            updated: Some(format!(
                "2026-12-01T{:02}:{:02}:00.000Z",
                minute / 60,
                minute % 60
            )),
            events: u64::from(minute),
            size: 1000,
            first_prompt: Some(prompt.into()),
        };
        self.index
            .put(id.to_string(), serde_json::to_vec(&summary).unwrap().into())
            .await
            .unwrap();
    }

    async fn delete(&self, id: Uuid) {
        self.index.delete(id.to_string()).await.unwrap();
    }

    /// The listing the index itself gives: every key's current entry, newest first, entries
    /// of the same time in stream order (their revisions).
    async fn truth(&self) -> Vec<SessionSummary> {
        let keys: Vec<String> = self
            .index
            .keys()
            .await
            .unwrap()
            .map(|k| k.unwrap())
            .collect()
            .await;
        let mut all = Vec::new();
        for key in keys {
            let Some(entry) = self.index.entry(&key).await.unwrap() else {
                continue;
            };
            if entry.operation != Operation::Put {
                continue;
            }
            let summary: SessionSummary = serde_json::from_slice(&entry.value).unwrap();
            all.push((entry.revision, summary));
        }
        all.sort_by(|(ra, a), (rb, b)| b.updated.cmp(&a.updated).then(ra.cmp(rb)));
        all.into_iter().map(|(_, s)| s).collect()
    }

    async fn objects(&self, store: &NatsStore) -> async_nats::jetstream::object_store::ObjectStore {
        self.js
            .get_object_store(store.config().listing_bucket())
            .await
            .unwrap()
    }

    /// The compacted listing's bytes and metadata.
    async fn object(&self, store: &NatsStore) -> (Vec<u8>, HashMap<String, String>) {
        let objects = self.objects(store).await;
        let mut object = objects.get("sessions").await.unwrap();
        let metadata = object.info.metadata.clone();
        let mut bytes = Vec::new();
        object.read_to_end(&mut bytes).await.unwrap();
        (bytes, metadata)
    }

    /// Writes the compacted listing as a compaction would.
    async fn put_object(&self, store: &NatsStore, bytes: &[u8], metadata: HashMap<String, String>) {
        let meta = ObjectMetadata {
            name: "sessions".into(),
            metadata,
            ..Default::default()
        };
        let mut reader = bytes;
        self.objects(store)
            .await
            .put(meta, &mut reader)
            .await
            .unwrap();
    }

    /// The compacted listing's object id, new at each write.
    async fn nuid(&self, store: &NatsStore) -> String {
        self.objects(store)
            .await
            .info("sessions")
            .await
            .unwrap()
            .nuid
    }

    /// The last sequence of the index stream.
    async fn last_seq(&self) -> u64 {
        let mut stream = self.index.stream.clone();
        stream.info().await.unwrap().state.last_sequence
    }

    /// How many chunk subjects the listing bucket holds.
    async fn chunk_subjects(&self, store: &NatsStore) -> usize {
        let name = store.config().listing_bucket();
        let stream = self.js.get_stream(format!("OBJ_{name}")).await.unwrap();
        let subjects: Vec<_> = stream
            .info_with_subjects(format!("$O.{name}.C.>"))
            .await
            .unwrap()
            .collect()
            .await;
        subjects.len()
    }
}

fn covers(metadata: &HashMap<String, String>) -> u64 {
    metadata["covers"].parse().unwrap()
}

#[test]
fn a_listing_through_the_compacted_object_equals_the_index() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let plain = store(&server, usize::MAX).await;
        let compacting = store(&server, 1).await;
        let raw = Raw::new(&server, &plain).await;
        let ids: Vec<Uuid> = (0..300).map(|_| Uuid::new_v4()).collect();
        // Minutes repeat every 50 sessions: many entries of the same time.
        for (n, id) in ids.iter().enumerate() {
            raw.put(*id, (n % 50) as u32, &format!("prompt {n}")).await;
        }
        let before = raw.truth().await;
        assert_eq!(before.len(), 300);
        assert_eq!(plain.list().await.unwrap(), before, "the index read whole");
        assert_eq!(
            compacting.list().await.unwrap(),
            before,
            "the listing that compacts"
        );
        let (_, metadata) = raw.object(&plain).await;
        assert_eq!(covers(&metadata), raw.last_seq().await);
        assert_eq!(metadata["entries"], "300");
        // Now read through the object, with nothing after it.
        assert_eq!(plain.list().await.unwrap(), before);
        // And it is the object that is read: an entry changed in it alone is listed so.
        let (bytes, metadata) = raw.object(&plain).await;
        let text = String::from_utf8(bytes.clone()).unwrap();
        // The first prompt is followed by the ending and the model, both empty here.
        assert_eq!(text.matches("\tprompt 7\t\t\n").count(), 1);
        let marked = text.replace("\tprompt 7\t\t\n", "\tonly in the object\t\t\n");
        raw.put_object(&plain, marked.as_bytes(), metadata.clone())
            .await;
        let listed = plain.list().await.unwrap();
        assert_eq!(listed.len(), 300);
        assert!(
            listed
                .iter()
                .any(|s| s.first_prompt.as_deref() == Some("only in the object"))
        );
        raw.put_object(&plain, &bytes, metadata.clone()).await;

        // Past the sequence it covers: sessions added, updated (same time as others), removed.
        for n in 0..20 {
            raw.put(Uuid::new_v4(), 25, &format!("new {n}")).await;
        }
        for id in &ids[..30] {
            raw.put(*id, 25, "updated").await;
        }
        for id in &ids[100..140] {
            raw.delete(*id).await;
        }
        let after = raw.truth().await;
        assert_eq!(after.len(), 280);
        assert_eq!(plain.list().await.unwrap(), after, "merged, not compacted");
        assert_eq!(covers(&raw.object(&plain).await.1), covers(&metadata));
        assert_eq!(
            compacting.list().await.unwrap(),
            after,
            "merged and compacted"
        );
        assert_eq!(covers(&raw.object(&plain).await.1), raw.last_seq().await);
        assert_eq!(plain.list().await.unwrap(), after, "through the new object");
        assert_eq!(
            raw.chunk_subjects(&plain).await,
            1,
            "the old chunks are purged"
        );
    });
}

#[test]
fn a_stale_compaction_written_last_hides_nothing_and_resurrects_nothing() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = store(&server, 1).await;
        let raw = Raw::new(&server, &store).await;
        let ids: Vec<Uuid> = (0..10).map(|_| Uuid::new_v4()).collect();
        for (n, id) in ids.iter().enumerate() {
            raw.put(*id, n as u32, "first").await;
        }
        store.list().await.unwrap();
        let (stale, stale_meta) = raw.object(&store).await;

        // After the stale object's sequence: one added, one removed, one updated.
        let added = Uuid::new_v4();
        raw.put(added, 100, "added").await;
        raw.delete(ids[3]).await;
        raw.put(ids[5], 200, "updated").await;
        let truth = raw.truth().await;
        assert_eq!(store.list().await.unwrap(), truth);
        assert!(covers(&raw.object(&store).await.1) > covers(&stale_meta));

        // A compaction from before those writes finishes last, over the newer one.
        raw.put_object(&store, &stale, stale_meta.clone()).await;
        assert_eq!(covers(&raw.object(&store).await.1), covers(&stale_meta));
        let listed = store.list().await.unwrap();
        assert_eq!(listed, truth);
        assert!(
            listed.iter().any(|s| s.id == Some(added)),
            "the added session is listed"
        );
        assert!(
            listed.iter().all(|s| s.id != Some(ids[3])),
            "the removed one is not"
        );
        assert_eq!(listed[0].first_prompt.as_deref(), Some("updated"));
    });
}

#[test]
fn two_listers_compacting_at_once_while_sessions_change_agree_with_the_index() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let a = store(&server, 1).await;
        let b = store(&server, 1).await;
        let raw = Raw::new(&server, &a).await;
        let mut ids: Vec<Uuid> = (0..200).map(|_| Uuid::new_v4()).collect();
        for (n, id) in ids.iter().enumerate() {
            raw.put(*id, (n % 30) as u32, "first").await;
        }
        for round in 0..12u32 {
            // Writes go on while both list and compact.
            let writes = async {
                for n in 0..15u32 {
                    let id = Uuid::new_v4();
                    raw.put(id, round * 20 + n, "added").await;
                    ids.push(id);
                    let gone = ids.swap_remove(((round * 7 + n * 13) as usize) % ids.len());
                    raw.delete(gone).await;
                    raw.put(ids[(n as usize * 11) % ids.len()], 700 + n, "updated")
                        .await;
                }
            };
            let (listed_a, listed_b, ()) = tokio::join!(a.list(), b.list(), writes);
            assert!(listed_a.unwrap().len() >= 180);
            assert!(listed_b.unwrap().len() >= 180);
            // Once the writes stopped, each sees the index as it is, whichever object won.
            let truth = raw.truth().await;
            let (listed_a, listed_b) = tokio::join!(a.list(), b.list());
            assert_eq!(listed_a.unwrap(), truth, "round {round}, lister a");
            assert_eq!(listed_b.unwrap(), truth, "round {round}, lister b");
        }
        assert!(
            raw.chunk_subjects(&a).await <= 1,
            "no chunks of a lost compaction stay"
        );
        assert_eq!(a.list().await.unwrap(), raw.truth().await);
    });
}

#[test]
fn a_damaged_object_or_one_of_another_index_is_not_read() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = store(&server, 1).await;
        let raw = Raw::new(&server, &store).await;
        for n in 0..5 {
            raw.put(Uuid::new_v4(), n, "first").await;
        }
        store.list().await.unwrap();
        let (bytes, metadata) = raw.object(&store).await;

        // Cut in the middle of a line, then not lines of entries at all.
        raw.put_object(&store, &bytes[..bytes.len() / 2], metadata.clone())
            .await;
        assert_eq!(store.list().await.unwrap(), raw.truth().await);
        raw.put_object(&store, b"garbage\n", metadata.clone()).await;
        assert_eq!(store.list().await.unwrap(), raw.truth().await);

        // The index deleted and made anew, with more messages than the object covers: its
        // sequences start over, so the object of the old one must not be merged with it.
        raw.put_object(&store, &bytes, metadata.clone()).await;
        raw.js
            .delete_stream(format!("KV_{}", store.config().index_bucket()))
            .await
            .unwrap();
        let store = self::store(&server, usize::MAX).await;
        let raw = Raw::new(&server, &store).await;
        for n in 0..8 {
            raw.put(Uuid::new_v4(), 100 + n, "second").await;
        }
        assert!(raw.last_seq().await > covers(&metadata));
        let listed = store.list().await.unwrap();
        assert_eq!(listed, raw.truth().await);
        assert!(
            listed
                .iter()
                .all(|s| s.first_prompt.as_deref() == Some("second"))
        );
    });
}

#[test]
fn objects_in_formats_1_and_2_are_read_then_written_as_3_and_an_unknown_one_is_left_alone() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = store(&server, 1).await;
        let raw = Raw::new(&server, &store).await;
        for n in 0..5 {
            raw.put(Uuid::new_v4(), n, "in the index").await;
        }
        let truth = raw.truth().await;
        assert_eq!(store.list().await.unwrap(), truth);
        let (_, metadata) = raw.object(&store).await;
        assert_eq!(metadata["format"], "3", "{metadata:?}");
        assert_eq!(covers(&metadata), raw.last_seq().await);

        // The same entries as format 1 (key, tab, entry as JSON; no `format`), with another
        // prompt: the listing shows the object's prompt, so it read the object.
        let from_object: Vec<SessionSummary> = truth
            .iter()
            .map(|s| SessionSummary {
                first_prompt: Some("in the object".into()),
                ..s.clone()
            })
            .collect();
        let mut old = Vec::new();
        for s in &from_object {
            old.extend_from_slice(format!("{}\t", s.id.unwrap()).as_bytes());
            serde_json::to_writer(&mut old, s).unwrap();
            old.push(b'\n');
        }
        let mut first = metadata.clone();
        first.remove("format");
        raw.put_object(&store, &old, first.clone()).await;
        assert_eq!(store.list().await.unwrap(), from_object);
        // An object of an earlier format is written again in this build's, once.
        let (_, metadata) = raw.object(&store).await;
        assert_eq!(metadata["format"], "3", "{metadata:?}");
        let written = raw.nuid(&store).await;
        assert_eq!(store.list().await.unwrap(), from_object);
        assert_eq!(raw.nuid(&store).await, written, "not written again");

        // Format 2: the summary's fields in a fixed order, no ending and no model.
        let from_two: Vec<SessionSummary> = truth
            .iter()
            .map(|s| SessionSummary {
                first_prompt: Some("in the format-2 object".into()),
                ..s.clone()
            })
            .collect();
        let mut two = Vec::new();
        for s in &from_two {
            let text = |t: &Option<String>| t.clone().unwrap_or_default();
            two.extend_from_slice(
                format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                    s.id.unwrap(),
                    s.id.unwrap(),
                    text(&s.created),
                    text(&s.updated),
                    s.events,
                    s.size,
                    text(&s.cwd),
                    text(&s.first_prompt)
                )
                .as_bytes(),
            );
        }
        let mut second = metadata.clone();
        second.insert("format".into(), "2".into());
        raw.put_object(&store, &two, second).await;
        let listing = store.list_with_endings().await.unwrap();
        assert_eq!(listing.sessions, from_two);
        assert!(listing.endings.iter().all(Option::is_none));
        let (bytes, metadata) = raw.object(&store).await;
        assert_eq!(metadata["format"], "3", "{metadata:?}");
        assert_eq!(
            String::from_utf8(bytes)
                .unwrap()
                .matches("\tin the format-2 object\t\t\n")
                .count(),
            from_two.len(),
            "each line with an empty ending and model"
        );
        let written = raw.nuid(&store).await;
        assert_eq!(store.list().await.unwrap(), from_two);
        assert_eq!(raw.nuid(&store).await, written, "not written again");

        // A format this build does not know: the index is read instead, and the object is
        // left as it is for the build that wrote it.
        let mut unknown = first;
        unknown.insert("format".into(), "99".into());
        raw.put_object(&store, b"whatever format 99 is\n", unknown)
            .await;
        assert_eq!(store.list().await.unwrap(), truth);
        let (bytes, metadata) = raw.object(&store).await;
        assert_eq!(
            (bytes.as_slice(), metadata["format"].as_str()),
            (&b"whatever format 99 is\n"[..], "99")
        );
    });
}

#[test]
fn endings_are_listed_from_the_index_and_the_object_and_older_entries_list_without_one() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let plain = store(&server, usize::MAX).await;
        let compacting = store(&server, 1).await;
        let raw = Raw::new(&server, &plain).await;
        let mut wanted = HashMap::new();
        for n in 0..40u32 {
            let id = Uuid::new_v4();
            // Every fourth as an earlier build wrote it (no ending); the rest shut down
            // cleanly, after an error, or left open, some without a model.
            raw.put(id, n, &format!("prompt {n}")).await;
            let ending = (n % 4 != 0).then(|| Ending {
                shut_down: n % 4 != 3,
                error_since_prompt: n % 4 == 2,
                model: (n % 5 != 0).then(|| format!("model-{n}")),
            });
            if ending.is_some() {
                let summary: SessionSummary =
                    serde_json::from_slice(&raw.index.get(id.to_string()).await.unwrap().unwrap())
                        .unwrap();
                let value = IndexValue::new(summary, ending.clone());
                raw.index
                    .put(id.to_string(), serde_json::to_vec(&value).unwrap().into())
                    .await
                    .unwrap();
            }
            wanted.insert(id, ending);
        }
        let truth = raw.truth().await;
        for (how, listing) in [
            (
                "the index read whole",
                plain.list_with_endings().await.unwrap(),
            ),
            (
                "the listing that compacts",
                compacting.list_with_endings().await.unwrap(),
            ),
            (
                "through the object",
                plain.list_with_endings().await.unwrap(),
            ),
        ] {
            assert_eq!(listing.sessions, truth, "{how}");
            assert_eq!(listing.endings.len(), truth.len(), "{how}");
            for (s, ending) in listing.sessions.iter().zip(&listing.endings) {
                assert_eq!(ending, &wanted[&s.id.unwrap()], "{how}: {:?}", s.id);
            }
        }
        // The summary alone reads entries with an ending too.
        let some = truth[0].id.unwrap();
        assert_eq!(plain.summary(some).await.unwrap().as_ref(), Some(&truth[0]));
    });
}

#[test]
fn a_session_whose_lease_is_held_is_among_the_leased_ones() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    let copies = tempfile::tempdir().unwrap();
    common::runtime().block_on(async {
        let store = store(&server, usize::MAX).await;
        assert!(store.leased().await.unwrap().is_empty());
        let (id, attachment) = common::create_session(&store, copies.path()).await;
        assert!(store.leased().await.unwrap().contains(&id));
        use turnstile_store::JournalStore;
        store
            .detach(attachment, &StateRoot::new(copies.path()))
            .await
            .unwrap();
        assert!(
            !store.leased().await.unwrap().contains(&id),
            "given up at detach"
        );
    });
}
