//! The overview: the whole session as one strip above the timeline, so a session of thousands
//! of turns can be seen at once and entered anywhere. Each bar is a group of turns (its
//! height the longest of them, on the duration [`Scale`]) and links to the group's first turn;
//! under the bars, one row of markers each for errors, compactions, model switches, resumes and
//! prompts, each a link to its mark or turn; under the strip, the first markers of each row as
//! a list of links. Markers that fall on the same bar merge into one (their count in its
//! title), so the strip's size is bounded by its bars, not by the journal.

use std::fmt::{self, Write};

use crate::axis::{RIGHT_MARGIN, TurnAxis, TurnGroups, bar_label, write_turn_axis};
use crate::escape::text;
use crate::scale::Scale;
use crate::stats::{Anchor, JUMPS_PER_ROW, Marker, Row, Stats, TurnStat};

/// The strip's geometry: room on the left for the rows' names.
const LEFT: f64 = 150.0;
const WIDTH: f64 = 860.0;
const TOP: f64 = 20.0;
const BARS: f64 = 56.0;
const ROW: f64 = 14.0;

/// Writes the overview section.
pub fn write_overview(out: &mut impl Write, stats: &Stats) -> fmt::Result {
    writeln!(out, "<section id=\"overview\">\n<h2>Overview</h2>")?;
    let turns = &stats.turns;
    if turns.is_empty() && stats.markers.is_empty() {
        return writeln!(
            out,
            "<p class=\"no-chart\">No turn recorded.</p>\n</section>"
        );
    }
    let grouped = TurnGroups::of(turns);
    let (per_bar, groups) = (grouped.per_bar, &grouped.groups);
    // A session of marks and no turn still gets a strip one unit wide.
    let slots = groups.len().max(1);
    let step = WIDTH / slots as f64;
    let scale = Scale::of(groups.iter().map(|g| longest(g)));
    let height = TOP + BARS + 6.0 + ROW * Row::ALL.len() as f64 + 30.0;
    writeln!(
        out,
        "<p class=\"facts\">{} {}, {}; a bar's height is the longest turn of its group. \
         Click a bar or a marker to jump to it.</p>",
        turns.len(),
        plural(turns.len() as u64, "turn", "turns"),
        if per_bar == 1 {
            "one bar a turn".to_owned()
        } else {
            format!("{per_bar} turns a bar")
        },
    )?;
    writeln!(
        out,
        "<svg class=\"overview\" id=\"overview-strip\" viewBox=\"0 0 {w} {height}\" width=\"100%\" \
         role=\"img\" aria-label=\"the whole session: turn durations and markers\" data-bars=\"{}\">",
        groups.len(),
        w = LEFT + WIDTH + RIGHT_MARGIN,
    )?;
    let capped = if scale.capped() {
        format!(
            " (scale cut at the 95th percentile; longer ones reach the top with a red cap, the longest {} ms)",
            scale.max
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "<text class=\"axis-title\" x=\"0\" y=\"12\">turn duration, 0 to {} ms{capped}</text>",
        scale.top
    )?;
    writeln!(
        out,
        "<text class=\"axis\" x=\"{x}\" y=\"{y:.2}\" text-anchor=\"end\">duration</text>",
        x = LEFT - 6.0,
        y = TOP + BARS / 2.0 + 4.0,
    )?;
    for (i, group) in groups.iter().enumerate() {
        write_bar(out, group, i as f64 * step + LEFT, step, &scale)?;
    }
    for (r, row) in Row::ALL.iter().enumerate() {
        let y = TOP + BARS + 6.0 + r as f64 * ROW;
        writeln!(
            out,
            "<text class=\"axis row-name\" x=\"{x}\" y=\"{ty:.2}\" text-anchor=\"end\">{} ({})</text>\
             <line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{ly:.2}\" y2=\"{ly:.2}\"/>",
            row.title(),
            stats.row_counts[*row as usize],
            x = LEFT - 6.0,
            ty = y + 10.0,
            x2 = LEFT + WIDTH,
            ly = y + 6.0,
        )?;
        write_row(out, stats, *row, per_bar, slots, step, y)?;
    }
    let axis = TurnAxis {
        left: LEFT,
        width: WIDTH,
        step,
        y: height - 22.0,
        title: "turn (in the order turns end)",
        id: None,
    };
    write_turn_axis(out, &axis, &grouped.firsts())?;
    writeln!(out, "</svg>")?;
    write_jumps(out, stats)?;
    writeln!(out, "</section>")
}

fn longest(group: &[TurnStat]) -> u64 {
    group.iter().map(|t| t.total_ms).max().unwrap_or(0)
}

/// One group's bar, a link to its first drawn turn.
fn write_bar(
    out: &mut impl Write,
    group: &[TurnStat],
    x: f64,
    step: f64,
    scale: &Scale,
) -> fmt::Result {
    let (Some(first), Some(last)) = (group.first(), group.last()) else {
        return Ok(());
    };
    let ms = longest(group);
    let share = scale.share(ms);
    let h = (share.fraction * BARS).max(1.0);
    let label = bar_label(first.ordinal, last.ordinal);
    let target = group.iter().find(|t| t.drawn).map(|t| t.ordinal);
    if let Some(n) = target {
        write!(out, "<a href=\"#{}\">", Anchor::Turn(n))?;
    }
    write!(
        out,
        "<rect class=\"group\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\"><title>{label}: longest {ms} ms{}</title></rect>",
        if share.over { ", above the scale" } else { "" },
        y = TOP + BARS - h,
        w = (step * 0.85).max(0.6),
    )?;
    if share.over {
        write!(
            out,
            "<rect class=\"over\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"3\"/>",
            y = TOP - 3.0,
            w = (step * 0.85).max(0.6),
        )?;
    }
    if target.is_some() {
        write!(out, "</a>")?;
    }
    writeln!(out)
}

/// The row's markers, merged by bar: the first of each bar gives the link.
fn write_row(
    out: &mut impl Write,
    stats: &Stats,
    row: Row,
    per_bar: usize,
    slots: usize,
    step: f64,
    y: f64,
) -> fmt::Result {
    let mut markers = stats.markers.iter().filter(|m| m.row == row).peekable();
    while let Some(first) = markers.next() {
        let slot = (first.at / per_bar).min(slots - 1);
        let mut count = 1u64;
        while markers
            .peek()
            .is_some_and(|m| (m.at / per_bar).min(slots - 1) == slot)
        {
            markers.next();
            count += 1;
        }
        let x = LEFT + slot as f64 * step + step * 0.5 - 2.0;
        if let Some(anchor) = first.anchor {
            write!(out, "<a href=\"#{anchor}\">")?;
        }
        let more = if count > 1 {
            format!(" (and {} more here)", count - 1)
        } else {
            String::new()
        };
        write!(
            out,
            "<rect class=\"mk mk-{}\" data-row=\"{}\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"4\" height=\"12\"><title>{}{more}</title></rect>",
            row.as_str(),
            row.as_str(),
            text(&describe(first)),
        )?;
        if first.anchor.is_some() {
            write!(out, "</a>")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// "turn 12, line 345: what happened".
fn describe(m: &Marker) -> String {
    let place = match m.anchor {
        Some(Anchor::Turn(n)) => format!("turn {n}, line {}", m.line),
        _ => format!("line {}", m.line),
    };
    if m.text.is_empty() {
        place
    } else {
        format!("{place}: {}", m.text)
    }
}

/// The first markers of each row as links, with how many more the strip holds.
fn write_jumps(out: &mut impl Write, stats: &Stats) -> fmt::Result {
    writeln!(out, "<nav id=\"jumps\" class=\"jumps\">")?;
    for row in Row::ALL {
        let count = stats.row_counts[row as usize];
        if count == 0 {
            continue;
        }
        write!(
            out,
            "<p data-row=\"{}\"><b>{}</b> {count}:",
            row.as_str(),
            row.title()
        )?;
        let listed: Vec<&Marker> = stats
            .markers
            .iter()
            .filter(|m| m.row == row)
            .take(JUMPS_PER_ROW)
            .collect();
        for (i, m) in listed.iter().enumerate() {
            let sep = if i == 0 { " " } else { "; " };
            match m.anchor {
                Some(anchor) => {
                    write!(out, "{sep}<a href=\"#{anchor}\">{}</a>", text(&describe(m)))?
                }
                None => write!(
                    out,
                    "{sep}<span class=\"clipped\">{} (not drawn)</span>",
                    text(&describe(m))
                )?,
            }
        }
        let more = count - listed.len() as u64;
        if more > 0 {
            write!(
                out,
                "; <span class=\"clipped\">{more} more on the strip above</span>"
            )?;
        }
        writeln!(out, "</p>")?;
    }
    writeln!(out, "</nav>")
}

/// `n` and the word that goes with it.
pub fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}
