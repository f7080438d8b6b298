//! `make bench-listing`: `turnstile sessions` over many stored sessions, the JetStream store
//! next to the file store.
//!
//!     sessions_bench TURNSTILE COUNT [FILE_ROOT]
//!
//! Starts its own `nats-server` (R1, a free loopback port, its data in a scratch directory
//! under `BENCH_DIR`, default `target/bench`, removed at the end), writes COUNT index entries
//! straight into the session index bucket as `turnstile` records closed sessions (the listing
//! reads only the index, never a journal), then times `TURNSTILE --store URL sessions`;
//! given FILE_ROOT (a state root of COUNT sessions, `gen_sessions`), `TURNSTILE --state-dir
//! FILE_ROOT sessions` with its index warm as well (`BENCH_NATS=0`: that one only). Each
//! command runs once first (it checks the row count and that every file-store session has a
//! status; on the file store it writes the missing index, on JetStream the compacted listing:
//! its wall time is the table's "first listing"), then REPS times (default 5); the medians of
//! the wall time and of the command's CPU time (user + sys), and for JetStream the server's
//! CPU time per listing, are printed as table rows.

#[path = "support/bench.rs"]
mod bench;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

/// One timed command: medians of its wall and CPU seconds, and of the server's CPU seconds
/// (0 without a server).
struct Timed {
    first: f64,
    wall: f64,
    cpu: f64,
    server_cpu: f64,
}

/// CPU seconds (user + sys) of this process's waited-for children so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs `turnstile args… sessions` once to check it lists `count` rows, then `reps` times.
fn time_listing(
    turnstile: &Path,
    args: &[&str],
    count: usize,
    reps: usize,
    server: Option<u32>,
) -> Timed {
    let command = || {
        let mut cmd = Command::new(turnstile);
        cmd.args(args)
            .arg("sessions")
            .env_remove("TURNSTILE_STORE")
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        cmd
    };
    let started = Instant::now();
    let out = command().output().expect("run turnstile");
    let first = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "turnstile {args:?} sessions failed");
    let rows = out.stdout.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(rows, count + 1, "a header and one row per session");
    {
        // Every row has a status: `gen_sessions` and the index generator shut down all but
        // one in 100.
        let text = String::from_utf8_lossy(&out.stdout);
        let clean = text.lines().filter(|l| l.contains("  clean  ")).count();
        let crashed = text.lines().filter(|l| l.contains("  crashed  ")).count();
        assert_eq!(clean + crashed, count, "a status on every row");
    }
    let (mut walls, mut cpus, mut servers) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let server_before = server.map_or(0.0, |pid| bench::cpu_seconds(&pid.to_string()));
        let before = children_cpu();
        let started = Instant::now();
        let status = command()
            .stdout(Stdio::null())
            .status()
            .expect("run turnstile");
        walls.push(started.elapsed().as_secs_f64());
        assert!(status.success());
        cpus.push(children_cpu() - before);
        servers
            .push(server.map_or(0.0, |pid| bench::cpu_seconds(&pid.to_string())) - server_before);
    }
    Timed {
        first,
        wall: median(walls),
        cpu: median(cpus),
        server_cpu: median(servers),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(turnstile), Some(count)) = (args.next(), args.next()) else {
        eprintln!("usage: sessions_bench TURNSTILE COUNT [FILE_ROOT]");
        std::process::exit(2);
    };
    let turnstile = std::path::PathBuf::from(turnstile);
    let count: usize = count.parse().expect("COUNT is a number");
    let file_root = args.next();
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let bench_dir = std::env::var("BENCH_DIR").unwrap_or_else(|_| "target/bench".into());
    std::fs::create_dir_all(&bench_dir).expect("bench dir");
    let scratch = tempfile::tempdir_in(&bench_dir).expect("scratch dir");

    if let Some(root) = &file_root {
        let t = time_listing(&turnstile, &["--state-dir", root], count, reps, None);
        println!(
            "| files | {count} | {:.3} | {:.3} | {:.3} | — |",
            t.first, t.wall, t.cpu
        );
    }

    if std::env::var("BENCH_NATS").is_ok_and(|v| v == "0") {
        return;
    }
    let server = LocalNats::start(&scratch.path().join("nats")).expect("nats-server");
    let url = server.url();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let generated = runtime.block_on(async {
        let store = NatsStore::open(NatsConfig::new(url.clone()))
            .await
            .expect("open the store");
        let started = Instant::now();
        bench::write_index(&url, &store.config().index_bucket(), count).await;
        started.elapsed()
    });
    eprintln!(
        "wrote {count} index entries in {:.1} s",
        generated.as_secs_f64()
    );
    let copies = scratch.path().join("copies");
    let copies = copies.to_str().expect("utf-8 path");
    let pid = server.pid().expect("nats-server runs");
    let t = time_listing(
        &turnstile,
        &["--state-dir", copies, "--store", &url],
        count,
        reps,
        Some(pid),
    );
    println!(
        "| JetStream R1 | {count} | {:.3} | {:.3} | {:.3} | {:.3} |",
        t.first, t.wall, t.cpu, t.server_cpu
    );
}
