//! Journal benchmarks: durable appends per second for each durability mode (with concurrent
//! producers sharing one writer, so group commit shows), and streaming read throughput.
//!
//! `journal_bench append --mode event|turn|off --producers N --events N --dir DIR`
//! `journal_bench gen --size-mb N --out FILE`
//! `journal_bench read FILE`
//! `journal_bench seal --mode turn --events N --rounds R --dir DIR`: appends with no seal, a
//! seal and a signed seal, rounds interleaved so the disk's drift reaches all three alike
//! `journal_bench seal-file FILE` (writes `FILE.seal`, a checkpoint every 6 lines) and
//! `journal_bench verify FILE` (the `turnstile verify` check, timed)

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::value::RawValue;
use turnstile_journal::{
    Durability, Event, EventType, JournalReader, JournalScan, JournalWriter, ReadMode, Sealing,
    StateRoot, Uuid, WriterOptions,
};

/// Events per turn in `turn` mode: the loop fsyncs at each turn end.
const EVENTS_PER_TURN: u64 = 6;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| default.to_owned())
    };
    match args.first().map(String::as_str) {
        Some("append") => {
            append(
                get("--mode", "turn")
                    .parse()
                    .expect("--mode event|turn|off"),
                get("--producers", "1").parse().expect("--producers N"),
                get("--events", "2000").parse().expect("--events N"),
                PathBuf::from(get("--dir", "target/bench/append")),
                sealing(&get("--seal", "on")),
            );
        }
        Some("seal") => seal_compare(
            get("--mode", "turn")
                .parse()
                .expect("--mode event|turn|off"),
            get("--events", "30000").parse().expect("--events N"),
            get("--rounds", "5").parse().expect("--rounds N"),
            PathBuf::from(get("--dir", "target/bench/append")),
        ),
        Some("seal-file") => seal_file(PathBuf::from(args.get(1).expect("seal-file FILE"))),
        Some("verify") => verify(PathBuf::from(args.get(1).expect("verify FILE"))),
        Some("gen") => generate(
            get("--size-mb", "400").parse().expect("--size-mb N"),
            PathBuf::from(get("--out", "target/bench/journal-400mb.jsonl")),
        ),
        Some("read") => read(PathBuf::from(args.get(1).expect("read FILE"))),
        _ => {
            eprintln!("usage: journal_bench append|gen|read ...");
            std::process::exit(2);
        }
    }
}

fn event(parent: Option<Uuid>, n: u64) -> Event {
    let data = format!(
        r#"{{"toolCallId":"call_{n}","success":true,"result":{{"content":"line {n}: {}"}}}}"#,
        "x".repeat(200)
    );
    Event::with_raw_data(
        EventType::new("tool.execution_complete"),
        RawValue::from_string(data).expect("json"),
        parent,
    )
}

fn sealing(name: &str) -> Sealing {
    match name {
        "off" => Sealing::Off,
        "on" => Sealing::Sealed,
        "signed" => Sealing::SignedWith(Arc::new(turnstile_seal::SealKey::from_seed([7; 32]))),
        other => panic!("--seal off|on|signed, not {other}"),
    }
}

/// Events per second of each sealing, `rounds` interleaved runs each, medians.
fn seal_compare(mode: Durability, events: u64, rounds: usize, dir: PathBuf) {
    let kinds = ["off", "on", "signed"];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..rounds {
        for (i, kind) in kinds.iter().enumerate() {
            rates[i].push(append(mode, 1, events, dir.clone(), sealing(kind)));
        }
    }
    let off = median(&mut rates[0]);
    for (i, kind) in kinds.iter().enumerate() {
        let m = median(&mut rates[i]);
        println!(
            "{{\"mode\":\"{mode:?}\",\"seal\":\"{kind}\",\"events\":{events},\"rounds\":{rounds},\"medianEventsPerSec\":{m:.0},\"vsNoSeal\":\"{:+.1}%\"}}",
            (m / off - 1.0) * 100.0
        );
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seals an existing journal as a writer would (a checkpoint every turn of 6 events).
fn seal_file(path: PathBuf) {
    let input =
        std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&path).expect("open"));
    let mut sealer = turnstile_seal::Sealer::begin(None);
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(turnstile_journal::seal_file::seal_path(&path)).expect("seal"),
    );
    out.write_all(&sealer.begin_record()).expect("write");
    let mut lines = turnstile_seal::LineHasher::new(input, 0);
    while let Some(line) = lines.next_line().expect("read") {
        sealer.push(&line.digest, line.len);
        if lines.lines().is_multiple_of(EVENTS_PER_TURN) {
            out.write_all(&sealer.checkpoint(false).expect("lines"))
                .expect("write");
        }
    }
    if let Some(last) = sealer.checkpoint(false) {
        out.write_all(&last).expect("write");
    }
    out.flush().expect("flush");
}

/// Times the verification `turnstile verify` runs.
fn verify(path: PathBuf) {
    let start = Instant::now();
    let journal =
        std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&path).expect("open"));
    let seal = std::io::BufReader::new(
        std::fs::File::open(turnstile_journal::seal_file::seal_path(&path)).expect("seal"),
    );
    let report = turnstile_seal::verify(journal, seal, None).expect("verify");
    let secs = start.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).expect("stat").len();
    println!(
        "{{\"verify\":\"{:?}\",\"sealed\":{},\"seconds\":{secs:.3},\"MBps\":{:.0}}}",
        report.finding,
        report.sealed,
        bytes as f64 / secs / 1e6
    );
}

fn append(mode: Durability, producers: u64, events: u64, dir: PathBuf, sealing: Sealing) -> f64 {
    std::fs::create_dir_all(&dir).expect("bench dir");
    let root = StateRoot::new(&dir);
    let opts = WriterOptions {
        durability: mode,
        sealing,
        ..Default::default()
    };
    let (writer, _) = JournalWriter::create(&root, Uuid::new_v4(), opts).expect("create");
    let writer = Arc::new(writer);
    // The parent chain needs a total order, so "read last id + append" is serialised; in
    // `event` mode the fsync wait happens outside that section, which is where producers
    // overlap and one fsync covers several of them.
    let order = Arc::new(Mutex::new(()));
    let per = events / producers;
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..producers {
            let (writer, order) = (Arc::clone(&writer), Arc::clone(&order));
            s.spawn(move || {
                for i in 0..per {
                    let seq = {
                        let _g = order.lock().expect("order");
                        let ev = event(writer.last_id(), i);
                        append_no_wait(&writer, &ev)
                    };
                    match mode {
                        Durability::Event => {
                            writer.sync_to(seq).expect("sync");
                        }
                        Durability::Turn if seq % EVENTS_PER_TURN == 0 => {
                            writer.turn_boundary().expect("turn");
                        }
                        _ => {}
                    }
                }
            });
        }
    });
    let total = per * producers;
    let secs = start.elapsed().as_secs_f64();
    let bytes = writer.byte_len();
    println!(
        "{{\"mode\":\"{mode:?}\",\"producers\":{producers},\"events\":{total},\"seconds\":{secs:.3},\"eventsPerSec\":{:.0},\"MBps\":{:.1}}}",
        total as f64 / secs,
        bytes as f64 / secs / 1e6
    );
    drop(writer);
    let _ = std::fs::remove_dir_all(root.dir());
    total as f64 / secs
}

/// Appends without the writer's own per-event fsync so the bench controls when to wait.
fn append_no_wait(writer: &JournalWriter, ev: &Event) -> u64 {
    if writer.durability() == Durability::Event {
        // Event mode fsyncs inside append; waiting there while holding the order lock would
        // serialise producers and hide group commit. The fsync is requested after the lock.
        writer.append_unsynced(ev).expect("append")
    } else {
        writer.append(ev).expect("append")
    }
}

fn generate(size_mb: u64, out: PathBuf) {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    let target = size_mb << 20;
    let mut file =
        std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&out).expect("create"));
    let (mut bytes, mut n, mut parent) = (0u64, 0u64, None);
    let mut line = Vec::new();
    while bytes < target {
        let ev = event(parent, n);
        line.clear();
        ev.write_persisted(&mut line);
        line.push(b'\n');
        file.write_all(&line).expect("write");
        bytes += line.len() as u64;
        parent = Some(ev.id);
        n += 1;
    }
    file.flush().expect("flush");
    println!(
        "{{\"path\":\"{}\",\"events\":{n},\"bytes\":{bytes}}}",
        out.display()
    );
}

fn read(path: PathBuf) {
    let len = std::fs::metadata(&path).expect("stat").len() as f64;
    let start = Instant::now();
    let mut count = 0u64;
    for rec in JournalReader::open(&path, ReadMode::Lenient).expect("open") {
        rec.expect("valid line");
        count += 1;
    }
    let parse = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let scan = JournalScan::of_file(&path).expect("scan");
    let scan_secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"events\":{count},\"readSeconds\":{parse:.3},\"readMBps\":{:.0},\"fsckSeconds\":{scan_secs:.3},\"fsckEvents\":{}}}",
        len / parse / 1e6,
        scan.good_lines
    );
}
