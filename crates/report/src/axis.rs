//! The turn axis the token chart and the overview strip share: the number of the first turn of
//! a few evenly spaced bars under them, and the axis's name below the numbers.

use std::fmt::{self, Write};

/// Turn numbers on an axis (the first bar, the last and those between).
pub const TURN_LABELS: usize = 6;

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
