//! `export` and `import` through the binary in bounded memory, on the file store and on a real
//! `nats-server` (a free loopback port): a journal with a line far longer than the readers'
//! limit (`TURNSTILE_MAX_LINE_BYTES`, set low) is exported byte for byte with the line named,
//! refused by `import` with the line named and nothing stored, and a large journal of long
//! lines is imported into the JetStream store; each child's peak RSS (its `ru_maxrss`, from
//! `wait4` in a small parent of its own, [`measured`]) stays far below the journal's size.

use crate::common;

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::store_env::{Env, file_cmd, ok};

/// The readers' limit the children run with.
const LIMIT: &str = "65536";
/// The long line: a hole of this many NUL bytes (a sparse file's, costing no disk).
const LONG: u64 = 160 << 20;
/// Most a child's peak RSS may reach: far below one copy of the long line.
const PEAK_ALLOWED_KIB: u64 = 64 << 10;
/// Most a child reading a stored journal back from JetStream may reach: below half the
/// journal it reads.
const PUSHED_AHEAD_KIB: u64 = 128 << 10;

fn start_line(id: &str) -> String {
    format!(
        r#"{{"type":"session.start","data":{{"sessionId":"{id}","version":1,"producer":"copilot-agent","copilotVersion":"0.0.0","startTime":"2026-11-29T14:34:34.757Z"}},"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}}"#
    )
}

fn info_line(n: u32, message: &str) -> String {
    format!(
        r#"{{"type":"session.info","data":{{"infoType":"x","message":"{message}"}},"id":"00000000-0000-4000-8000-{n:012}","timestamp":"2026-11-29T14:34:35.000Z","parentId":"00000000-0000-4000-8000-000000000001"}}"#
    )
}

/// Line 1 the session's start, line 2 a hole of [`LONG`] NUL bytes and its `\n`, line 3 an
/// event; returns the offset and length of line 2.
fn write_sparse_journal(path: &Path, id: &str) -> (u64, u64) {
    let first = format!("{}\n", start_line(id));
    let mut file = File::create(path).unwrap();
    file.write_all(first.as_bytes()).unwrap();
    file.set_len(first.len() as u64 + LONG).unwrap();
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file).unwrap();
    writeln!(file, "{}", info_line(3, "after")).unwrap();
    (first.len() as u64, LONG + 1)
}

/// A session of state directory `root` holding the sparse journal.
fn stored_sparse_session(root: &Path, id: &str) -> (PathBuf, u64, u64) {
    let dir = root.join(id);
    fs::create_dir_all(&dir).unwrap();
    for d in [root, dir.as_path()] {
        fs::set_permissions(d, fs::Permissions::from_mode(0o700)).unwrap();
    }
    let events = dir.join("events.jsonl");
    let (offset, len) = write_sparse_journal(&events, id);
    (events, offset, len)
}

/// A python3 parent that runs its arguments as a child and reports the child's peak RSS as
/// the last line of stderr. Measured from the test process itself, `ru_maxrss` would start at
/// the test process's own size (Linux carries the forked copy's high-water mark across
/// `execve` into the child's figure), which other tests of the binary make hundreds of MiB.
const MEASURE: &str = "import os,sys,subprocess\n\
p = subprocess.Popen(sys.argv[1:])\n\
_, st, ru = os.wait4(p.pid, 0)\n\
p.returncode = 0\n\
sys.stderr.write('\\n%s %d\\n' % ('peak-rss-kib', ru.ru_maxrss))\n\
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 255)\n";

/// What a peak line starts with.
const PEAK_MARK: &str = "\npeak-rss-kib ";

/// `cmd` (program, arguments, environment, directory) run under [`MEASURE`].
fn measured(cmd: &Command) -> Command {
    let mut wrapper = Command::new("python3");
    wrapper
        .arg("-c")
        .arg(MEASURE)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapper.env(key, value),
            None => wrapper.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapper.current_dir(dir);
    }
    wrapper
}

/// Splits the peak line [`MEASURE`] wrote off `stderr`: the child's own text and its peak.
fn split_peak(mut stderr: String) -> (String, u64) {
    let at = stderr
        .rfind(PEAK_MARK)
        .unwrap_or_else(|| panic!("no peak line in: {stderr}"));
    let peak = stderr[at + PEAK_MARK.len()..].trim().parse().unwrap();
    stderr.truncate(at);
    (stderr, peak)
}

/// Waits for `child` (a [`measured`] command); its exit code (255 when killed).
fn wait_code(mut child: Child) -> i32 {
    child.wait().unwrap().code().unwrap_or(-1)
}

/// Runs `cmd` to its end: its exit code, stderr and peak RSS; stdout is compared, piece by
/// piece as it comes, with the file `expected` (when given) and its length returned.
fn run_measured(mut cmd: Command, expected: Option<&Path>) -> (i32, String, u64, bool, u64) {
    if !cmd.get_envs().any(|(k, _)| k == "TURNSTILE_MAX_LINE_BYTES") {
        cmd.env("TURNSTILE_MAX_LINE_BYTES", LIMIT);
    }
    let mut child = measured(&cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut want = expected.map(|p| File::open(p).unwrap());
    let (mut same, mut len) = (true, 0u64);
    let mut got = vec![0u8; 1 << 16];
    let mut other = vec![0u8; 1 << 16];
    loop {
        let n = stdout.read(&mut got).unwrap();
        if n == 0 {
            break;
        }
        len += n as u64;
        if let Some(want) = want.as_mut()
            && same
        {
            same = want.read_exact(&mut other[..n]).is_ok() && got[..n] == other[..n];
        }
    }
    if let Some(want) = want.as_mut() {
        same = same && want.read(&mut other).unwrap() == 0;
    }
    let code = wait_code(child);
    let (stderr, peak) = split_peak(errors.join().unwrap());
    (code, stderr, peak, same, len)
}

fn assert_bounded(peak: u64, what: &str) {
    assert!(
        peak < PEAK_ALLOWED_KIB,
        "{what}: peak RSS {peak} KiB with a {} MiB line and a {LIMIT}-byte limit",
        LONG >> 20
    );
}

#[test]
fn export_streams_a_line_over_the_limit_and_names_it_from_the_file_store() {
    let env = Env::new();
    let id = uuid::Uuid::new_v4().to_string();
    let (events, offset, len) = stored_sparse_session(&env.host("a"), &id);
    let (code, stderr, peak, same, bytes) =
        run_measured(file_cmd(&env, "a", &["export", &id]), Some(&events));
    assert_eq!(code, 1, "{stderr}");
    assert!(same, "byte for byte ({bytes} bytes exported)");
    assert!(
        stderr.contains(&format!("line 2 (byte {offset}) is {len} bytes")),
        "{stderr}"
    );
    assert_bounded(peak, "export");
}

#[test]
fn import_refuses_a_line_over_the_limit_naming_it_into_either_store() {
    let env = Env::new();
    let nats = env.nats();
    let id = uuid::Uuid::new_v4().to_string();
    let file = env.dir.path().join("offered.jsonl");
    let (offset, len) = write_sparse_journal(&file, &id);
    let file = file.to_str().unwrap().to_owned();
    let named = format!(":2 (byte {offset}): a line of {len} bytes, over the {LIMIT} bytes");

    let (code, stderr, peak, ..) = run_measured(file_cmd(&env, "b", &["import", &file]), None);
    assert_ne!(code, 0);
    assert!(stderr.contains(&named), "{stderr}");
    assert!(!env.host("b").join(&id).exists(), "nothing imported");
    assert_bounded(peak, "import into the file store");

    let (code, stderr, peak, ..) =
        run_measured(env.cmd(&nats.url(), "b", &["import", &file]), None);
    assert_ne!(code, 0);
    assert!(stderr.contains(&named), "{stderr}");
    assert_bounded(peak, "import into the JetStream store");
    let out = env
        .cmd(&nats.url(), "c", &["export", &id])
        .output()
        .unwrap();
    assert!(!out.status.success(), "nothing stored");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no session"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A stored line longer than an exporter's limit (stored under the default one): written out
/// unchanged, named, exit status 1.
#[test]
fn export_from_the_jetstream_store_names_a_stored_line_over_the_limit() {
    let env = Env::new();
    let nats = env.nats();
    let id = uuid::Uuid::new_v4().to_string();
    let file = env.dir.path().join("offered.jsonl");
    let first = format!("{}\n", start_line(&id));
    let long = format!("{}\n", info_line(2, &"y".repeat(600 << 10)));
    let journal = format!("{first}{long}{}\n", info_line(3, "after"));
    fs::write(&file, &journal).unwrap();
    ok(&env
        .cmd(&nats.url(), "a", &["import", file.to_str().unwrap()])
        .output()
        .unwrap());
    let (code, stderr, _, same, _) =
        run_measured(env.cmd(&nats.url(), "b", &["export", &id]), Some(&file));
    assert_eq!(code, 1, "{stderr}");
    assert!(same, "byte for byte");
    assert!(
        stderr.contains(&format!(
            "line 2 (byte {}) is {} bytes",
            first.len(),
            long.len()
        )),
        "{stderr}"
    );
}

/// A journal of 320 MiB (640 lines of half a MiB, under the server's 1 MB messages), well
/// over the child's allowance, into the JetStream store and back: the import holds a window
/// of lines, never the journal. The allowance is [`PUSHED_AHEAD_KIB`]: the read-back's
/// consumer is pushed lines ahead of the reader as far as the server's flow control lets it
/// (about 60 MiB was seen with a debug build), which a 64 MiB allowance only just held.
#[test]
fn a_large_journal_goes_into_the_jetstream_store_and_back_in_bounded_memory() {
    let env = Env::new();
    let nats = env.nats();
    let id = uuid::Uuid::new_v4().to_string();
    let file = env.dir.path().join("large.jsonl");
    let mut out = BufWriter::new(File::create(&file).unwrap());
    writeln!(out, "{}", start_line(&id)).unwrap();
    let body = "z".repeat(512 << 10);
    for n in 0..640 {
        writeln!(out, "{}", info_line(10 + n, &body)).unwrap();
    }
    out.flush().unwrap();
    drop(out);
    let size = fs::metadata(&file).unwrap().len();
    let mut import = env.cmd(&nats.url(), "a", &["import", file.to_str().unwrap()]);
    import.env("TURNSTILE_MAX_LINE_BYTES", (1 << 20).to_string());
    let out = measured(&import).output().unwrap();
    let (stderr, peak) = split_peak(String::from_utf8_lossy(&out.stderr).into_owned());
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        peak < PUSHED_AHEAD_KIB && peak < size >> 10,
        "import: peak RSS {peak} KiB for a {} MiB journal",
        size >> 20
    );
    let mut export = env.cmd(&nats.url(), "b", &["export", &id]);
    export.env("TURNSTILE_MAX_LINE_BYTES", (1 << 20).to_string());
    let (code, stderr, peak, same, _) = run_measured(export, Some(&file));
    assert_eq!(code, 0, "{stderr}");
    assert!(same, "the store holds the journal byte for byte");
    assert!(peak < PUSHED_AHEAD_KIB, "export: peak RSS {peak} KiB");
}
