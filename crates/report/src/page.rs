//! The page around the timeline: head (styles, a policy that forbids scripts and every
//! fetch), the session's facts, the audit's counts and violations, the token chart, the
//! overview, the lanes.

use std::fmt::{self, Write};

use turnstile_replay::AuditReport;

use crate::chart::write_tokens_chart;
use crate::escape::text;
use crate::overview::write_overview;
use crate::stats::Stats;
use crate::timeline::SessionFacts;

/// Violations listed with their line; the rest are counted by kind.
pub const VIOLATIONS_LISTED: usize = 50;

/// No script may run and nothing may be fetched: the page is one file, and if journal text
/// ever slipped past the escaping it still could not act.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// Writes everything before the timeline's items.
pub fn write_head(
    out: &mut impl Write,
    facts: &SessionFacts,
    audit: &AuditReport,
    stats: &Stats,
) -> fmt::Result {
    let id = facts.session_id.as_deref().unwrap_or("(no session.start)");
    writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
    )?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">"
    )?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(out, "<title>session {}</title>", text(id))?;
    writeln!(
        out,
        "<style>\n{}</style>\n</head>\n<body>",
        include_str!("style.css")
    )?;
    writeln!(
        out,
        "<header id=\"session\">\n<h1>session <span id=\"session-id\">{}</span></h1>",
        text(id)
    )?;
    write!(out, "<p class=\"facts\">")?;
    let fact = |out: &mut dyn Write, name: &str, value: &Option<String>| -> fmt::Result {
        match value {
            Some(v) => write!(out, "<span>{name} <b>{}</b></span>", text(v)),
            None => Ok(()),
        }
    };
    fact(out, "written by", &facts.producer)?;
    if facts.models.len() > 1 {
        // Every switch, in order: the model of the last turn alone would hide them.
        let models: Vec<String> = facts.models.iter().map(|m| text(m).to_string()).collect();
        write!(
            out,
            "<span id=\"models\">models <b>{}</b></span>",
            models.join(" \u{2192} ")
        )?;
    } else {
        fact(out, "model", &facts.model)?;
    }
    fact(out, "cwd", &facts.cwd)?;
    fact(out, "started", &facts.start_time)?;
    fact(out, "last event", &facts.last_time)?;
    writeln!(
        out,
        "<span>journal <b>{}</b> ({} bytes, {} lines)</span></p>\n</header>",
        text(&audit.path),
        audit.bytes,
        audit.lines
    )?;
    write_audit(out, audit, stats)?;
    writeln!(out, "<section id=\"tokens\">\n<h2>Tokens per turn</h2>")?;
    if !facts.shutdown_tokens.is_empty() {
        write!(out, "<p class=\"facts\">at the last shutdown:")?;
        for m in &facts.shutdown_tokens {
            write!(
                out,
                " <span>{} <b>{}</b> calls, <b>{}</b> input, <b>{}</b> output tokens</span>",
                text(&m.model),
                m.requests.count,
                m.usage.input_tokens,
                m.usage.output_tokens
            )?;
        }
        writeln!(out, "</p>")?;
    }
    write_tokens_chart(out, &stats.turns)?;
    writeln!(out, "</section>")?;
    write_overview(out, stats)?;
    let scale = &stats.durations;
    let length = if scale.capped() {
        format!(
            "bar length: the turn's duration against {} ms (the 95th percentile; longer turns, up to {} ms, fill the bar and end in red)",
            scale.top, scale.max
        )
    } else {
        format!(
            "bar length: the turn's duration against the longest turn ({} ms)",
            scale.max
        )
    };
    writeln!(
        out,
        "<section id=\"legend\">\n<h2>Timeline</h2>\n<p class=\"legend\"><span><i class=\"swatch\" style=\"background:var(--model)\"></i>model time</span>\
         <span><i class=\"swatch\" style=\"background:var(--tool)\"></i>tool time</span>\
         <span>{length}</span>\
         <span>a turn appears when it ends; results are folded (click to open)</span></p>\n</section>"
    )?;
    writeln!(
        out,
        "<main id=\"timeline\" class=\"timeline\" style=\"--lanes:{}\" data-lanes=\"{}\">",
        stats.lanes.len(),
        stats.lanes.len()
    )?;
    for (i, lane) in stats.lanes.iter().enumerate() {
        write!(
            out,
            "<div class=\"lane-head\" style=\"grid-column:{}\" data-lane=\"{}\">{}",
            i + 1,
            text(lane.as_deref().unwrap_or("main")),
            text(stats.lane_name(lane))
        )?;
        // The id too, when the name hides it: it is what `turnstile events` shows.
        match lane.as_deref() {
            Some(id) if stats.lane_name(lane) != id => {
                write!(out, " <span class=\"clipped\">{}</span>", text(id))?
            }
            _ => {}
        }
        writeln!(out, "</div>")?;
    }
    Ok(())
}

fn write_audit(out: &mut impl Write, audit: &AuditReport, stats: &Stats) -> fmt::Result {
    writeln!(
        out,
        "<section id=\"audit\">\n<h2>Audit</h2>\n<table class=\"counts\">"
    )?;
    let row = |out: &mut dyn Write, id: &str, name: &str, value: String, bad: bool| {
        writeln!(
            out,
            "<tr id=\"audit-{id}\"{}><th>{name}</th><td class=\"n\">{}</td></tr>",
            if bad { " class=\"bad\"" } else { "" },
            text(&value)
        )
    };
    let (ok, failed) = audit
        .tool_calls
        .values()
        .fold((0, 0), |(o, f), t| (o + t.ok, f + t.failed));
    // Every LLM call, of every kind (the Copilot CLI's sub-agents' calls have no turns).
    row(
        out,
        "turns",
        "LLM calls",
        audit.llm_calls.to_string(),
        false,
    )?;
    row(out, "events", "events", audit.events.to_string(), false)?;
    row(
        out,
        "user-messages",
        "user messages",
        audit.user_messages.to_string(),
        false,
    )?;
    row(
        out,
        "nudges",
        "autopilot continuations",
        audit.autopilot_continuations.to_string(),
        false,
    )?;
    row(
        out,
        "tool-calls",
        "tool calls",
        format!("{} ({ok} ok, {failed} failed)", ok + failed),
        failed > 0,
    )?;
    for (name, t) in &audit.tool_calls {
        writeln!(
            out,
            "<tr class=\"tool-count\" data-tool=\"{}\"><td>&nbsp;&nbsp;{}</td><td class=\"n\">{} ok, {} failed</td></tr>",
            text(name),
            text(name),
            t.ok,
            t.failed
        )?;
    }
    let task = match &audit.task_complete {
        Some(t) => format!("yes: {}", t.summary.as_deref().unwrap_or("")),
        None => "no".to_owned(),
    };
    row(out, "task-complete", "task complete", task, false)?;
    row(
        out,
        "errors",
        "errors",
        audit.errors.to_string(),
        audit.errors > 0,
    )?;
    row(
        out,
        "aborts",
        "aborts",
        audit.aborts.to_string(),
        audit.aborts > 0,
    )?;
    row(out, "resumes", "resumes", audit.resumes.to_string(), false)?;
    row(
        out,
        "crashes",
        "crashes (resumed without a shutdown)",
        stats.crashes.to_string(),
        stats.crashes > 0,
    )?;
    let open = &audit.open_work;
    let open_text = if open.turns.is_empty()
        && open.tool_calls.is_empty()
        && open.permissions.is_empty()
        && open.external_tools.is_empty()
    {
        "none".to_owned()
    } else {
        format!(
            "{} turns, {} tool calls, {} permissions, {} external tools",
            open.turns.len(),
            open.tool_calls.len(),
            open.permissions.len(),
            open.external_tools.len()
        )
    };
    row(
        out,
        "open-work",
        "open work",
        open_text.clone(),
        open_text != "none",
    )?;
    row(
        out,
        "violations",
        "violations",
        audit.violation_count.to_string(),
        audit.violation_count > 0,
    )?;
    writeln!(out, "</table>")?;
    if audit.violation_count > 0 {
        write!(out, "<p class=\"bad\">by kind:")?;
        for (kind, n) in &audit.violations_by_kind {
            write!(out, " {} {n};", kind.as_str())?;
        }
        writeln!(out, "</p>\n<ol class=\"violations\">")?;
        for v in audit.violations.iter().take(VIOLATIONS_LISTED) {
            writeln!(
                out,
                "<li data-kind=\"{}\">line {}: {}: {}</li>",
                v.kind.as_str(),
                v.line,
                v.kind.as_str(),
                text(&v.message)
            )?;
        }
        writeln!(out, "</ol>")?;
        let listed = audit.violations.len().min(VIOLATIONS_LISTED) as u64;
        if audit.violation_count > listed {
            writeln!(
                out,
                "<p>{} more: <code>turnstile audit --json</code> lists the first 1000.</p>",
                audit.violation_count - listed
            )?;
        }
    }
    writeln!(out, "</section>")
}

/// Writes everything after the timeline's items.
pub fn write_tail(out: &mut impl Write, turns_left_out: u64) -> fmt::Result {
    if turns_left_out > 0 {
        writeln!(
            out,
            "<p class=\"left-out\" id=\"turns-left-out\">{turns_left_out} more turns are not drawn \
             (the chart and the audit count them); <code>turnstile events</code> lists every event.</p>"
        )?;
    }
    writeln!(out, "</main>\n</body>\n</html>")
}
