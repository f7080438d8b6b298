//! One timeline item as HTML: a turn with its bar, answer, tool calls (arguments shown, results
//! folded in `<details>`), permissions, hooks and problems; or a mark across all lanes.

use std::fmt::{self, Write};

use crate::escape::text;
use crate::items::{Clipped, Mark, Note, ToolCall, Turn};
use crate::scale::Scale;
use crate::stats::{Anchor, Stats};

/// Writes `turn` in its lane's column.
pub fn write_turn(out: &mut impl Write, turn: &Turn, stats: &Stats) -> fmt::Result {
    let lane = turn.lane.as_deref().unwrap_or("main");
    writeln!(
        out,
        "<section class=\"turn{}\" id=\"turn-{n}\" data-turn=\"{n}\" data-lane=\"{}\" style=\"grid-column:{}\">",
        if turn.ended { "" } else { " open" },
        text(lane),
        stats.column(&turn.lane),
        n = turn.ordinal,
    )?;
    write!(
        out,
        "<div class=\"turn-head\"><span class=\"no\">turn {}</span><span>id {}</span><span>line {}</span>\
         <span>model {} ms</span><span>tools {} ms</span><span>total {} ms</span>",
        turn.ordinal,
        text(&turn.turn_id),
        turn.line,
        turn.model_ms,
        turn.tool_ms,
        turn.total_ms
    )?;
    if let Some(tokens) = turn.output_tokens {
        write!(out, "<span>{tokens} output tokens</span>")?;
    }
    if !turn.ended {
        write!(out, "<span class=\"bad\">never ended</span>")?;
    }
    writeln!(out, "</div>")?;
    write_bar(out, turn, &stats.durations)?;
    if !turn.answer.shown.is_empty() {
        write!(out, "<p class=\"answer\">")?;
        write_clip(out, &turn.answer)?;
        writeln!(out, "</p>")?;
    }
    if !turn.calls.is_empty() {
        writeln!(out, "<ol class=\"calls\">")?;
        for call in &turn.calls {
            write_call(out, call)?;
        }
        writeln!(out, "</ol>")?;
    }
    if turn.calls_left_out > 0 {
        writeln!(
            out,
            "<p class=\"clipped\">{} more tool calls in this turn</p>",
            turn.calls_left_out
        )?;
    }
    write_notes(out, &turn.notes)?;
    writeln!(out, "</section>")
}

/// The bar: its length is the turn's duration on the page's scale (a turn beyond the scale
/// fills the track and ends in a red cap), split into model and tool time.
fn write_bar(out: &mut impl Write, turn: &Turn, scale: &Scale) -> fmt::Result {
    let share = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            (part as f64 / whole as f64 * 100.0).min(100.0)
        }
    };
    let length = scale.share(turn.total_ms);
    let model = share(turn.model_ms, turn.total_ms);
    let tool = share(turn.tool_ms, turn.total_ms).min(100.0 - model);
    writeln!(
        out,
        "<div class=\"track\" title=\"model {} ms, tools {} ms, total {} ms{}\"><div class=\"bar{}\" style=\"width:{:.2}%\">\
         <span class=\"model\" style=\"width:{model:.2}%\"></span><span class=\"tool\" style=\"width:{tool:.2}%\"></span></div></div>",
        turn.model_ms,
        turn.tool_ms,
        turn.total_ms,
        if length.over {
            ", beyond the scale"
        } else {
            ""
        },
        if length.over { " over" } else { "" },
        length.fraction * 100.0,
    )
}

fn write_call(out: &mut impl Write, call: &ToolCall) -> fmt::Result {
    let state = match &call.outcome {
        Some(o) if o.success => "ok",
        Some(_) => "failed",
        None => "open",
    };
    write!(
        out,
        "<li class=\"call {state}\" data-tool=\"{}\" data-call=\"{}\"><div class=\"call-head\"><span class=\"tool-name\">{}</span> <code class=\"args\">",
        text(&call.name),
        text(&call.id),
        text(&call.name)
    )?;
    write_clip(out, &call.arguments)?;
    write!(out, "</code>")?;
    if let Some(ms) = call.duration_ms {
        write!(out, " <span class=\"dur\">{ms} ms</span>")?;
    }
    writeln!(out, "</div>")?;
    write_notes(out, &call.notes)?;
    match &call.outcome {
        Some(o) => {
            let code = o
                .code
                .as_deref()
                .map(|c| format!(", {c}"))
                .unwrap_or_default();
            write!(
                out,
                "<details class=\"result\"><summary>{state}{}: {} bytes</summary><pre>",
                text(&code),
                o.text.shown.len() + o.text.left_out
            )?;
            write_clip(out, &o.text)?;
            writeln!(out, "</pre></details>")?;
        }
        None => writeln!(out, "<p class=\"bad\">no result recorded</p>")?,
    }
    writeln!(out, "</li>")
}

fn write_notes(out: &mut impl Write, notes: &[Note]) -> fmt::Result {
    if notes.is_empty() {
        return Ok(());
    }
    writeln!(out, "<ul class=\"notes\">")?;
    for note in notes {
        write!(
            out,
            "<li class=\"note {kind}{}\" data-kind=\"{kind}\"><span class=\"kind\">{kind}</span>",
            if note.bad { " bad" } else { "" },
            kind = note.kind.as_str()
        )?;
        write_clip(out, &note.text)?;
        writeln!(
            out,
            " <span class=\"clipped\">line {}</span></li>",
            note.line
        )?;
    }
    writeln!(out, "</ul>")
}

/// Writes `mark` across every lane; `anchor` is its id, which the overview links to.
pub fn write_mark(out: &mut impl Write, mark: &Mark, anchor: Anchor, stats: &Stats) -> fmt::Result {
    let kind = mark.kind.as_str();
    write!(
        out,
        "<div class=\"mark mark-{kind}\" id=\"{anchor}\" data-kind=\"{kind}\" data-line=\"{}\"><span class=\"kind\">{}</span>",
        mark.line,
        kind.replace('-', " ")
    )?;
    if mark.lane.is_some() {
        write!(
            out,
            "<span class=\"clipped\">{}</span> ",
            text(stats.lane_name(&mark.lane))
        )?;
    }
    write_clip(out, &mark.text)?;
    writeln!(
        out,
        " <span class=\"clipped\">line {}</span></div>",
        mark.line
    )
}

fn write_clip(out: &mut impl Write, clip: &Clipped) -> fmt::Result {
    write!(out, "{}", text(&clip.shown))?;
    if clip.left_out > 0 {
        write!(
            out,
            "<span class=\"clipped\">… {} more bytes</span>",
            clip.left_out
        )?;
    }
    Ok(())
}
