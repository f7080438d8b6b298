//! Reads on a 3-node cluster right after a node that missed writes comes back: the restarted
//! replica has not caught up yet, and a reader (an ordered consumer, placed on any replica)
//! may be served from it. Every export and listing must still hold every acknowledged line and
//! session. Real `nats-server` processes on free loopback ports.
//!
//! `CLUSTER_READ_ROUNDS` (default 3) sets how many kill-write-restart-read rounds run; each
//! round reads the new session several times, each read on a fresh reader.

mod common;

use std::time::Duration;

use turnstile_store::JournalStore;
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

/// Lines written while the node is down: enough that its catch-up takes a while.
const LINES: usize = 1500;
/// Reads right after each restart.
const READS: usize = 8;

async fn open(url: String) -> NatsStore {
    // A new cluster elects its meta leader first; nothing can be created before.
    let mut last = None;
    for _ in 0..120 {
        let mut config = NatsConfig::new(url.clone());
        config.replicas = 3;
        match NatsStore::open(config).await {
            Ok(store) => return store,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the cluster never answered: {last:?}");
}

#[test]
fn reads_after_a_lagging_replica_restarts_hold_every_acknowledged_line() {
    let rounds: usize = std::env::var("CLUSTER_READ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = LocalNats::cluster(3, dir.path()).unwrap();
    let url = nodes
        .iter()
        .map(LocalNats::url)
        .collect::<Vec<_>>()
        .join(",");
    runtime.block_on(async {
        let store = open(url).await;
        let mut stored = Vec::new();
        let mut short_exports = 0;
        let mut short_listings = 0;
        for round in 0..rounds {
            let leader = store.stream_leader().await.unwrap().expect("a leader");
            let leader: usize = leader.trim_start_matches("node").parse().unwrap();
            // A follower misses the writes: no election, just a replica that lags.
            let down = (leader + 1 + round % 2) % nodes.len();
            nodes[down].kill();
            let (id, bytes) = common::journal(LINES);
            store.import(id, &bytes).await.unwrap();
            stored.push(id);
            nodes[down].restart().unwrap();
            for _ in 0..READS {
                let exported = store.export(id).await.unwrap();
                if exported != bytes {
                    short_exports += 1;
                    eprintln!(
                        "round {round}: export held {} of {} bytes",
                        exported.len(),
                        bytes.len()
                    );
                }
                let listed = store.list().await.unwrap();
                if !stored
                    .iter()
                    .all(|id| listed.iter().any(|s| s.id == Some(*id)))
                {
                    short_listings += 1;
                    eprintln!(
                        "round {round}: listing held {} of {} sessions",
                        listed.len(),
                        stored.len()
                    );
                }
            }
        }
        assert_eq!(
            (short_exports, short_listings),
            (0, 0),
            "reads that missed acknowledged lines or sessions, of {} each",
            rounds * READS
        );
    });
}
