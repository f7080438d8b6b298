//! One journal test suite, run against both stores: the file store of a state directory and
//! the JetStream store on a real `nats-server` started for the test (its own port and
//! directory). Each case is written once over `JournalStore`.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use turnstile_journal::{StateRoot, Uuid};
use turnstile_loop::{SendOptions, SessionConfig, SessionHandle, SessionParts};
use turnstile_permissions::PermissionPolicy;
use turnstile_providers::{OpenAiConfig, OpenAiProvider};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_store::{AttachMode, Attachment, FileStore, Imported, JournalStore, StoreError};
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore, StoreCheckpoint};
use turnstile_tools::ToolRegistry;

/// Where a store keeps the working copy of a session run "on host `n`": the file store has
/// one place only, the JetStream store any local directory.
trait Hosts {
    fn root(&self, host: usize) -> StateRoot;
}

struct FileHosts(StateRoot);
impl Hosts for FileHosts {
    fn root(&self, _host: usize) -> StateRoot {
        self.0.clone()
    }
}

struct NatsHosts(tempfile::TempDir);
impl Hosts for NatsHosts {
    fn root(&self, host: usize) -> StateRoot {
        StateRoot::new(self.0.path().join(format!("host{host}")))
    }
}

fn parts(server: &ScriptedServer, work: &std::path::Path, sink: &impl Attachment) -> SessionParts {
    let mut oc = OpenAiConfig::new(server.url(), "test-model");
    oc.retry.base_delay = Duration::from_millis(5);
    let mut config = SessionConfig::new(work, "test-model");
    config.permissions = PermissionPolicy::from_flags(true, &[], &[]).unwrap();
    config.journal_sink = sink.sink();
    SessionParts {
        config,
        provider: Arc::new(OpenAiProvider::new(oc).unwrap()),
        tools: Arc::new(ToolRegistry::builtin(false)),
        hooks: None,
        external_tools: None,
        permission_asker: None,
        section_transformer: None,
    }
}

fn sample_journal() -> (Uuid, Vec<u8>) {
    common::journal(20)
}

async fn import_export_round_trip(store: &impl JournalStore) {
    let (id, bytes) = sample_journal();
    assert!(!store.contains(id).await.unwrap());
    assert_eq!(store.import(id, &bytes).await.unwrap(), Imported::Created);
    assert!(store.contains(id).await.unwrap());
    assert_eq!(
        store.export(id).await.unwrap(),
        bytes,
        "export is byte-identical"
    );
    let listed = store.list().await.unwrap();
    let entry = listed.iter().find(|s| s.id == Some(id)).expect("listed");
    assert_eq!((entry.events, entry.size), (20, bytes.len() as u64));
    // The same bytes again change nothing; other bytes are refused and change nothing.
    assert_eq!(
        store.import(id, &bytes).await.unwrap(),
        Imported::AlreadyPresent
    );
    let other = &bytes[..bytes.len() / 2];
    let cut = other.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let err = store.import(id, &bytes[..cut]).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert!(err.to_string().contains(&id.to_string()), "{err}");
    assert_eq!(store.export(id).await.unwrap(), bytes);
}

/// The same journal imported under two session ids and a fork of it sharing its first 8
/// lines, one right after the other (well within the stream's 2-minute duplicate window):
/// all three are stored whole and export byte for byte.
async fn copies_and_forks_are_stored_apart(store: &impl JournalStore) {
    let (_, bytes) = sample_journal();
    let fork = common::fork(&bytes, 8, 5);
    fn first_lines(b: &[u8]) -> Vec<&[u8]> {
        b.split_inclusive(|&c| c == b'\n').take(8).collect()
    }
    assert_eq!(
        first_lines(&fork),
        first_lines(&bytes),
        "the fork shares 8 lines"
    );
    let (a, b, f) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    assert_eq!(store.import(a, &bytes).await.unwrap(), Imported::Created);
    assert_eq!(store.import(b, &bytes).await.unwrap(), Imported::Created);
    assert_eq!(store.import(f, &fork).await.unwrap(), Imported::Created);
    assert_eq!(store.export(a).await.unwrap(), bytes);
    assert_eq!(store.export(b).await.unwrap(), bytes);
    assert_eq!(store.export(f).await.unwrap(), fork);
    let listed = store.list().await.unwrap();
    for (id, events) in [(a, 20), (b, 20), (f, 13)] {
        let entry = listed.iter().find(|s| s.id == Some(id)).expect("listed");
        assert_eq!(entry.events, events, "session {id}");
    }
}

/// A line the stream drops as a duplicate (here: a message with the same id stored on
/// another subject beforehand) leaves the import short: it fails naming both counts, and
/// never says it imported.
async fn a_short_import_fails_naming_the_count(store: &NatsStore) {
    let (_, bytes) = sample_journal();
    let id = Uuid::new_v4();
    let last_line = bytes[..bytes.len() - 1]
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap();
    let last_event = turnstile_journal::Event::from_line(last_line).unwrap().id;
    let client = async_nats::connect(store.config().url.as_str())
        .await
        .unwrap();
    let js = async_nats::jetstream::new(client);
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", format!("{id}:{last_event}").as_str());
    js.publish_with_headers(
        store.config().journal_subject(Uuid::new_v4()),
        headers,
        "{}\n".into(),
    )
    .await
    .unwrap()
    .await
    .unwrap();
    let err = store.import(id, &bytes).await.unwrap_err();
    match &err {
        StoreError::ShortImport { read, stored, .. } => assert_eq!((*read, *stored), (20, 19)),
        other => panic!("{other}"),
    }
    assert!(
        err.to_string()
            .contains("read 20 lines but the store holds 19"),
        "{err}"
    );
}

async fn bad_journals_are_refused(store: &impl JournalStore) {
    let (id, bytes) = sample_journal();
    let torn = &bytes[..bytes.len() - 5];
    let err = store.import(id, torn).await.unwrap_err();
    assert!(
        matches!(err, StoreError::BadJournal { line: 20, .. }),
        "{err}"
    );
    assert!(!store.contains(id).await.unwrap(), "nothing stored");
    let err = store.export(Uuid::new_v4()).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
}

async fn engine_session_then_resume_elsewhere(store: &impl JournalStore, hosts: &impl Hosts) {
    let server = ScriptedServer::start(
        Script::new()
            .tool_call("bash", json!({"command": "echo hi", "description": "say"}))
            .text("first done")
            .text("second done"),
    )
    .await
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let id = Uuid::new_v4();
    let first = hosts.root(1);
    let attachment = store.attach(id, &first, AttachMode::Create).await.unwrap();
    let session =
        SessionHandle::create(&first, Some(id), parts(&server, work.path(), &attachment)).unwrap();
    session
        .send_and_wait("one", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    drop(session);
    store.detach(attachment, &first).await.unwrap();
    let copy = std::fs::read(first.session(id).events).unwrap();
    assert_eq!(store.export(id).await.unwrap(), copy);
    // A new session under a taken id is refused.
    assert!(store.attach(id, &first, AttachMode::Create).await.is_err());

    let second = hosts.root(2);
    let attachment = store.attach(id, &second, AttachMode::Resume).await.unwrap();
    let (session, report) =
        SessionHandle::resume(&second, id, parts(&server, work.path(), &attachment)).unwrap();
    assert!(report.events_before > 5);
    session
        .send_and_wait("two", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    drop(session);
    store.detach(attachment, &second).await.unwrap();
    let exported = store.export(id).await.unwrap();
    assert_eq!(exported, std::fs::read(second.session(id).events).unwrap());
    assert!(
        exported.starts_with(&copy),
        "the resume appended after the first run's lines"
    );
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("events.jsonl");
    std::fs::write(&path, &exported).unwrap();
    let report = turnstile_replay::audit_file(&path).unwrap();
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.turns, 3);
    let listed = store.list().await.unwrap();
    let entry = listed.iter().find(|s| s.id == Some(id)).unwrap();
    assert_eq!(entry.size, exported.len() as u64);
    assert_eq!(entry.first_prompt.as_deref(), Some("one"));
}

async fn moves_between_stores(a: &impl JournalStore, b: &impl JournalStore) {
    let (id, bytes) = sample_journal();
    a.import(id, &bytes).await.unwrap();
    b.import(id, &a.export(id).await.unwrap()).await.unwrap();
    let back = tempfile::tempdir().unwrap();
    let c = FileStore::new(StateRoot::new(back.path()));
    c.import(id, &b.export(id).await.unwrap()).await.unwrap();
    assert_eq!(c.export(id).await.unwrap(), bytes, "not a byte changed");
}

/// `summary` reads the key of one session: the same entry the listing has, nothing for an
/// id the index does not know.
async fn one_index_entry_is_read_without_the_others(store: &NatsStore) {
    let (id, bytes) = sample_journal();
    store.import(id, &bytes).await.unwrap();
    let listed = store.list().await.unwrap();
    let entry = listed.iter().find(|s| s.id == Some(id)).unwrap();
    let one = store.summary(id).await.unwrap().expect("indexed");
    assert_eq!(
        serde_json::to_value(&one).unwrap(),
        serde_json::to_value(entry).unwrap()
    );
    assert_eq!(one.size, bytes.len() as u64);
    assert!(store.summary(Uuid::new_v4()).await.unwrap().is_none());
}

/// A checkpoint entry never goes back: an older one put after a newer is refused, one of the
/// same point replaces it (its folded state added), and of hosts writing at once the one
/// that covers most stands.
async fn checkpoint_entries_only_move_forward(store: &NatsStore) {
    let id = Uuid::new_v4();
    let entry = |stream_seq: u64| StoreCheckpoint {
        events: stream_seq,
        bytes: stream_seq * 100,
        stream_seq,
        sha256: format!("{stream_seq:064x}"),
        folded: None,
    };
    assert!(store.put_checkpoint(id, &entry(10)).await.unwrap());
    assert!(!store.put_checkpoint(id, &entry(5)).await.unwrap());
    assert_eq!(store.checkpoint(id).await.unwrap().unwrap().stream_seq, 10);
    let folded = StoreCheckpoint {
        folded: Some(json!({"state": 1})),
        ..entry(10)
    };
    assert!(store.put_checkpoint(id, &folded).await.unwrap());
    assert_eq!(store.checkpoint(id).await.unwrap().unwrap(), folded);

    let racing = Uuid::new_v4();
    let writes = (1..=8).map(|seq| {
        let e = entry(seq * 10);
        async move { store.put_checkpoint(racing, &e).await.unwrap() }
    });
    futures_util::future::join_all(writes).await;
    assert_eq!(
        store.checkpoint(racing).await.unwrap().unwrap().stream_seq,
        80
    );
}

/// A folded state that makes the entry larger than one message is kept in the state bucket
/// and read back whole; whatever happens to it behind the entry (replaced, deleted, an entry
/// naming more than is read back) leaves the checkpoint without a state, never with another.
async fn folded_states_over_one_message_go_to_the_state_bucket(store: &NatsStore) {
    let id = Uuid::new_v4();
    let state = |seq: u64, fill: &str| json!({"seq": seq, "messages": [fill.repeat(700_000), fill.repeat(600_000)]});
    let entry = |seq: u64, fill: &str| StoreCheckpoint {
        events: seq,
        bytes: seq * 100,
        stream_seq: seq,
        sha256: format!("{seq:064x}"),
        folded: Some(state(seq, fill)),
    };
    let first = entry(10, "a");
    assert!(serde_json::to_vec(&first).unwrap().len() > store.max_value_bytes());
    assert!(store.put_checkpoint(id, &first).await.unwrap());
    let raw = store.checkpoint_entry(id).await.unwrap().unwrap();
    assert!(raw.checkpoint.folded.is_none(), "the entry itself is small");
    let object = raw
        .folded_object
        .clone()
        .expect("the entry names the kept state");
    assert_eq!(
        object.bytes,
        serde_json::to_vec(&first.folded).unwrap().len() as u64
    );
    assert_eq!(store.checkpoint(id).await.unwrap().unwrap(), first);

    // A later state replaces it; an older one is refused before the kept state is touched.
    let second = entry(20, "b");
    assert!(store.put_checkpoint(id, &second).await.unwrap());
    assert!(!store.put_checkpoint(id, &entry(15, "c")).await.unwrap());
    assert_eq!(store.checkpoint(id).await.unwrap().unwrap(), second);
    // A small state at the same point goes inline again.
    let small = StoreCheckpoint {
        folded: Some(json!({"seq": 20})),
        ..entry(20, "")
    };
    assert!(store.put_checkpoint(id, &small).await.unwrap());
    let raw = store.checkpoint_entry(id).await.unwrap().unwrap();
    assert!(raw.folded_object.is_none() && raw.checkpoint.folded.is_some());
    assert!(store.put_checkpoint(id, &second).await.unwrap());

    // Damage behind the entry, written with the client's own object store.
    let js = async_nats::jetstream::new(async_nats::connect(&store.config().url).await.unwrap());
    let bucket = js
        .get_object_store(store.config().state_bucket())
        .await
        .unwrap();
    let without_state = || StoreCheckpoint {
        folded: None,
        ..second.clone()
    };
    let other = serde_json::to_vec(&entry(20, "d").folded).unwrap();
    bucket
        .put(id.to_string().as_str(), &mut other.as_slice())
        .await
        .unwrap();
    assert_eq!(
        store.checkpoint(id).await.unwrap().unwrap(),
        without_state(),
        "a state of the same size written by someone else is not taken"
    );
    bucket.delete(id.to_string()).await.unwrap();
    assert_eq!(
        store.checkpoint(id).await.unwrap().unwrap(),
        without_state(),
        "a deleted state"
    );
    let kv = js
        .get_key_value(store.config().checkpoint_bucket())
        .await
        .unwrap();
    let mut naming_too_much = store.checkpoint_entry(id).await.unwrap().unwrap();
    naming_too_much.folded_object.as_mut().unwrap().bytes =
        turnstile_store_nats::MAX_STATE_BYTES + 1;
    kv.put(
        id.to_string(),
        serde_json::to_vec(&naming_too_much).unwrap().into(),
    )
    .await
    .unwrap();
    assert_eq!(
        store.checkpoint(id).await.unwrap().unwrap(),
        without_state(),
        "an entry naming a state over the bound"
    );
}

struct Nats {
    _server: LocalNats,
    _data: tempfile::TempDir,
    store: NatsStore,
}

async fn nats() -> Nats {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    let store = NatsStore::open(NatsConfig::new(server.url()))
        .await
        .unwrap();
    Nats {
        _server: server,
        _data: data,
        store,
    }
}

fn file_store() -> (tempfile::TempDir, FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(StateRoot::new(dir.path().join("state")));
    (dir, store)
}

#[test]
fn file_store_passes_the_suite() {
    common::runtime().block_on(async {
        let (_dir, store) = file_store();
        import_export_round_trip(&store).await;
        copies_and_forks_are_stored_apart(&store).await;
        bad_journals_are_refused(&store).await;
        engine_session_then_resume_elsewhere(&store, &FileHosts(store.root().clone())).await;
    });
}

#[test]
fn jetstream_store_passes_the_suite() {
    common::runtime().block_on(async {
        let n = nats().await;
        import_export_round_trip(&n.store).await;
        copies_and_forks_are_stored_apart(&n.store).await;
        a_short_import_fails_naming_the_count(&n.store).await;
        bad_journals_are_refused(&n.store).await;
        engine_session_then_resume_elsewhere(&n.store, &NatsHosts(tempfile::tempdir().unwrap()))
            .await;
        one_index_entry_is_read_without_the_others(&n.store).await;
        checkpoint_entries_only_move_forward(&n.store).await;
        folded_states_over_one_message_go_to_the_state_bucket(&n.store).await;
    });
}

#[test]
fn sessions_move_between_stores_without_a_byte_changed() {
    common::runtime().block_on(async {
        let n = nats().await;
        let (_dir, file) = file_store();
        moves_between_stores(&file, &n.store).await;
        moves_between_stores(&n.store, &file).await;
    });
}

#[test]
fn a_stream_the_server_refuses_is_reported_with_its_reason() {
    common::runtime().block_on(async {
        let data = tempfile::tempdir().unwrap();
        let server = LocalNats::start(data.path()).unwrap();
        // Another stream already captures the journal subjects: creating ours is refused for
        // good (no election to wait out), and the server's reason is what the user reads.
        let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "SQUATTER".into(),
            subjects: vec!["turnstile.journal.*".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        let err = NatsStore::open(NatsConfig::new(server.url()))
            .await
            .unwrap_err();
        match &err {
            StoreError::Remote { what, reason, .. } => {
                assert_eq!(what, "opening the journal stream");
                assert!(
                    reason.contains("10065"),
                    "the server's overlap code: {reason}"
                );
            }
            other => panic!("{other}"),
        }
    });
}
