//! Two processes open the same session: the second is refused with the holder named, the
//! file never has interleaved lines, and a killed holder does not block the next writer.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use turnstile_journal::{
    Durability, Event, EventType, JournalScan, JournalWriter, LockError, SessionPaths, StateRoot,
    Uuid, Verdict, WriteError, WriterOptions,
};

const CHILD_ENV: &str = "TURNSTILE_TEST_HOLDER_CHILD";

/// Child: open the writer, append, say READY, then keep appending until stdin closes.
#[test]
fn child_holder() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let paths = SessionPaths::from_dir(std::path::PathBuf::from(dir));
    let opts = WriterOptions {
        durability: Durability::Off,
        ..Default::default()
    };
    let (writer, _) = JournalWriter::open(&paths, opts).expect("child opens");
    let append = |n: u32| {
        let data = serde_json::value::RawValue::from_string(format!("{{\"child\":{n}}}")).unwrap();
        writer
            .append(&Event::with_raw_data(
                EventType::new("session.info"),
                data,
                writer.last_id(),
            ))
            .unwrap();
    };
    append(0);
    println!("READY");
    let mut stdin = std::io::stdin();
    let mut byte = [0u8; 1];
    let mut n = 1;
    while stdin.read(&mut byte).map(|k| k > 0).unwrap_or(false) {
        append(n);
        n += 1;
    }
    writer.close().unwrap();
}

#[test]
fn second_writer_is_refused_and_crashed_holder_never_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = StateRoot::new(tmp.path());
    let id = Uuid::new_v4();
    root.create_session(id).unwrap();
    let paths = root.session(id);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "two_writers::child_holder",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &paths.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.map(|l| l.ends_with("READY")).unwrap_or(false)),
        "child did not start"
    );

    // While the child appends (each byte on its stdin is one more event), we try to open.
    let mut stdin = child.stdin.take().unwrap();
    for _ in 0..50 {
        std::io::Write::write_all(&mut stdin, b"x").unwrap();
        match JournalWriter::open(&paths, WriterOptions::default()) {
            Err(WriteError::Locked(LockError::Held { holder, .. })) => {
                let holder = holder.expect("holder recorded");
                assert_eq!(holder.pid, child.id());
                let msg = WriteError::Locked(LockError::Held {
                    dir: paths.dir.clone(),
                    holder: Some(holder),
                    marker: None,
                })
                .to_string();
                assert!(
                    msg.contains(&format!("pid {}", child.id())) && msg.contains("in use"),
                    "{msg}"
                );
            }
            other => panic!("second writer was not refused: {other:?}"),
        }
    }
    // SIGKILL the holder: the kernel drops its lock, so we can open at once.
    let child_marker = paths.dir.join(format!("inuse.{}.lock", child.id()));
    assert!(
        child_marker.is_file(),
        "the holder leaves the runtime's in-use marker"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(child_marker.is_file(), "SIGKILL leaves the marker behind");
    let (writer, _) =
        JournalWriter::open(&paths, WriterOptions::default()).expect("lock released by the kernel");
    assert!(
        !child_marker.exists(),
        "a dead holder's marker is removed as stale"
    );
    let own = paths.dir.join(format!("inuse.{}.lock", std::process::id()));
    assert_eq!(
        std::fs::read_to_string(&own).unwrap(),
        format!("{}\n", std::process::id())
    );
    drop(writer);
    assert!(!own.exists(), "released with the lock");
    let scan = JournalScan::of_file(&paths.events).unwrap();
    assert!(
        matches!(scan.verdict(), Verdict::Clean),
        "interleaved or torn lines: {:?}",
        scan.verdict()
    );
    assert!(scan.good_lines >= 1);
}
