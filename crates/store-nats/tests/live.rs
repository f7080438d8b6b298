//! The live channel fenced like the journal, on a real `nats-server` (a 2 s lease):
//! - an event of a persisted type reaches watchers only once the store holds its line;
//! - after another process took the lease, a message carrying the old writer's lease is
//!   dropped by `watch` (however it got out), and the old writer's own feed sends nothing.

use crate::common;

use std::time::Duration;

use futures_util::StreamExt;
use turnstile_journal::{Event, EventType, JournalSink, StateRoot, Uuid};
use turnstile_store::{AttachMode, JournalStore};
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

fn config(server: &LocalNats) -> NatsConfig {
    common::config_with_lease(server, Duration::from_secs(2))
}

fn event(kind: &str, text: &str) -> Event {
    let data = serde_json::value::RawValue::from_string(
        serde_json::json!({"message": text, "deltaContent": text, "messageId": "m"}).to_string(),
    )
    .unwrap();
    Event::with_raw_data(EventType::new(kind), data, None)
}

fn line(event: &Event) -> Vec<u8> {
    let mut line = Vec::new();
    event.write_live(&mut line);
    line
}

/// The next event `watch` gives, within a generous bound.
async fn next(live: &mut turnstile_store_nats::LiveEvents) -> Event {
    tokio::time::timeout(Duration::from_secs(20), live.next())
        .await
        .expect("a live event")
        .expect("the connection is open")
}

#[test]
fn a_persisted_event_reaches_watchers_only_once_stored() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = NatsStore::open(config(&server)).await.unwrap();
        let copies = tempfile::tempdir().unwrap();
        let (id, attachment) = common::create_session(&store, copies.path()).await;
        let sink = attachment.nats_sink().unwrap().clone();
        let feed = store.live_feed(&attachment);
        let mut watch = store.watch(id).await.unwrap();
        let delta = event("assistant.message_delta", "hel");
        feed.publish(&delta).await;
        assert_eq!(next(&mut watch).await.id, delta.id);

        // The stream gone: the line cannot be stored, so its event is not shown.
        let js = async_nats::jetstream::new(async_nats::connect(server.url()).await.unwrap());
        js.delete_stream(&store.config().stream).await.unwrap();
        let info = event("session.info", "stored first");
        sink.send(1, info.id, &line(&info)).unwrap();
        let shown = tokio::spawn({
            let feed = feed.clone();
            let info = info.clone();
            async move { feed.publish(&info).await }
        });
        let early = tokio::time::timeout(Duration::from_secs(1), watch.next()).await;
        assert!(early.is_err(), "shown before it was stored: {early:?}");
        assert_eq!(sink.acknowledged().0, 0);
        NatsStore::open(config(&server)).await.unwrap();
        shown.await.unwrap();
        assert!(sink.acknowledged().0 >= 1, "stored by the time it is shown");
        assert_eq!(next(&mut watch).await.id, info.id);
        sink.finish();
    });
}

#[test]
fn a_writer_that_lost_the_lease_is_silent_on_the_live_channel() {
    let data = tempfile::tempdir().unwrap();
    let server = LocalNats::start(data.path()).unwrap();
    common::runtime().block_on(async {
        let store = NatsStore::open(config(&server)).await.unwrap();
        let id = Uuid::new_v4();
        let (host_a, host_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let old = store
            .attach(id, &StateRoot::new(host_a.path()), AttachMode::Create)
            .await
            .unwrap();
        let old_sink = old.nats_sink().unwrap().clone();
        let old_feed = store.live_feed(&old);
        let first = event("session.info", "first");
        old_sink.send(1, first.id, &line(&first)).unwrap();
        old_sink.wait_async(1).await.unwrap();
        let mut watch = store.watch(id).await.unwrap();
        let client = async_nats::connect(server.url()).await.unwrap();
        let mut raw = client
            .subscribe(store.config().live_subject(id))
            .await
            .unwrap();
        client.flush().await.unwrap();

        // Another process takes the session: the old entry goes, the new holder creates its own.
        let js = async_nats::jetstream::new(client.clone());
        let leases = js
            .get_key_value(store.config().lease_bucket())
            .await
            .unwrap();
        leases.delete(id.to_string()).await.unwrap();
        let new = store
            .attach(id, &StateRoot::new(host_b.path()), AttachMode::Resume)
            .await
            .unwrap();
        let new_feed = store.live_feed(&new);

        // A message of the old writer that got out anyway (sent just before it noticed).
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Turnstile-Writer", old_sink.token());
        let zombie = event("assistant.message_delta", "zombie");
        client
            .publish_with_headers(
                store.config().live_subject(id),
                headers,
                line(&zombie).into(),
            )
            .await
            .unwrap();
        client.flush().await.unwrap();
        let current = event("assistant.message_delta", "new holder");
        new_feed.publish(&current).await;
        assert_eq!(
            next(&mut watch).await.id,
            current.id,
            "the old writer's message is dropped"
        );

        // The old writer learns it lost the lease; its feed then sends nothing at all.
        let noticed = tokio::time::timeout(Duration::from_secs(20), async {
            while old_sink.failure().is_none() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(noticed.is_ok(), "the old writer never noticed");
        old_feed
            .publish(&event("assistant.message_delta", "after"))
            .await;
        let last = event("assistant.message_delta", "last");
        new_feed.publish(&last).await;
        let mut seen = Vec::new();
        while let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_secs(20), raw.next()).await
        {
            let event = Event::from_line(&message.payload).unwrap();
            seen.push(event.id);
            if event.id == last.id {
                break;
            }
        }
        // The hand-made message and the new holder's go out on two connections, so either
        // may reach the wire first; what matters is that nothing else does.
        let mut seen_sorted = seen.clone();
        seen_sorted.sort();
        let mut expected = vec![zombie.id, current.id, last.id];
        expected.sort();
        assert_eq!(
            seen_sorted, expected,
            "on the wire: the hand-made message and the new holder's, nothing from the old feed ({seen:?})"
        );
        assert_eq!(seen.last(), Some(&last.id));
        if let Some(sink) = new.nats_sink() {
            sink.finish();
        }
        old_sink.finish();
    });
}
