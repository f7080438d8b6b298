//! `turnstile report` as a command: `--last`, where the page goes, and failures that leave
//! nothing behind.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const C1: &str = "4411488c-e7b6-4328-b266-cdf491e0f73c";

fn recording() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/copilot-runtime/c1-new-session.events.jsonl")
}

fn turnstile(state: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.current_dir(cwd)
        .arg("--state-dir")
        .arg(state)
        .env_remove("COPILOT_HOME");
    cmd
}

#[test]
fn last_reports_the_newest_session_into_report_html_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    fs::create_dir_all(state.join(C1)).unwrap();
    fs::copy(recording(), state.join(C1).join("events.jsonl")).unwrap();
    let out = turnstile(&state, tmp.path())
        .args(["report", "--last"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("report.html: 3 turns, 1 lane, 0 violations"),
        "{stdout}"
    );
    let page = fs::read_to_string(tmp.path().join("report.html")).unwrap();
    assert!(page.contains(&format!("<span id=\"session-id\">{C1}</span>")));
    // The runtime records no per-turn token count, only the shutdown's totals.
    assert!(page.contains("id=\"tokens-none\""));
    assert!(page.contains("gpt-4.1 <b>3</b> calls, <b>3006</b> input, <b>60</b> output tokens"));
    let leftovers: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        // The page is written through a temporary file beside it (`.report.html.<pid>.<n>.tmp`).
        .filter(|e| e.file_name() != "report.html" && e.file_name() != "state")
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn an_unwritable_destination_is_a_clear_error_and_an_old_page_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no/such/dir/report.html");
    let out = turnstile(tmp.path(), tmp.path())
        .arg("report")
        .arg(recording())
        .arg("-o")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot create") && stderr.contains("no/such/dir"),
        "{stderr}"
    );

    // A journal that cannot be read leaves the previous page as it was.
    let page = tmp.path().join("report.html");
    fs::write(&page, "previous").unwrap();
    let out = turnstile(tmp.path(), tmp.path())
        .arg("report")
        .arg(tmp.path().join("absent.jsonl"))
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(fs::read_to_string(&page).unwrap(), "previous");
}
