//! `turnstile report` opened in a real headless Chromium: the page loads without a console
//! message, its DOM shows the fixture's turns and tools, and hostile journal text stays text.
//!
//! Chromium is Debian's `chromium` (`apt-get install -y chromium`; `.ci/run` installs it), or
//! the binary `TURNSTILE_CHROMIUM` names.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::Duration;

use assert_cmd::Command;

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn turnstile() -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.current_dir(repo()).env_remove("COPILOT_HOME");
    cmd
}

/// Writes the report of `journal` into `dir` and returns its path.
pub(crate) fn report(journal: &Path, dir: &Path) -> PathBuf {
    report_printing(journal, dir).0
}

/// Writes the report of `journal` into `dir`; returns its path and what the command printed.
pub(crate) fn report_printing(journal: &Path, dir: &Path) -> (PathBuf, String) {
    let page = dir.join("report.html");
    let out = turnstile()
        .arg("report")
        .arg(journal)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (page, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What Chromium made of a page: the DOM after load and every console message.
pub(crate) struct Loaded {
    pub(crate) dom: String,
    pub(crate) console: Vec<String>,
}

fn chromium_binary() -> String {
    std::env::var("TURNSTILE_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// Loads `page` in headless Chromium with its own profile, `--dump-dom` (and a screenshot when
/// `screenshot` is given); console messages come from Chromium's log on stderr.
pub(crate) fn load(page: &Path, screenshot: Option<&Path>) -> Loaded {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Process::new(chromium_binary());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
    ])
    .args([
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2400",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()));
    match screenshot {
        Some(png) => cmd.arg(format!("--screenshot={}", png.display())),
        None => cmd.arg("--dump-dom"),
    };
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let child = cmd
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): install Chromium with `apt-get install -y chromium`",
                chromium_binary()
            )
        });
    let out = wait_bounded(child, Duration::from_secs(300));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    Loaded {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_owned)
            .collect(),
    }
}

/// Waits for Chromium, killing it if it hangs (a guard against a stuck browser, not a timing
/// assertion: the bound is minutes).
fn wait_bounded(child: std::process::Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            // SAFETY: plain FFI call on a pid this test spawned and has not reaped yet.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    let _ = guard.join();
    out
}

/// Elements of the page: the serialized DOM writes text `<` as `&lt;`, so a `<tag` in the dump
/// is an element.
pub(crate) fn elements(dom: &str, open: &str) -> usize {
    dom.matches(open).count()
}

/// The values of `attr="..."` on elements that start with `open`.
pub(crate) fn attr_values(dom: &str, open: &str, attr: &str) -> Vec<String> {
    let key = format!("{attr}=\"");
    dom.match_indices(open)
        .filter_map(|(i, _)| {
            let tag = &dom[i..i + dom[i..].find('>')?];
            let start = tag.find(&key)? + key.len();
            let len = tag[start..].find('"')?;
            Some(tag[start..start + len].to_owned())
        })
        .collect()
}

#[test]
fn the_console_check_sees_a_script_error() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><title>x</title><script>console.error('seen'); missing();</script>",
    )
    .unwrap();
    let loaded = load(&page, None);
    assert!(
        loaded.console.iter().any(|l| l.contains("seen")),
        "{:?}",
        loaded.console
    );
}

#[test]
fn a_fixture_report_loads_cleanly_and_shows_its_turns_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (page, printed) =
        report_printing(&repo().join("fixtures/multi-turn/events.jsonl"), dir.path());
    assert!(
        printed.contains(": 8 turns, 1 lane, 0 violations, "),
        "{printed}"
    );
    let loaded = load(&page, None);
    assert!(
        loaded.console.is_empty(),
        "console: {:?}",
        first(&loaded.console)
    );
    let dom = &loaded.dom;
    assert_eq!(elements(dom, "<section class=\"turn"), 8, "turn count");
    let mut tools = attr_values(dom, "<li class=\"call", "data-tool");
    assert_eq!(tools.len(), 8, "{tools:?}");
    tools.sort();
    tools.dedup();
    assert_eq!(tools, ["bash", "create", "edit", "glob", "grep", "view"]);
    // The audit at the top agrees.
    assert!(dom.contains("<tr id=\"audit-turns\"><th>LLM calls</th><td class=\"n\">8</td>"));
    assert!(dom.contains("<tr id=\"audit-violations\"><th>violations</th><td class=\"n\">0</td>"));
    assert_eq!(
        attr_values(dom, "<div class=\"mark", "data-kind")
            .iter()
            .filter(|k| *k == "resume")
            .count(),
        1
    );
    assert_eq!(elements(dom, "<details class=\"result\""), 8);
    // The loop records each call's output tokens, so the chart has a bar per turn.
    assert!(dom.contains("id=\"tokens-chart\""));
    assert!(dom.contains("data-bars=\"8\""), "tokens chart");
    // Both axes are labelled: the turns under the bars, the token counts beside them.
    let turn_ticks = attr_values(dom, "<text class=\"axis tick-x\"", "x");
    assert!(turn_ticks.len() >= 6, "{turn_ticks:?}");
    assert_eq!(
        attr_values(dom, "<text class=\"axis tick-y\"", "y").len(),
        3
    );
    assert!(dom.contains("id=\"tokens-x-title\"") && dom.contains("id=\"tokens-y-title\""));
    // No script and nothing fetched: the only resources are inline.
    assert_eq!(elements(dom, "<script"), 0);
    assert!(!dom.contains("http://") && !dom.contains("https://"));

    let png = dir.path().join("report.png");
    let shot = load(&page, Some(&png));
    assert!(
        shot.console.is_empty(),
        "console: {:?}",
        first(&shot.console)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000);
}

#[test]
fn crashes_errors_aborts_and_denials_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = |fixture: &str| {
        let sub = dir.path().join(fixture);
        std::fs::create_dir_all(&sub).unwrap();
        let page = report(
            &repo().join("fixtures").join(fixture).join("events.jsonl"),
            &sub,
        );
        let html = std::fs::read_to_string(page).unwrap();
        let mut kinds = attr_values(&html, "<div class=\"mark", "data-kind");
        kinds.extend(attr_values(&html, "<li class=\"note", "data-kind"));
        (html, kinds)
    };
    let (html, marks) = kinds("crash-resume");
    assert!(marks.contains(&"crash".to_owned()), "{marks:?}");
    assert!(html.contains("<tr id=\"audit-crashes\" class=\"bad\">"));
    let (_, marks) = kinds("model-error");
    assert!(marks.contains(&"error".to_owned()), "{marks:?}");
    let (_, marks) = kinds("abort");
    assert!(marks.contains(&"abort".to_owned()), "{marks:?}");
    let (html, marks) = kinds("permission-denied");
    assert!(
        marks.iter().filter(|k| *k == "permission").count() >= 3,
        "{marks:?}"
    );
    assert!(html.contains("denied-by-rules (shell(rm))"));
    let (html, marks) = kinds("hook-rewrite");
    assert!(marks.contains(&"hook".to_owned()), "{marks:?}");
    assert!(html.contains("preToolUse hook ran"));
}

/// One journal line, chained to `parent`.
pub(crate) fn line(
    kind: &str,
    data: serde_json::Value,
    parent: &mut Option<String>,
    agent: Option<&str>,
    ms: u64,
) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    let mut event = serde_json::json!({
        "type": kind,
        "data": data,
        "id": id,
        "timestamp": format!("2026-11-29T16:33:{:02}.{:03}Z", ms / 1000, ms % 1000),
        "parentId": parent,
    });
    if let Some(agent) = agent {
        event["agentId"] = agent.into();
    }
    *parent = Some(id);
    format!("{event}\n")
}

const HOSTILE: &str = "</script><script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"></pre></details></section><b id=\"injected\">x</b><style>body{display:none}</style>&amp;";

#[test]
fn hostile_journal_text_stays_text_and_sub_agents_get_lanes() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("events.jsonl");
    let mut p = None;
    let mut text = String::new();
    text += &line(
        "session.start",
        serde_json::json!({"sessionId": "5e55a0e1-0000-4000-8000-0000000000aa", "version": 1, "producer": HOSTILE, "copilotVersion": "1", "startTime": "2026-11-29T16:33:00.000Z", "selectedModel": HOSTILE, "context": {"cwd": HOSTILE}}),
        &mut p,
        None,
        0,
    );
    text += &line(
        "user.message",
        serde_json::json!({"content": HOSTILE}),
        &mut p,
        None,
        1,
    );
    text += &line(
        "assistant.turn_start",
        serde_json::json!({"turnId": HOSTILE}),
        &mut p,
        None,
        2,
    );
    text += &line(
        "assistant.message",
        serde_json::json!({"messageId": "m1", "content": HOSTILE, "outputTokens": 7, "toolRequests": [{"toolCallId": "c1", "name": HOSTILE, "arguments": {"x": HOSTILE}}]}),
        &mut p,
        None,
        40,
    );
    text += &line(
        "tool.execution_start",
        serde_json::json!({"toolCallId": "c1", "toolName": HOSTILE, "arguments": {"x": HOSTILE}}),
        &mut p,
        None,
        41,
    );
    // A sub-agent's turn inside the main turn's tool call, in a lane of its own.
    text += &line(
        "assistant.turn_start",
        serde_json::json!({"turnId": "0"}),
        &mut p,
        Some(HOSTILE),
        42,
    );
    text += &line(
        "assistant.message",
        serde_json::json!({"messageId": "m2", "content": HOSTILE, "outputTokens": 3}),
        &mut p,
        Some(HOSTILE),
        50,
    );
    text += &line(
        "assistant.turn_end",
        serde_json::json!({"turnId": "0"}),
        &mut p,
        Some(HOSTILE),
        51,
    );
    text += &line(
        "tool.execution_complete",
        serde_json::json!({"toolCallId": "c1", "success": true, "result": {"content": HOSTILE}}),
        &mut p,
        None,
        90,
    );
    text += &line(
        "session.error",
        serde_json::json!({"errorType": HOSTILE, "message": HOSTILE}),
        &mut p,
        None,
        91,
    );
    text += &line(
        "assistant.turn_end",
        serde_json::json!({"turnId": HOSTILE}),
        &mut p,
        None,
        92,
    );
    std::fs::write(&journal, text).unwrap();

    let page = report(&journal, dir.path());
    let loaded = load(&page, None);
    assert!(
        loaded.console.is_empty(),
        "console: {:?}",
        first(&loaded.console)
    );
    let dom = &loaded.dom;
    assert_eq!(elements(dom, "<script"), 0, "{dom}");
    assert_eq!(elements(dom, "<img"), 0);
    assert_eq!(elements(dom, "<style"), 1, "only the page's own style");
    assert!(!dom.contains("<b id=\"injected\""));
    assert!(!dom.contains("<title>pwned"));
    // The text is all there, as text.
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;"));
    assert_eq!(elements(dom, "<section class=\"turn"), 2);
    assert!(dom.contains("data-lanes=\"2\""));
    let columns = attr_values(dom, "<section class=\"turn", "style");
    assert_eq!(
        columns,
        ["grid-column:2", "grid-column:1"],
        "the sub-agent's turn ends first"
    );
    assert!(dom.contains("id=\"tokens-chart\""));
}

/// The first few console lines, enough to see what went wrong.
pub(crate) fn first(lines: &[String]) -> &[String] {
    &lines[..lines.len().min(3)]
}
