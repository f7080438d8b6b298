//! Tokens per turn as an inline SVG bar chart with its axes: no script, no external file.
//!
//! The value axis is labelled at 0, half and the top of the scale, the turn axis with the
//! numbers of the turns under a few evenly spaced bars. The scale is [`Scale`]'s: one turn
//! far above the rest does not flatten every other bar; bars above the scale reach the top and
//! carry a red cap.

use std::fmt::{self, Write};

use crate::axis::{
    RIGHT_MARGIN, TurnAxis, TurnGroups, bar_label, first_turn, last_turn, write_turn_axis,
};
use crate::scale::Scale;
use crate::stats::TurnStat;

/// The plot's box in the SVG's coordinates: room on the left for the value labels, below for
/// the turn labels.
const LEFT: f64 = 56.0;
const TOP: f64 = 22.0;
const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 120.0;
const BOTTOM: f64 = 34.0;

/// Writes the chart, or a sentence saying why there is none.
pub fn write_tokens_chart(out: &mut impl Write, turns: &[TurnStat]) -> fmt::Result {
    let recorded = turns.iter().filter(|t| t.output_tokens.is_some()).count();
    if recorded == 0 {
        return writeln!(
            out,
            "<p class=\"no-chart\" id=\"tokens-none\">This journal records no token count per turn \
             (<code>assistant.message</code> has no <code>outputTokens</code>; per-call usage is \
             ephemeral and never written to disk). The totals above come from \
             <code>session.shutdown</code> when it is there.</p>"
        );
    }
    let grouped = TurnGroups::of(turns);
    let per_bar = grouped.per_bar;
    let bars: Vec<Bar> = grouped
        .groups
        .iter()
        .map(|c| Bar {
            first: first_turn(c),
            last: last_turn(c),
            tokens: c.iter().filter_map(|t| t.output_tokens).sum(),
        })
        .collect();
    let scale = Scale::of(bars.iter().map(|b| b.tokens));
    let step = WIDTH / bars.len() as f64;
    let unit = if per_bar == 1 {
        "turn".to_owned()
    } else {
        format!("{per_bar} turns")
    };
    writeln!(
        out,
        "<svg class=\"chart\" id=\"tokens-chart\" viewBox=\"0 0 {w} {h}\" width=\"100%\" \
         role=\"img\" aria-label=\"output tokens per {unit}\" data-bars=\"{n}\" data-top=\"{top}\">",
        w = LEFT + WIDTH + RIGHT_MARGIN,
        h = TOP + HEIGHT + BOTTOM,
        n = bars.len(),
        top = scale.top,
    )?;
    let over = bars.iter().filter(|b| scale.share(b.tokens).over).count();
    let capped = if over > 0 {
        format!(
            "; scale cut at the 95th percentile, {over} bar{} above it (red cap, largest {})",
            if over == 1 { "" } else { "s" },
            scale.max
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "<text x=\"0\" y=\"12\" class=\"axis-title\" id=\"tokens-y-title\">output tokens per {unit}{capped}; \
         {recorded} of {} turns record a count</text>",
        turns.len()
    )?;
    write_value_axis(out, scale.top)?;
    for (i, bar) in bars.iter().enumerate() {
        let share = scale.share(bar.tokens);
        let h = share.fraction * HEIGHT;
        let x = LEFT + i as f64 * step;
        let w = (step * 0.8).max(0.5);
        writeln!(
            out,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\"><title>{}: {} tokens</title></rect>",
            bar.label(),
            bar.tokens,
            y = TOP + HEIGHT - h,
        )?;
        if share.over {
            writeln!(
                out,
                "<rect class=\"over\" x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"4\"><title>{}: {} tokens, above the scale</title></rect>",
                bar.label(),
                bar.tokens,
                y = TOP - 4.0,
            )?;
        }
    }
    let axis = TurnAxis {
        left: LEFT,
        width: WIDTH,
        step,
        y: TOP + HEIGHT + 14.0,
        title: "turn (numbered as on the cards below)",
        id: Some("tokens-x-title"),
    };
    write_turn_axis(out, &axis, &grouped.firsts())?;
    writeln!(out, "</svg>")
}

/// A bar: the turns it sums, by number.
struct Bar {
    first: u64,
    last: u64,
    tokens: u64,
}

impl Bar {
    fn label(&self) -> String {
        bar_label(self.first, self.last)
    }
}

/// Gridlines and labels at 0, half and the top of the scale.
fn write_value_axis(out: &mut impl Write, top: u64) -> fmt::Result {
    for value in [0, top / 2, top] {
        let y = TOP + HEIGHT - value as f64 / top as f64 * HEIGHT;
        writeln!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y:.2}\" y2=\"{y:.2}\"/>\
             <text class=\"axis tick-y\" x=\"{lx}\" y=\"{ty:.2}\" text-anchor=\"end\">{value}</text>",
            x2 = LEFT + WIDTH,
            lx = LEFT - 4.0,
            ty = y + 4.0,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(tokens: impl IntoIterator<Item = Option<u64>>) -> Vec<TurnStat> {
        tokens
            .into_iter()
            .enumerate()
            .map(|(i, output_tokens)| TurnStat {
                ordinal: i as u64 + 1,
                total_ms: 1,
                output_tokens,
                lane: 0,
                drawn: true,
            })
            .collect()
    }

    #[test]
    fn no_counts_says_so() {
        let mut out = String::new();
        write_tokens_chart(&mut out, &turns([None, None])).unwrap();
        assert!(out.contains("tokens-none") && !out.contains("<svg"));
    }

    #[test]
    fn long_sessions_are_grouped_into_at_most_max_bars() {
        let mut out = String::new();
        write_tokens_chart(&mut out, &turns((0..2001).map(Some))).unwrap();
        assert_eq!(out.matches("<rect x").count(), 334);
        assert!(out.contains("data-bars=\"334\""), "{}", &out[..300]);
        assert!(out.contains("turns 1-6: 15 tokens"));
        // The last bar starts at turn 1999; the axis names it.
        assert!(out.contains("text-anchor=\"middle\">1999</text>"), "{out}");
    }

    #[test]
    fn one_bar_per_turn_when_they_fit_with_both_axes_labelled() {
        let mut out = String::new();
        write_tokens_chart(&mut out, &turns([Some(10), None, Some(5)])).unwrap();
        assert_eq!(out.matches("<rect x").count(), 3);
        assert!(out.contains("2 of 3 turns record a count"));
        let ticks: Vec<&str> = out
            .match_indices("class=\"axis tick-x\"")
            .map(|(i, _)| {
                let s = &out[i..];
                &s[s.find('>').unwrap() + 1..s.find("</text>").unwrap()]
            })
            .collect();
        assert_eq!(ticks, ["1", "2", "3"]);
        for label in [">0</text>", ">5</text>", ">10</text>"] {
            assert!(out.contains(label), "value axis lacks {label}");
        }
        assert!(out.contains("id=\"tokens-x-title\"") && out.contains("output tokens per turn"));
    }

    #[test]
    fn one_huge_turn_gets_a_cap_and_the_others_stay_visible() {
        let mut tokens = vec![Some(100); 40];
        tokens[7] = Some(24_000);
        let mut out = String::new();
        write_tokens_chart(&mut out, &turns(tokens)).unwrap();
        assert!(out.contains("data-top=\"100\""));
        assert_eq!(out.matches("class=\"over\"").count(), 1);
        assert!(out.contains("turn 8: 24000 tokens, above the scale"));
        // A 100-token bar is drawn full height, not 1/240 of it.
        assert!(out.contains("height=\"120.00\"><title>turn 1: 100 tokens"));
        assert!(out.contains("1 bar above it"));
    }
}
