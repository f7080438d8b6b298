//! Session files stay where they belong: the real binary, run as a user runs it, against
//! planted symlinks and hard links, foreign ephemeral events and a full disk.

use std::fs;
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};

const C1: &str = "4411488c-e7b6-4328-b266-cdf491e0f73c";
const PRECIOUS: &[u8] = b"precious data that must not change\n";

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime/c1-new-session.events.jsonl")
}

fn journal_text() -> String {
    fs::read_to_string(fixture()).unwrap()
}

fn last_id(text: &str) -> String {
    let last = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

/// A state root with c1 as a session; returns (tmp, root, session dir).
fn state() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("state");
    let dir = root.join(C1);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("events.jsonl"), journal_text()).unwrap();
    (tmp, root, dir)
}

fn turnstile(root: &Path, args: &[&str]) -> Output {
    StdCommand::new(assert_cmd::cargo::cargo_bin("turnstile"))
        .arg("--state-dir")
        .arg(root)
        .args(args)
        .env_remove("COPILOT_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every command that writes a session, as a user types it.
const WRITERS: [&[&str]; 3] = [
    &["repair", C1],
    &["repair", C1, "--salvage"],
    &["resume", C1],
];

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_symlinked_writer_lock_is_refused_and_its_target_untouched() {
    let (tmp, root, dir) = state();
    let victim = tmp.path().join("victim");
    fs::write(&victim, PRECIOUS).unwrap();
    symlink(&victim, dir.join("writer.lock")).unwrap();
    for args in WRITERS {
        let out = turnstile(&root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("writer.lock") && err.contains("is a symbolic link"),
            "{args:?}: {err}"
        );
        assert_eq!(fs::read(&victim).unwrap(), PRECIOUS, "{args:?}");
    }
    assert_eq!(
        fs::read_to_string(dir.join("events.jsonl")).unwrap(),
        journal_text()
    );
}

#[test]
fn a_symlinked_journal_is_refused_and_its_target_untouched() {
    let (tmp, root, dir) = state();
    // Outside the session: a journal with a torn tail, which a repair would cut.
    let outside = tmp.path().join("outside.jsonl");
    let torn = format!("{}{{\"type\":\"user.mess", journal_text());
    fs::write(&outside, &torn).unwrap();
    fs::remove_file(dir.join("events.jsonl")).unwrap();
    symlink(&outside, dir.join("events.jsonl")).unwrap();
    for args in WRITERS.iter().chain([&["fsck", C1][..]].iter()) {
        let out = turnstile(&root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("events.jsonl") && err.contains("symbolic link"),
            "{args:?}: {err}"
        );
        assert_eq!(fs::read_to_string(&outside).unwrap(), torn, "{args:?}");
    }
    let names = names_in(tmp.path());
    assert_eq!(names, ["outside.jsonl", "state"], "no side file outside");
}

#[test]
fn a_symlinked_session_directory_is_refused_and_nothing_is_written_through_it() {
    let (tmp, root, dir) = state();
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let torn = format!("{}{{\"type\":\"user.mess", journal_text());
    fs::write(elsewhere.join("events.jsonl"), &torn).unwrap();
    fs::remove_dir_all(&dir).unwrap();
    symlink(&elsewhere, &dir).unwrap();
    for args in WRITERS.iter().chain([&["fsck", C1][..]].iter()) {
        let out = turnstile(&root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert_eq!(names_in(&elsewhere), ["events.jsonl"], "{args:?}");
        assert_eq!(
            fs::read_to_string(elsewhere.join("events.jsonl")).unwrap(),
            torn
        );
    }
    // Not a session of the root either.
    let out = turnstile(&root, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains(C1), "{}", stdout(&out));
}

#[test]
fn a_hard_linked_journal_or_lock_is_not_written() {
    let (tmp, root, dir) = state();
    let outside = tmp.path().join("outside.jsonl");
    let torn = format!("{}{{\"type\":\"user.mess", journal_text());
    fs::write(&outside, &torn).unwrap();
    fs::remove_file(dir.join("events.jsonl")).unwrap();
    fs::hard_link(&outside, dir.join("events.jsonl")).unwrap();
    for args in WRITERS {
        let out = turnstile(&root, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("2 hard links"), "{args:?}: {err}");
        assert_eq!(fs::read_to_string(&outside).unwrap(), torn, "{args:?}");
    }

    let (tmp, root, dir) = state();
    let victim = tmp.path().join("victim");
    fs::write(&victim, PRECIOUS).unwrap();
    fs::hard_link(&victim, dir.join("writer.lock")).unwrap();
    let out = turnstile(&root, &["repair", C1]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("writer.lock"), "{}", stderr(&out));
    assert_eq!(fs::read(&victim).unwrap(), PRECIOUS);
}

/// `20261201T074512.345Z`: the stamp side files carry, `ms` milliseconds from now.
fn stamp_in(ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let t = now.as_millis() as i64 + ms;
    let (secs, milli) = (t.div_euclid(1000), t.rem_euclid(1000));
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[test]
fn side_file_names_planted_as_symlinks_are_never_opened() {
    let (tmp, root, dir) = state();
    let victim = tmp.path().join("victim");
    fs::write(&victim, PRECIOUS).unwrap();
    let journal = dir.join("events.jsonl");
    let good = journal_text();
    fs::write(&journal, format!("{good}{{\"type\":\"user.mess")).unwrap();
    // Every name the torn side file could get during the next three seconds is a link.
    for ms in -50..3000 {
        let name = format!("events.jsonl.torn-{}", stamp_in(ms));
        let _ = symlink(&victim, dir.join(name));
    }
    let out = turnstile(&root, &["repair", C1]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(&victim).unwrap(), PRECIOUS);
    assert_eq!(fs::read_to_string(&journal).unwrap(), good);
    let side: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.is_symlink() && p.to_string_lossy().contains(".torn-"))
        .collect();
    assert_eq!(side.len(), 1, "{side:?}");
    assert_eq!(
        fs::read_to_string(&side[0]).unwrap(),
        "{\"type\":\"user.mess"
    );
}

fn idle_line(id: &str, parent: &str) -> String {
    format!(
        r#"{{"type":"session.idle","data":{{}},"id":"{id}","timestamp":"2026-11-29T14:34:45.000Z","parentId":"{parent}"}}"#
    )
}

#[test]
fn a_foreign_ephemeral_last_line_is_reported_moved_aside_and_resume_works() {
    let (_tmp, root, dir) = state();
    let journal = dir.join("events.jsonl");
    let good = journal_text();
    let parent = last_id(&good);
    let idle = idle_line("11111111-2222-4333-8444-555555555555", &parent);
    fs::write(&journal, format!("{good}{idle}\n")).unwrap();

    let out = turnstile(&root, &["fsck", C1, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["state"], "torn-tail");
    assert_eq!(report["problems"][0]["kind"], "ephemeral-tail");
    assert_eq!(report["problems"][0]["line"], 22);

    let out = turnstile(&root, &["repair", C1]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ephemeral"), "{}", stdout(&out));
    assert_eq!(fs::read_to_string(&journal).unwrap(), good);
    let side: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".torn-"))
        .collect();
    assert_eq!(fs::read_to_string(&side[0]).unwrap(), format!("{idle}\n"));
    assert!(turnstile(&root, &["fsck", C1]).status.success());

    // Opening for append does the same: plant it again and resume directly.
    fs::write(&journal, format!("{good}{idle}\n")).unwrap();
    let out = turnstile(&root, &["resume", C1]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = fs::read_to_string(&journal).unwrap();
    assert!(after.starts_with(&good) && !after.contains("session.idle"));
    let resume: serde_json::Value =
        serde_json::from_str(after[good.len()..].lines().next().unwrap()).unwrap();
    assert_eq!(resume["type"], "session.resume");
    assert_eq!(resume["parentId"], parent.as_str());
    assert!(turnstile(&root, &["audit", C1]).status.success());
}

#[test]
fn ephemeral_events_in_the_middle_are_reported_with_lines_and_kept() {
    let (_tmp, root, dir) = state();
    let journal = dir.join("events.jsonl");
    let mut lines: Vec<String> = journal_text().lines().map(str::to_owned).collect();
    // Line 5 becomes an idle the next event chains to.
    let parent = last_id(&lines[..4].join("\n"));
    let idle_id = "11111111-2222-4333-8444-555555555555";
    let mut next: serde_json::Value = serde_json::from_str(&lines[4]).unwrap();
    next["parentId"] = serde_json::json!(idle_id);
    lines[4] = serde_json::to_string(&next).unwrap();
    lines.insert(4, idle_line(idle_id, &parent));
    let text = lines.join("\n") + "\n";
    fs::write(&journal, &text).unwrap();

    let out = turnstile(&root, &["fsck", C1]);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout(&out);
    assert!(
        report.contains("ephemeral-events")
            && report.contains("line 5 ")
            && report.contains("session.idle"),
        "{report}"
    );
    let out = turnstile(&root, &["repair", C1]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("line(s) 5") && stdout(&out).contains("kept"),
        "{}",
        stdout(&out)
    );
    assert_eq!(fs::read_to_string(&journal).unwrap(), text, "nothing moved");
    let out = turnstile(&root, &["resume", C1]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Runs turnstile with writes capped at `limit` bytes per file (EFBIG past it): a full disk
/// without root.
fn turnstile_with_file_limit(root: &Path, args: &[&str], limit: u64) -> Output {
    let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("turnstile"));
    cmd.arg("--state-dir")
        .arg(root)
        .args(args)
        .env_remove("COPILOT_HOME")
        .stdin(Stdio::null());
    // SAFETY: only async-signal-safe calls (setrlimit, signal) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Past the limit write(2) fails with EFBIG instead of killing the process.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd.output().unwrap()
}

fn side_files(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.starts_with("events.jsonl."))
        .collect()
}

#[test]
fn a_repair_that_cannot_write_its_side_file_leaves_none_and_changes_nothing() {
    let (_tmp, root, dir) = state();
    let journal = dir.join("events.jsonl");
    // A torn tail of 8 KiB: its side file cannot be written under a 4 KiB limit.
    let torn = format!("{}{}", journal_text(), "x".repeat(8192));
    fs::write(&journal, &torn).unwrap();
    let out = turnstile_with_file_limit(&root, &["repair", C1], 4096);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("too large"), "{}", stderr(&out));
    assert_eq!(side_files(&dir), Vec::<String>::new());
    assert_eq!(fs::read_to_string(&journal).unwrap(), torn);

    // Salvage rewrites the whole journal (18 KB) into a temporary file: that fails too.
    let damaged = format!("{}garbage\n{}", journal_text(), journal_text());
    fs::write(&journal, &damaged).unwrap();
    let out = turnstile_with_file_limit(&root, &["repair", C1, "--salvage"], 4096);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(side_files(&dir), Vec::<String>::new());
    assert_eq!(fs::read_to_string(&journal).unwrap(), damaged);

    // With room again the same repairs work.
    let out = turnstile(&root, &["repair", C1, "--salvage"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_repair_on_a_full_tmpfs_leaves_no_side_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    fs::create_dir(&mnt).unwrap();
    let mounted = StdCommand::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!(
            "SKIP a_repair_on_a_full_tmpfs_leaves_no_side_file: cannot mount a tmpfs here (needs root)"
        );
        return;
    }
    let root = mnt.join("state");
    let dir = root.join(C1);
    fs::create_dir_all(&dir).unwrap();
    let journal = dir.join("events.jsonl");
    // 9 KB of journal, a 28 KB torn tail and a page each for the lock and the marker leave
    // 16 KiB of the 64: the 28 KB side file cannot fit.
    let torn = format!("{}{}", journal_text(), "x".repeat(28 * 1024));
    fs::write(&journal, &torn).unwrap();
    let out = turnstile(&root, &["repair", C1]);
    let unmount = || {
        let _ = StdCommand::new("umount").arg(&mnt).status();
    };
    let names = side_files(&dir);
    let after = fs::read_to_string(&journal).unwrap();
    unmount();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("No space left"), "{}", stderr(&out));
    assert_eq!(names, Vec::<String>::new());
    assert_eq!(after, torn);
}
