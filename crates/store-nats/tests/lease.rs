//! The writer's lease against a real `nats-server` (its own port and directory, a 2 s lease):
//! - a publish retried for longer than several leases (the journal stream gone, as while a
//!   cluster elects its leader) delays the line and never stops the writer, because the lease
//!   is renewed on its own timer meanwhile;
//! - a writer whose renewals go unanswered for the whole TTL stops: the next line is refused
//!   as "lease lapsed", and nothing of it reaches the store.

use crate::common;

use std::time::{Duration, Instant};

use turnstile_journal::{JournalSink, SinkErrorKind, Uuid};
use turnstile_store::JournalStore;
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

const TTL: Duration = Duration::from_secs(2);

fn config(server: &LocalNats) -> NatsConfig {
    common::config_with_lease(server, TTL)
}

#[test]
fn a_publish_retried_past_several_leases_delays_the_line_and_never_stops_the_writer() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = NatsStore::open(config(&server)).await.unwrap();
        let copies = tempfile::tempdir().unwrap();
        let (id, attachment) = common::create_session(&store, copies.path()).await;
        let sink = attachment.nats_sink().unwrap();
        let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
        js.delete_stream(&store.config().stream).await.unwrap();
        // Every try of this line fails until the stream is back.
        sink.send(1, Uuid::new_v4(), b"{\"n\":1}\n").unwrap();
        let gone_since = Instant::now();
        while gone_since.elapsed() < TTL * 3 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(sink.failure().is_none(), "{:?}", sink.failure());
        }
        assert_eq!(
            sink.acknowledged().0,
            0,
            "nothing could be stored meanwhile"
        );
        // Opening the store makes the stream again.
        let again = NatsStore::open(config(&server)).await.unwrap();
        sink.wait_async(1).await.unwrap();
        // The lease held throughout: a later line goes out without a wait for anything.
        sink.send(2, Uuid::new_v4(), b"{\"n\":2}\n").unwrap();
        sink.wait_async(2).await.unwrap();
        assert_eq!(
            again.export(id).await.unwrap(),
            b"{\"n\":1}\n{\"n\":2}\n".to_vec()
        );
        sink.finish();
    });
}

#[test]
fn a_writer_whose_renewals_go_unanswered_for_the_ttl_stops_before_its_next_line() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = NatsStore::open(config(&server)).await.unwrap();
        let copies = tempfile::tempdir().unwrap();
        let (id, attachment) = common::create_session(&store, copies.path()).await;
        let sink = attachment.nats_sink().unwrap();
        sink.send(1, Uuid::new_v4(), b"{\"n\":1}\n").unwrap();
        sink.wait_async(1).await.unwrap();
        // The lease bucket gone: no renewal can be answered, and the entry is gone with it.
        let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
        js.delete_stream(format!("KV_{}", store.config().lease_bucket()))
            .await
            .unwrap();
        let sink_for_send = std::sync::Arc::clone(sink);
        let refused = tokio::task::spawn_blocking(move || {
            // Sent until refused: a line goes out while the last renewal is fresh.
            for n in 2..1000u64 {
                if let Err(e) = sink_for_send.send(n, Uuid::new_v4(), b"{\"n\":\"later\"}\n") {
                    return e;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            panic!("every line was taken without a renewal");
        })
        .await
        .unwrap();
        assert_eq!(refused.kind, SinkErrorKind::LeaseLost, "{refused}");
        assert!(refused.to_string().contains("lease lapsed"), "{refused}");
        // Joined: no publish is in flight any more.
        sink.finish();
        let stored = store.export(id).await.unwrap();
        let (acked, _) = sink.acknowledged();
        assert_eq!(
            stored.iter().filter(|&&b| b == b'\n').count() as u64,
            acked,
            "the store holds exactly the acknowledged lines"
        );
    });
}
