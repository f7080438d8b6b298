//! `turnstile report` on long and eventful sessions, looked at in headless Chromium: the
//! overview strip of the 2,002-turn fixture and its links, agents' names on the lanes, a model
//! switch, an error and a compaction marked and linked, and a scale that one long turn does not
//! flatten.

use std::collections::BTreeSet;
use std::path::Path;

use super::report_browser::{
    attr_values, elements, first, line, load, repo, report_printing, turnstile,
};

/// Every `href="#x"` of the DOM and whether an element has `id="x"`: the links that land
/// nowhere.
fn dangling_links(dom: &str) -> (usize, Vec<String>) {
    let ids: BTreeSet<String> = dom
        .match_indices(" id=\"")
        .filter_map(|(i, m)| {
            let rest = &dom[i + m.len()..];
            Some(rest[..rest.find('"')?].to_owned())
        })
        .collect();
    let links: Vec<String> = dom
        .match_indices("href=\"#")
        .filter_map(|(i, m)| {
            let rest = &dom[i + m.len()..];
            Some(rest[..rest.find('"')?].to_owned())
        })
        .collect();
    let dangling = links
        .iter()
        .filter(|l| !ids.contains(*l))
        .cloned()
        .collect();
    (links.len(), dangling)
}

/// The report of `journal` loaded in Chromium: what the command printed, the page's bytes and
/// the DOM, after checking the console stayed silent.
fn looked_at(journal: &Path, dir: &Path) -> (String, usize, String) {
    let (page, printed) = report_printing(journal, dir);
    let bytes = std::fs::metadata(&page).unwrap().len() as usize;
    let loaded = load(&page, None);
    assert!(
        loaded.console.is_empty(),
        "console: {:?}",
        first(&loaded.console)
    );
    (printed, bytes, loaded.dom)
}

/// The page of the 2,002-turn fixture: recorded in `docs/report.md` ("Bounded memory and
/// size"), and checked here so that it cannot grow unnoticed.
const LONG_SESSION_PAGE_MAX_BYTES: usize = 5 << 20;

#[test]
fn the_long_session_has_an_overview_whose_every_link_lands() {
    let dir = tempfile::tempdir().unwrap();
    let journal = repo().join("fixtures/long-session/events.jsonl");
    let (printed, bytes, dom) = looked_at(&journal, dir.path());
    assert!(
        printed.contains(": 2002 turns, 1 lane, 0 violations, "),
        "{printed}"
    );
    assert!(bytes < LONG_SESSION_PAGE_MAX_BYTES, "{bytes} bytes");
    // 2,002 turns in 334 bars of 6, each a link to its first turn.
    assert!(dom.contains("id=\"overview-strip\""));
    assert!(dom.contains("data-bars=\"334\""), "strip bars");
    let bar_links = dom.matches("<a href=\"#turn-").count();
    assert!(bar_links >= 334, "{bar_links}");
    // The resume and both shutdowns, and both prompts, are on their rows and in the list.
    let rows = attr_values(&dom, "<rect class=\"mk", "data-row");
    assert!(rows.iter().any(|r| r == "resume"), "{rows:?}");
    assert!(rows.iter().any(|r| r == "prompt"), "{rows:?}");
    assert!(dom.contains("<p data-row=\"resume\"><b>resumes, shutdowns</b> 3:"));
    let (links, dangling) = dangling_links(&dom);
    assert!(links > 334, "{links}");
    assert!(dangling.is_empty(), "links to nothing: {dangling:?}");
    // The cards are all there, behind the overview.
    assert_eq!(elements(&dom, "<section class=\"turn"), 2002);
    let before_cards = dom.find("<section class=\"turn").unwrap();
    assert!(dom.find("id=\"overview-strip\"").unwrap() < before_cards);

    let png = dir.path().join("long-session.png");
    let shot = load(&dir.path().join("report.html"), Some(&png));
    assert!(
        shot.console.is_empty(),
        "console: {:?}",
        first(&shot.console)
    );
    let image = std::fs::read(&png).unwrap();
    assert!(image.starts_with(b"\x89PNG\r\n\x1a\n") && image.len() > 10_000);
}

#[test]
fn with_few_turns_drawn_the_overview_links_only_to_drawn_turns() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let out = turnstile()
        .arg("report")
        .arg(repo().join("fixtures/long-session/events.jsonl"))
        .args(["--max-turns", "10", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(": 2002 turns (10 drawn; --max-turns draws more), 1 lane, "),
        "{printed}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(elements(&html, "<section class=\"turn"), 10);
    // Still the whole session on the strip, but only the first bars are links.
    assert!(html.contains("data-bars=\"334\""));
    assert_eq!(
        html.matches("<a href=\"#turn-").count(),
        2,
        "bars of turns 1-6 and 7-12"
    );
    // The second shutdown's marker still links: marks are always drawn.
    assert!(html.contains("line 10014: shutdown (routine)</a>"));
    let (_, dangling) = dangling_links(&html);
    assert!(dangling.is_empty(), "links to nothing: {dangling:?}");
}

#[test]
fn sub_agent_lanes_carry_their_agents_names() {
    let dir = tempfile::tempdir().unwrap();
    let journal = repo().join("fixtures/subagents/events.jsonl");
    let (printed, _, dom) = looked_at(&journal, dir.path());
    assert!(printed.contains(", 3 lanes, "), "{printed}");
    let heads: Vec<&str> = dom
        .match_indices("<div class=\"lane-head\"")
        .map(|(i, _)| {
            let rest = &dom[i..];
            &rest[rest.find('>').unwrap() + 1..rest.find("</div>").unwrap()]
        })
        .collect();
    assert_eq!(heads.len(), 3, "{heads:?}");
    assert_eq!(heads[0], "main agent");
    // The task call's name, the agent's kind from `subagent.started`, and the id it is
    // recorded under.
    assert_eq!(
        heads[1],
        "notes (Explore Agent) <span class=\"clipped\">call_sa_01</span>"
    );
    assert_eq!(
        heads[2],
        "counter (General Purpose Agent) <span class=\"clipped\">call_sa_03</span>"
    );
    // Its start is marked under its name, once.
    assert!(dom.contains("<span class=\"clipped\">notes (Explore Agent)</span> sub-agent started"));
}

/// A session of `turns` turns of `ms` milliseconds each (with `tokens` output tokens), with
/// `between(i)` events after turn `i`.
struct Journal {
    text: String,
    parent: Option<String>,
    ms: u64,
    turns: u64,
}

impl Journal {
    fn new(model: &str) -> Self {
        let mut j = Journal {
            text: String::new(),
            parent: None,
            ms: 0,
            turns: 0,
        };
        j.event(
            "session.start",
            serde_json::json!({"sessionId": "5e55a0e1-0000-4000-8000-0000000000bb", "version": 1, "producer": "turnstile", "copilotVersion": "1", "startTime": "2026-11-29T16:33:00.000Z", "selectedModel": model}),
            1,
        );
        j.event("user.message", serde_json::json!({"content": "go"}), 1);
        j
    }

    fn event(&mut self, kind: &str, data: serde_json::Value, after_ms: u64) {
        self.ms += after_ms;
        self.text += &line(kind, data, &mut self.parent, None, self.ms);
    }

    /// A turn of `ms` milliseconds; `inside` adds events before its end.
    fn turn(&mut self, ms: u64, tokens: u64, inside: &[(&str, serde_json::Value)]) {
        let id = self.turns.to_string();
        self.turns += 1;
        self.event("assistant.turn_start", serde_json::json!({"turnId": id}), 1);
        self.event(
            "assistant.message",
            serde_json::json!({"messageId": format!("m{id}"), "content": "done", "outputTokens": tokens}),
            ms / 2,
        );
        for (kind, data) in inside {
            self.event(kind, data.clone(), 0);
        }
        self.event(
            "assistant.turn_end",
            serde_json::json!({"turnId": id}),
            ms - ms / 2,
        );
    }

    fn write(&self, dir: &Path) -> std::path::PathBuf {
        let path = dir.join("events.jsonl");
        std::fs::write(&path, &self.text).unwrap();
        path
    }
}

/// The text of the element that starts at the first `open`.
fn text_of<'a>(dom: &'a str, open: &str) -> &'a str {
    let start = dom.find(open).unwrap_or_else(|| panic!("no {open}"));
    let rest = &dom[start..];
    let end = rest.find("</div>").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn a_model_switch_an_error_and_a_compaction_are_marked_and_the_overview_links_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::new("gpt-4.1");
    j.turn(100, 10, &[]);
    j.event(
        "session.model_change",
        serde_json::json!({"previousModel": "gpt-4.1", "newModel": "claude-sonnet-4.5"}),
        1,
    );
    j.turn(
        100,
        10,
        &[(
            "session.error",
            serde_json::json!({"errorType": "http", "message": "upstream 502", "statusCode": 502}),
        )],
    );
    j.event(
        "session.compaction_complete",
        serde_json::json!({"success": true, "messagesRemoved": 12, "tokensRemoved": 3400}),
        1,
    );
    j.turn(100, 10, &[]);
    let (_, _, dom) = looked_at(&j.write(dir.path()), dir.path());

    // The switch: in the header, and a mark of its own on the timeline, between turns 1 and 2.
    assert!(
        dom.contains("<span id=\"models\">models <b>gpt-4.1 \u{2192} claude-sonnet-4.5</b></span>"),
        "header"
    );
    let switch = text_of(&dom, "<div class=\"mark mark-model-change\"");
    assert!(
        switch.contains("model gpt-4.1 \u{2192} claude-sonnet-4.5"),
        "{switch}"
    );
    let switch_at = dom.find("mark-model-change\"").unwrap();
    assert!(dom.find("id=\"turn-1\"").unwrap() < switch_at);
    assert!(switch_at < dom.find("id=\"turn-2\"").unwrap());
    let compaction = text_of(&dom, "<div class=\"mark mark-compaction\"");
    assert!(
        compaction.contains("compaction: 12 messages (3400 tokens) summarised"),
        "{compaction}"
    );

    // Each on its row of the strip, a link to where it is drawn.
    let switch_id = attr_values(&dom, "<div class=\"mark mark-model-change\"", "id");
    let compaction_id = attr_values(&dom, "<div class=\"mark mark-compaction\"", "id");
    for (row, target) in [
        ("model-change", switch_id[0].as_str()),
        ("compaction", compaction_id[0].as_str()),
        ("problem", "turn-2"),
    ] {
        let marker =
            format!("<a href=\"#{target}\"><rect class=\"mk mk-{row}\" data-row=\"{row}\"");
        assert!(dom.contains(&marker), "no {marker}");
    }
    // And in the list under the strip.
    assert!(
        dom.contains("<a href=\"#turn-2\">turn 2, line "),
        "error jump"
    );
    assert!(dom.contains("http (HTTP 502): upstream 502</a>"));
    let (links, dangling) = dangling_links(&dom);
    assert!(links >= 6, "{links}");
    assert!(dangling.is_empty(), "links to nothing: {dangling:?}");
}

#[test]
fn one_long_turn_does_not_shrink_the_others_to_slivers() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::new("gpt-4.1");
    for i in 0..21 {
        if i == 7 {
            j.turn(2400, 5000, &[]);
        } else {
            j.turn(100, 50, &[]);
        }
    }
    let (_, _, dom) = looked_at(&j.write(dir.path()), dir.path());
    let widths = attr_values(&dom, "<div class=\"bar", "style");
    assert_eq!(widths.len(), 21);
    // Every 100 ms turn fills its track (the scale stops at the 95th percentile, 100 ms)...
    for (i, w) in widths.iter().enumerate().filter(|(i, _)| *i != 7) {
        assert_eq!(w, "width:100.00%", "turn {}", i + 1);
    }
    // ...and the 2.4 s turn is marked as beyond it.
    assert_eq!(elements(&dom, "<div class=\"bar over\""), 1);
    assert!(dom.contains("total 2400 ms, beyond the scale"));
    assert!(dom.contains("against 100 ms (the 95th percentile; longer turns, up to 2400 ms"));
    // The token chart does the same with its bars: turn 8's 5000 tokens are capped.
    assert!(dom.contains("data-top=\"50\""));
    assert!(dom.contains("turn 8: 5000 tokens, above the scale"));
    assert!(dom.contains("height=\"120.00\"><title>turn 1: 50 tokens</title>"));
}
