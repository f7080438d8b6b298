//! Tokens per turn as an inline SVG bar chart: no script, no external file.

use std::fmt::{self, Write};

use crate::stats::TurnStat;

/// Bars drawn at most; longer sessions are grouped, several turns a bar.
pub const MAX_BARS: usize = 400;

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 120.0;

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
    let per_bar = turns.len().div_ceil(MAX_BARS).max(1);
    let bars: Vec<u64> = turns
        .chunks(per_bar)
        .map(|c| c.iter().filter_map(|t| t.output_tokens).sum())
        .collect();
    let max = bars.iter().copied().max().unwrap_or(0).max(1);
    let step = WIDTH / bars.len() as f64;
    let unit = if per_bar == 1 {
        "turn".to_owned()
    } else {
        format!("{per_bar} turns")
    };
    writeln!(
        out,
        "<svg class=\"chart\" id=\"tokens-chart\" viewBox=\"0 0 {WIDTH} {h}\" width=\"100%\" \
         role=\"img\" aria-label=\"output tokens per {unit}\" data-bars=\"{n}\">",
        h = HEIGHT + 20.0,
        n = bars.len()
    )?;
    writeln!(
        out,
        "<text x=\"0\" y=\"12\" class=\"axis\">{max} output tokens (max per {unit}); {recorded} of {} turns record a count</text>",
        turns.len()
    )?;
    for (i, &v) in bars.iter().enumerate() {
        let h = (v as f64 / max as f64) * HEIGHT;
        let first = i * per_bar + 1;
        let last = ((i + 1) * per_bar).min(turns.len());
        let label = if first == last {
            format!("turn {first}")
        } else {
            format!("turns {first}-{last}")
        };
        writeln!(
            out,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\"><title>{label}: {v} tokens</title></rect>",
            x = i as f64 * step,
            y = 20.0 + HEIGHT - h,
            w = (step * 0.8).max(0.5),
        )?;
    }
    writeln!(out, "</svg>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(tokens: Option<u64>) -> TurnStat {
        TurnStat {
            total_ms: 1,
            output_tokens: tokens,
            lane: 0,
        }
    }

    #[test]
    fn no_counts_says_so() {
        let mut out = String::new();
        write_tokens_chart(&mut out, &[turn(None), turn(None)]).unwrap();
        assert!(out.contains("tokens-none") && !out.contains("<svg"));
    }

    #[test]
    fn long_sessions_are_grouped_into_at_most_max_bars() {
        let turns: Vec<_> = (0..2001).map(|i| turn(Some(i))).collect();
        let mut out = String::new();
        write_tokens_chart(&mut out, &turns).unwrap();
        assert_eq!(out.matches("<rect").count(), 334);
        assert!(out.contains("data-bars=\"334\""), "{}", &out[..300]);
        assert!(out.contains("turns 1-6: 15 tokens"));
    }

    #[test]
    fn one_bar_per_turn_when_they_fit() {
        let mut out = String::new();
        write_tokens_chart(&mut out, &[turn(Some(10)), turn(None), turn(Some(5))]).unwrap();
        assert_eq!(out.matches("<rect").count(), 3);
        assert!(out.contains("2 of 3 turns record a count"));
    }
}
