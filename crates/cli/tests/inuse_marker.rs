//! The Copilot CLI's in-use marker as a user meets it: a live process's `inuse.<pid>.lock`
//! makes `turnstile resume` and `repair` refuse, naming the pid; after that process is killed
//! with SIGKILL its marker is stale and the next command removes it and proceeds.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const C1: &str = "4411488c-e7b6-4328-b266-cdf491e0f73c";

fn turnstile(root: &Path, args: &[&str]) -> Output {
    Command::new(assert_cmd::cargo::cargo_bin("turnstile"))
        .arg("--state-dir")
        .arg(root)
        .args(args)
        .env_remove("COPILOT_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn state() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("state");
    let dir = root.join(C1);
    fs::create_dir_all(&dir).unwrap();
    fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/copilot-runtime/c1-new-session.events.jsonl"),
        dir.join("events.jsonl"),
    )
    .unwrap();
    (tmp, root, dir)
}

#[test]
fn a_live_marker_refuses_and_a_killed_holders_marker_is_stale() {
    let (_tmp, root, dir) = state();
    // A real process holding the session the way the Copilot CLI does: a marker with its pid.
    let mut holder = Command::new("sleep").arg("60").spawn().unwrap();
    let marker = dir.join(format!("inuse.{}.lock", holder.id()));
    fs::write(&marker, format!("{}\n", holder.id())).unwrap();
    let before = fs::read(dir.join("events.jsonl")).unwrap();
    for args in [&["resume", C1][..], &["repair", C1]] {
        let out = turnstile(&root, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("in use by another process")
                && err.contains(&format!("pid {}", holder.id()))
                && err.contains("inuse."),
            "{args:?}: {err}"
        );
    }
    assert_eq!(fs::read(dir.join("events.jsonl")).unwrap(), before);
    assert!(marker.exists());
    assert!(
        !dir.join(format!("inuse.{}.lock", std::process::id()))
            .exists(),
        "a refused command leaves no marker of its own"
    );

    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    let out = turnstile(&root, &["resume", C1]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: removing a stale in-use marker") && !err.contains("WARN"),
        "the removal is told in words, not as a log line: {err}"
    );
    assert!(!marker.exists(), "stale marker removed");
    let left: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("inuse."))
        .collect();
    assert!(
        left.is_empty(),
        "turnstile's own marker is gone after exit: {left:?}"
    );
}

#[test]
fn a_marker_older_than_its_live_process_is_a_reused_pid() {
    let (_tmp, root, dir) = state();
    let holder = Command::new("sleep").arg("60").spawn().unwrap();
    let marker = dir.join(format!("inuse.{}.lock", holder.id()));
    fs::write(&marker, format!("{}\n", holder.id())).unwrap();
    // Written an hour before the process started: another process had the pid then.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(&marker)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let out = turnstile(&root, &["repair", C1]);
    let mut holder = holder;
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!marker.exists());
}
