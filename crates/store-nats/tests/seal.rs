//! The journal's seal on the JetStream store, against a real `nats-server` of the test's own
//! (its port and directory): the writer's records reach the seal subject after the lines they
//! cover and verify against the stored journal; a record after another writer's is refused and
//! stops the writer (at its next record: acknowledgements of records are read late), as a line
//! after another writer's is.

use crate::common;

use std::time::Duration;

use turnstile_journal::{
    Event, EventType, JournalSink, JournalWriter, SinkErrorKind, StateRoot, Uuid, WriterOptions,
};
use turnstile_seal::{Finding, verify};
use turnstile_store::{AttachMode, Attachment, JournalStore};
use turnstile_store_nats::NatsStore;
use turnstile_store_nats::local_server::LocalNats;

const TTL: Duration = Duration::from_secs(20);

fn info(n: usize, last: Option<Uuid>) -> Event {
    let data =
        serde_json::value::RawValue::from_string(format!("{{\"message\":\"line {n}\"}}")).unwrap();
    Event::with_raw_data(EventType::new("session.info"), data, last)
}

/// Appends `turns` turns of 3 lines through a writer attached to `store`, from `last`.
fn write_turns(writer: &JournalWriter, turns: usize, mut last: Option<Uuid>) -> Option<Uuid> {
    for t in 0..turns {
        for n in 0..3 {
            let ev = info(t * 3 + n, last);
            last = Some(ev.id);
            writer.append(&ev).unwrap();
        }
        writer.turn_boundary().unwrap();
    }
    last
}

/// Opens session `id` on `store` from host `root` (`mode`), appends `turns` turns through a
/// sealed writer from `last`, closes and detaches.
async fn sealed_turns(
    store: &NatsStore,
    root: &StateRoot,
    id: Uuid,
    mode: AttachMode,
    turns: usize,
    last: Option<Uuid>,
) -> Option<Uuid> {
    let attachment = store.attach(id, root, mode).await.unwrap();
    let paths = match mode {
        AttachMode::Create => root.create_session(id).unwrap(),
        _ => root.session(id),
    };
    let options = WriterOptions {
        sink: attachment.sink(),
        sealing: turnstile_journal::Sealing::Sealed,
        ..Default::default()
    };
    let last = tokio::task::block_in_place(|| {
        let (writer, _) = JournalWriter::open(&paths, options).unwrap();
        let last = write_turns(&writer, turns, last);
        writer.close().unwrap();
        last
    });
    store.detach(attachment, root).await.unwrap();
    last
}

#[test]
fn a_journal_written_on_the_store_verifies_against_the_stored_seal_across_a_resume() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = NatsStore::open(common::config_with_lease(&server, TTL))
            .await
            .unwrap();
        let host_a = tempfile::tempdir().unwrap();
        let root_a = StateRoot::new(host_a.path());
        let id = Uuid::new_v4();
        let last = sealed_turns(&store, &root_a, id, AttachMode::Create, 2, None).await;
        // Another host, with no copy of its own: the stored seal is continued.
        let host_b = tempfile::tempdir().unwrap();
        let root_b = StateRoot::new(host_b.path());
        sealed_turns(&store, &root_b, id, AttachMode::Resume, 1, last).await;

        let seal = store.seal(id).await.unwrap();
        let journal = store.export(id).await.unwrap();
        let report = verify(&journal[..], &seal.bytes[..], None).unwrap();
        assert_eq!(report.finding, Finding::Intact, "{report:?}");
        assert_eq!(report.sealed, 9);
        assert_eq!(report.checkpoints, 3, "one a turn: {report:?}");
        assert!(report.adopted.is_empty(), "{report:?}");
        // Host b's working copy holds the same seal.
        let copy = std::fs::read(root_b.session(id).dir.join("events.jsonl.seal")).unwrap();
        assert_eq!(copy, seal.bytes);
    });
}

#[test]
fn a_seal_record_after_another_writers_is_refused_and_stops_the_writer() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = NatsStore::open(common::config_with_lease(&server, TTL))
            .await
            .unwrap();
        let copies = tempfile::tempdir().unwrap();
        let (id, attachment) = common::create_session(&store, copies.path()).await;
        let sink = attachment.nats_sink().unwrap();
        sink.send(1, Uuid::new_v4(), b"{\"n\":1}\n").unwrap();
        sink.seal(b"{\"kind\":\"begin\",\"format\":\"turnstile-seal/2\"}\n")
            .unwrap();
        // Published in order: line 2 acknowledged means the record before it was handled.
        sink.send(2, Uuid::new_v4(), b"{\"n\":2}\n").unwrap();
        sink.wait_async(2).await.unwrap();
        assert_eq!(store.seal(id).await.unwrap().tail.records, 1);

        // Another writer's record on the seal subject (as a writer that took the session over
        // would append).
        let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
        let theirs = b"{\"kind\":\"theirs\"}\n";
        js.publish(store.config().seal_subject(id), theirs.to_vec().into())
            .await
            .unwrap()
            .await
            .unwrap();
        // The refusal of a record is read when the next one goes out (or when the writer
        // stops): the record is not stored, and nothing is sent after the next one.
        sink.seal(b"{\"kind\":\"ours\"}\n").unwrap();
        let _ = sink.seal(b"{\"kind\":\"ours, later\"}\n");
        // Refused when sent, or, sent before the record was tried, never acknowledged.
        let refused = match sink.send(3, Uuid::new_v4(), b"{\"n\":3}\n") {
            Err(e) => e,
            Ok(()) => sink.wait_async(3).await.unwrap_err(),
        };
        assert_eq!(refused.kind, SinkErrorKind::Fenced, "{refused}");
        assert!(refused.to_string().contains("seal"), "{refused}");
        assert!(sink.send(4, Uuid::new_v4(), b"{\"n\":4}\n").is_err());
        sink.finish();
        let seal = store.seal(id).await.unwrap();
        assert_eq!(seal.tail.records, 2);
        assert!(
            seal.bytes.ends_with(theirs),
            "no record of ours after theirs"
        );
        assert_eq!(
            store.export(id).await.unwrap(),
            b"{\"n\":1}\n{\"n\":2}\n".to_vec(),
            "nothing of ours after the refused record"
        );
    });
}
