//! The turn axis the token chart and the overview strip share: the session's turns grouped
//! into at most [`MAX_BARS`] bars (several turns a bar when there are more), each bar's name,
//! and under the bars the number of the first turn of a few evenly spaced ones with the axis's
//! name below them.

use std::fmt::{self, Write};

use crate::stats::TurnStat;

/// Bars on a turn axis at most; longer sessions are grouped, several turns a bar.
pub const MAX_BARS: usize = 400;

/// Turn numbers on an axis (the first bar, the last and those between).
pub const TURN_LABELS: usize = 6;

/// Room right of a plot, past its last bar, in its SVG's coordinates.
pub const RIGHT_MARGIN: f64 = 24.0;

/// The turns grouped into bars, in order: at most [`MAX_BARS`] groups of `per_bar` turns
/// (the last may have fewer).
pub struct TurnGroups<'a> {
    /// Turns a bar.
    pub per_bar: usize,
    /// Each bar's turns.
    pub groups: Vec<&'a [TurnStat]>,
}

impl<'a> TurnGroups<'a> {
    /// Groups `turns` into at most [`MAX_BARS`] bars.
    pub fn of(turns: &'a [TurnStat]) -> Self {
        let per_bar = turns.len().div_ceil(MAX_BARS).max(1);
        TurnGroups {
            per_bar,
            groups: turns.chunks(per_bar).collect(),
        }
    }

    /// The number of each bar's first turn: what the axis names.
    pub fn firsts(&self) -> Vec<u64> {
        self.groups.iter().map(|g| first_turn(g)).collect()
    }
}

/// The number of a group's first turn.
pub fn first_turn(group: &[TurnStat]) -> u64 {
    group.first().map_or(0, |t| t.ordinal)
}

/// The number of a group's last turn.
pub fn last_turn(group: &[TurnStat]) -> u64 {
    group.last().map_or(0, |t| t.ordinal)
}

/// A bar's name: "turn 3", or "turns 3-8" for a group.
pub fn bar_label(first: u64, last: u64) -> String {
    if first == last {
        format!("turn {first}")
    } else {
        format!("turns {first}-{last}")
    }
}

/// Where a turn axis goes, in its SVG's coordinates.
pub struct TurnAxis<'a> {
    /// The plot's left edge.
    pub left: f64,
    /// The plot's width.
    pub width: f64,
    /// One bar's slot.
    pub step: f64,
    /// The numbers' baseline.
    pub y: f64,
    /// The axis's name.
    pub title: &'a str,
    /// The name's element id, when it has one.
    pub id: Option<&'a str>,
}

/// Writes the axis under bars whose first turns are `firsts`.
pub fn write_turn_axis(out: &mut impl Write, axis: &TurnAxis, firsts: &[u64]) -> fmt::Result {
    let Some(last) = firsts.len().checked_sub(1) else {
        return Ok(());
    };
    let mut previous = None;
    for k in 0..TURN_LABELS {
        let i = last * k / (TURN_LABELS - 1);
        if previous == Some(i) {
            continue;
        }
        previous = Some(i);
        writeln!(
            out,
            "<text class=\"axis tick-x\" x=\"{x:.2}\" y=\"{y:.2}\" text-anchor=\"middle\">{n}</text>",
            x = axis.left + i as f64 * axis.step + axis.step * 0.4,
            y = axis.y,
            n = firsts[i],
        )?;
    }
    let id = axis
        .id
        .map(|id| format!(" id=\"{id}\""))
        .unwrap_or_default();
    writeln!(
        out,
        "<text class=\"axis-title\"{id} x=\"{x:.2}\" y=\"{y:.2}\" text-anchor=\"middle\">{}</text>",
        axis.title,
        x = axis.left + axis.width / 2.0,
        y = axis.y + 16.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(n: u64) -> Vec<TurnStat> {
        (1..=n)
            .map(|ordinal| TurnStat {
                ordinal,
                total_ms: 1,
                output_tokens: None,
                lane: 0,
                drawn: true,
            })
            .collect()
    }

    #[test]
    fn turns_are_grouped_into_at_most_max_bars() {
        let few = turns(3);
        let grouped = TurnGroups::of(&few);
        assert_eq!((grouped.per_bar, grouped.firsts()), (1, vec![1, 2, 3]));
        let many = turns(2001);
        let grouped = TurnGroups::of(&many);
        assert_eq!((grouped.per_bar, grouped.groups.len()), (6, 334));
        let last = grouped.groups[333];
        assert_eq!(
            bar_label(first_turn(last), last_turn(last)),
            "turns 1999-2001"
        );
        assert_eq!(bar_label(4, 4), "turn 4");
        assert!(TurnGroups::of(&[]).groups.is_empty());
    }
}
