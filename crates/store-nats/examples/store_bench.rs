//! `make bench-stores`: the file store next to JetStream on loopback (R1, and R3 on a local
//! 3-node cluster), each on servers this benchmark starts on free ports:
//! - durable appends/s (`event` durability: fsync, resp. acknowledgement, per append) with 1
//!   and 16 concurrent sessions;
//! - the store's share of a turn: 6 appends in `turn` durability, then the turn-end wait;
//! - resume preparation of a 10 000-event session: working copy from the subject without a
//!   checkpoint, and with a checkpoint and a matching copy;
//! - a 16 MB folded state written to the state bucket and read back through its entry;
//! - `sessions` over `SESSIONS` (default 100 000) index entries.
//!
//! Prints one table; nothing depends on wall-clock speed but the numbers themselves.

#[path = "support/bench.rs"]
mod bench;

use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use turnstile_journal::{
    Durability, Event, EventType, JournalWriter, StateRoot, Uuid, WriterOptions,
};
use turnstile_store::{AttachMode, Attachment, FileStore, JournalStore};
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore, StoreCheckpoint};

use bench::cpu_seconds;

const APPENDS: u64 = 2000;

fn event(parent: Option<Uuid>, n: u64) -> Event {
    let data = RawValue::from_string(format!(
        "{{\"message\":\"benchmark line {n} with some text to make it a realistic size, about two hundred bytes in all\"}}"
    ))
    .expect("json");
    Event::with_raw_data(EventType::new("session.info"), data, parent)
}

/// Opens a writer of a new session, through `store`'s sink when it has one.
async fn writer<S: JournalStore>(
    store: &S,
    root: &StateRoot,
    durability: Durability,
) -> (JournalWriter, S::Attachment) {
    let id = Uuid::new_v4();
    let attachment = store
        .attach(id, root, AttachMode::Create)
        .await
        .expect("attach");
    let (w, _) = JournalWriter::create(
        root,
        id,
        WriterOptions {
            durability,
            sink: attachment.sink(),
            ..Default::default()
        },
    )
    .expect("writer");
    (w, attachment)
}

/// Durable appends per second over `sessions` concurrent sessions.
async fn appends_per_s<S: JournalStore + Sync>(
    store: &S,
    root: &StateRoot,
    sessions: usize,
) -> f64 {
    let mut writers = Vec::new();
    for _ in 0..sessions {
        writers.push(writer(store, root, Durability::Event).await);
    }
    let per = APPENDS / sessions as u64;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (w, _) in &writers {
            scope.spawn(move || {
                let mut last = None;
                for n in 0..per {
                    let ev = event(last, n);
                    last = Some(ev.id);
                    w.append(&ev).expect("append");
                }
            });
        }
    });
    let rate = (per * sessions as u64) as f64 / started.elapsed().as_secs_f64();
    for (w, a) in writers {
        w.close().expect("close");
        store.detach(a, root).await.expect("detach");
    }
    rate
}

/// The store's time per turn: 6 appends in `turn` mode and the turn-end wait (median).
async fn per_turn<S: JournalStore>(store: &S, root: &StateRoot) -> Duration {
    let (w, a) = writer(store, root, Durability::Turn).await;
    let mut last = None;
    let mut times = Vec::new();
    for turn in 0..200u64 {
        let started = Instant::now();
        for n in 0..6 {
            let ev = event(last, turn * 6 + n);
            last = Some(ev.id);
            w.append(&ev).expect("append");
        }
        w.durable(w.event_count()).await.expect("durable");
        times.push(started.elapsed());
    }
    w.close().expect("close");
    store.detach(a, root).await.expect("detach");
    times.sort();
    times[times.len() / 2]
}

/// Resume preparation of a 10 000-event session: (no checkpoint, checkpoint + copy).
async fn resume_times(store: &NatsStore, scratch: &std::path::Path) -> (Duration, Duration) {
    let root = StateRoot::new(scratch.join("writer"));
    let (w, a) = writer(store, &root, Durability::Off).await;
    let id = w.paths().id.expect("id");
    let mut last = None;
    for n in 0..10_000 {
        let ev = event(last, n);
        last = Some(ev.id);
        w.append_unsynced(&ev).expect("append");
    }
    w.close().expect("close");
    store.detach(a, &root).await.expect("detach");
    let fresh = StateRoot::new(scratch.join("fresh-host"));
    let started = Instant::now();
    let a = store
        .attach(id, &fresh, AttachMode::Read)
        .await
        .expect("attach");
    let cold = started.elapsed();
    store.detach(a, &fresh).await.expect("detach");
    let started = Instant::now();
    let a = store
        .attach(id, &root, AttachMode::Read)
        .await
        .expect("attach");
    let warm = started.elapsed();
    assert_eq!(a.synced().fetched, 0, "the checkpoint vouched for the copy");
    store.detach(a, &root).await.expect("detach");
    (cold, warm)
}

/// `sessions` over `count` index entries (written straight into the bucket, pipelined).
async fn listing(store: &NatsStore, url: &str, server_pid: u32, count: usize) -> Listing {
    bench::write_index(url, &store.config().index_bucket(), count).await;
    let (client_cpu, server_cpu) = (cpu_seconds("self"), cpu_seconds(&server_pid.to_string()));
    let started = Instant::now();
    let all = store.list().await.expect("list");
    let took = started.elapsed();
    assert!(all.len() >= count);
    Listing {
        wall: took,
        client_cpu: cpu_seconds("self") - client_cpu,
        server_cpu: cpu_seconds(&server_pid.to_string()) - server_cpu,
    }
}

/// What one listing cost.
struct Listing {
    wall: Duration,
    /// CPU seconds of this process (all its threads).
    client_cpu: f64,
    /// CPU seconds of the `nats-server` process.
    server_cpu: f64,
}

async fn open(url: String, replicas: usize) -> NatsStore {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut config = NatsConfig::new(url.clone());
        config.replicas = replicas;
        match NatsStore::open(config).await {
            Ok(store) => return store,
            Err(e) if Instant::now() < deadline => {
                eprintln!("waiting for the server: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// A folded state of `mb` megabytes kept in the state bucket and read back through the
/// checkpoint entry: (write, read), medians of 3.
async fn state_times(store: &NatsStore, mb: usize) -> (Duration, Duration) {
    let id = Uuid::new_v4();
    let chunk = "x".repeat(1 << 20);
    let state = serde_json::Value::Array(vec![serde_json::Value::String(chunk); mb]);
    let (mut writes, mut reads) = (Vec::new(), Vec::new());
    for seq in 1..=3u64 {
        let entry = StoreCheckpoint {
            events: seq,
            bytes: seq,
            stream_seq: seq,
            sha256: format!("{seq:064x}"),
            folded: Some(state.clone()),
        };
        let started = Instant::now();
        assert!(store.put_checkpoint(id, &entry).await.expect("put"));
        writes.push(started.elapsed());
        let started = Instant::now();
        let back = store.checkpoint(id).await.expect("read").expect("entry");
        reads.push(started.elapsed());
        assert_eq!(back.folded.as_ref(), Some(&state), "read back whole");
    }
    writes.sort();
    reads.sort();
    (writes[1], reads[1])
}

fn main() {
    let sessions: usize = std::env::var("SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let r3 = std::env::var("R3").map_or(true, |v| v != "0");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let scratch = tempfile::tempdir().expect("tmp");
    runtime.block_on(async {
        let file_root = StateRoot::new(scratch.path().join("files"));
        let file = FileStore::new(file_root.clone());
        println!("| measure | files | JetStream R1 |{}", if r3 { " JetStream R3 |" } else { "" });
        println!("|---|---|---|{}", if r3 { "---|" } else { "" });

        let one = LocalNats::start(&scratch.path().join("r1")).expect("nats-server");
        let r1 = open(one.url(), 1).await;
        let r1_root = StateRoot::new(scratch.path().join("r1-copies"));
        let cluster = if r3 {
            Some(LocalNats::cluster(3, &scratch.path().join("r3")).expect("cluster"))
        } else {
            None
        };
        let r3_store = match &cluster {
            Some(nodes) => {
                let url = nodes.iter().map(LocalNats::url).collect::<Vec<_>>().join(",");
                Some(open(url, 3).await)
            }
            None => None,
        };
        let r3_root = StateRoot::new(scratch.path().join("r3-copies"));

        for n in [1usize, 16] {
            let f = appends_per_s(&file, &file_root, n).await;
            let j = appends_per_s(&r1, &r1_root, n).await;
            let t = match &r3_store {
                Some(s) => format!(" {:.0} |", appends_per_s(s, &r3_root, n).await),
                None => String::new(),
            };
            println!("| durable appends/s, {n} session(s) | {f:.0} | {j:.0} |{t}");
        }
        let f = per_turn(&file, &file_root).await;
        let j = per_turn(&r1, &r1_root).await;
        let t = match &r3_store {
            Some(s) => format!(" {:.2} ms |", per_turn(s, &r3_root).await.as_secs_f64() * 1e3),
            None => String::new(),
        };
        println!(
            "| store time per turn (6 appends + turn-end wait, median) | {:.2} ms | {:.2} ms |{t}",
            f.as_secs_f64() * 1e3,
            j.as_secs_f64() * 1e3
        );
        let (cold, warm) = resume_times(&r1, &scratch.path().join("resume")).await;
        println!(
            "| resume prep of 10 000 events: no checkpoint / checkpoint | — | {:.1} ms / {:.1} ms |",
            cold.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3
        );
        let (w1, r1_read) = state_times(&r1, 16).await;
        let t = match &r3_store {
            Some(s) => {
                let (w, r) = state_times(s, 16).await;
                format!(" {:.0} ms / {:.0} ms |", w.as_secs_f64() * 1e3, r.as_secs_f64() * 1e3)
            }
            None => String::new(),
        };
        println!(
            "| folded state of 16 MB in the state bucket: write / read back | — | {:.0} ms / {:.0} ms |{t}",
            w1.as_secs_f64() * 1e3,
            r1_read.as_secs_f64() * 1e3
        );
        let pid = one.pid().expect("nats-server runs");
        let took = listing(&r1, &one.url(), pid, sessions).await;
        println!(
            "| `sessions` over {sessions} index entries: wall (CPU: client, server) | see bench-sessions | {:.3} s ({:.2} s, {:.2} s) |",
            took.wall.as_secs_f64(),
            took.client_cpu,
            took.server_cpu
        );
    });
}
