//! `cargo run --profile profiling -p turnstile-store-nats --example seal_bench`: the cost of
//! the seal on the JetStream store. Appends at `turn`
//! durability through a writer attached to a `nats-server` this benchmark starts on a free
//! loopback port: `TURNS` (default 300) turns of 6 events of ~300 bytes, each turn ended by
//! `turn_boundary` (the seal's checkpoint, then the wait for the store's acknowledgements),
//! with the seal off and on, `ROUNDS` (default 5) rounds interleaved so that the machine's
//! drift reaches both alike; prints each round and the medians.

use std::time::Instant;

use serde_json::value::RawValue;
use turnstile_journal::{
    Durability, Event, EventType, JournalWriter, Sealing, StateRoot, Uuid, WriterOptions,
};
use turnstile_store::{AttachMode, Attachment, JournalStore};
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

fn event(parent: Option<Uuid>, n: u64) -> Event {
    let data = RawValue::from_string(format!(
        "{{\"message\":\"benchmark line {n} with some text to make it a realistic size, about three hundred bytes in all once the envelope of the event is counted too, as a tool result or a message would be\"}}"
    ))
    .expect("json");
    Event::with_raw_data(EventType::new("session.info"), data, parent)
}

/// Appends/s of one session of `turns` turns, sealed or not.
fn session(
    runtime: &tokio::runtime::Runtime,
    store: &NatsStore,
    root: &StateRoot,
    turns: u64,
    sealing: Sealing,
) -> f64 {
    let id = Uuid::new_v4();
    let attachment = runtime
        .block_on(store.attach(id, root, AttachMode::Create))
        .expect("attach");
    let (w, _) = JournalWriter::create(
        root,
        id,
        WriterOptions {
            durability: Durability::Turn,
            sink: attachment.sink(),
            sealing,
            ..Default::default()
        },
    )
    .expect("writer");
    let mut last = None;
    let started = Instant::now();
    for turn in 0..turns {
        for n in 0..6 {
            let ev = event(last, turn * 6 + n);
            last = Some(ev.id);
            w.append(&ev).expect("append");
        }
        w.turn_boundary().expect("turn");
    }
    let rate = (turns * 6) as f64 / started.elapsed().as_secs_f64();
    w.close().expect("close");
    runtime
        .block_on(store.detach(attachment, root))
        .expect("detach");
    rate
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (turns, rounds) = (var("TURNS", 300), var("ROUNDS", 5));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let scratch = tempfile::tempdir().expect("tmp");
    let server = LocalNats::start(&scratch.path().join("nats")).expect("nats-server");
    let store = runtime
        .block_on(NatsStore::open(NatsConfig::new(server.url())))
        .expect("store");
    let root = StateRoot::new(scratch.path().join("copies"));
    // A warm-up session of each, not counted.
    session(&runtime, &store, &root, 20, Sealing::Off);
    session(&runtime, &store, &root, 20, Sealing::Sealed);
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let a = session(&runtime, &store, &root, turns, Sealing::Off);
        let b = session(&runtime, &store, &root, turns, Sealing::Sealed);
        println!("round {round}: no seal {a:.0} appends/s, sealed {b:.0} appends/s");
        off.push(a);
        on.push(b);
    }
    let (a, b) = (median(off), median(on));
    println!(
        "median of {rounds}: no seal {a:.0} appends/s, sealed {b:.0} appends/s ({:+.1} %)",
        (b - a) / a * 100.0
    );
}
